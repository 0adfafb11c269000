package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/troupe-ml/troupe/internal/cmdutil"
	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/report"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// run is one placer on one scenario, on a fresh API server.
type run struct {
	opts     *Options
	scenario scenario.Scenario
	placer   placer.Placer
	// dir holds the run's logs, kubeconfig and profiles.
	dir string
	log io.Writer
}

// do runs it: a fresh control plane, the nodes and gangs in the placer's
// dialect, then the clock starts with the placer, until every gang has
// been bound whole, no pod was bound for --settle, or --run-timeout.
func (r *run) do(ctx context.Context) (res report.Result) {
	res = report.Result{Scenario: r.scenario, Placer: r.placer.Name()}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		res.Err = err
		return res
	}
	cpStart := time.Now()
	c, err := startCluster(r.opts.ControlPlaneDir, cmdutil.SplitList(r.opts.CRDs), r.dir)
	if err != nil {
		res.Err = err
		return res
	}
	defer func() {
		if err := c.stop(); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("stop the control plane: %w", err)
		}
	}()
	setupStart := time.Now()
	sizes, err := r.setup(ctx, c)
	if err != nil {
		res.Err = fmt.Errorf("setup: %w", err)
		return res
	}
	arriving := ""
	if r.scenario.Streamed() {
		arriving = " (arriving during the run)"
	}
	r.logf("  control plane up in %v, setup in %v: %d nodes, %d gangs, %d pods%s", setupStart.Sub(cpStart).Round(100*time.Millisecond),
		time.Since(setupStart).Round(100*time.Millisecond), r.scenario.Nodes(), r.scenario.Gangs, r.scenario.Pods(), arriving)
	r.measure(ctx, c, sizes, &res)
	return res
}

// setup creates the nodes, what the placer needs and the gangs, all at
// once: none of them depends on another before the placer starts. A
// stream's gangs are created during the run (stream).
func (r *run) setup(ctx context.Context, c *cluster) (map[string]int, error) {
	var sizes map[string]int
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			if err := createNodes(ctx, c, r.scenario); err != nil {
				return err
			}
			return createBackground(ctx, c, r.scenario)
		},
		func(ctx context.Context) error {
			if err := r.placer.Prepare(ctx, c.cfg); err != nil {
				return fmt.Errorf("prepare %s: %w", r.placer.Name(), err)
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			if err := createNamespace(ctx, c); err != nil {
				return err
			}
			if err := createTopology(ctx, c, r.scenario); err != nil {
				return err
			}
			if r.scenario.Streamed() {
				sizes = r.scenario.GangSizes()
				return nil
			}
			sizes, err = createGangs(ctx, c, r.scenario, r.placer.Dialect(), 0)
			return err
		},
	}
	if err := inParallel(ctx, steps, func(ctx context.Context, step func(context.Context) error) error { return step(ctx) }); err != nil {
		return nil, err
	}
	// HyperNodes once their CRD is installed (Prepare).
	if err := createHyperNodes(ctx, c, r.scenario, r.placer); err != nil {
		return nil, err
	}
	// The API server holds every create of a custom resource for 2 s
	// while its CRD is less than 2 s established (apiextensions-apiserver's
	// customresource_handler.go). A placer that creates one at start (a
	// default queue) must not pay for that in the measured window.
	if wait := crdSettle - time.Since(c.up); wait > 0 {
		time.Sleep(wait)
	}
	return sizes, nil
}

// crdSettle is how long after the CRDs are established the API server
// creates custom resources without delay.
const crdSettle = 2*time.Second + 200*time.Millisecond

// measure starts the clock and the placer and fills res.
func (r *run) measure(ctx context.Context, c *cluster, sizes map[string]int, res *report.Result) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(c.clientset, 0, informers.WithNamespace(namespace))
	// The watch's times are the binds' times only while it runs: after an
	// interruption, the binds made meanwhile are seen late. Counted, so
	// that the report says which runs' times are late.
	var watchErrors atomic.Int32
	pods := factory.InformerFor(&corev1.Pod{}, func(cs kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return podInformer(cs, resync, func() { watchErrors.Add(1) })
	})
	if err := indexPodsByGang(pods); err != nil {
		res.Err = err
		return
	}
	del := newDeleter(ctx, c, r.scenario.Hold, pods.GetIndexer(), r.placer.Dialect().PodGroupType)
	var onGangUp func(string)
	if r.scenario.Hold > 0 {
		onGangUp = del.schedule
	}
	tracker := measure.NewTracker(sizes, onGangUp)
	if _, err := pods.AddEventHandler(tracker); err != nil {
		res.Err = err
		return
	}
	var st *stream
	if r.scenario.Streamed() {
		var err error
		if st, err = newStream(ctx, c, r.scenario); err != nil {
			res.Err = err
			return
		}
		if _, err := pods.AddEventHandler(st.binds); err != nil {
			res.Err = err
			return
		}
	}
	// A list or watch call that fails is an interruption too.
	if err := pods.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *toolscache.Reflector, err error) {
		watchErrors.Add(1)
		toolscache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		res.Err = err
		return
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // Shutdown waits for the informers, which stop with ctx
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			res.Err = fmt.Errorf("the harness's %v informer did not sync", typ)
			return
		}
	}
	before, err := c.metrics(ctx)
	if err != nil {
		res.Err = err
		return
	}
	apiCPU0, etcdCPU0 := measure.CPUOf(c.apiserver...), measure.CPUOf(c.etcd...)

	tracker.Start()
	proc, err := r.placer.Start(ctx, placer.Env{
		Kubeconfig: c.kubeconfig, Client: r.opts.Client,
		LogFile:  filepath.Join(r.dir, r.placer.Name()+".log"),
		Topology: r.scenario.Topology != nil,
	})
	if err != nil {
		res.Err = err
		return
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = proc.Stop()
		}
	}()
	var prof *profiler
	if p, ok := proc.(placer.Profiled); ok && r.opts.Profile && p.PprofURL() != "" {
		prof = startProfiler(ctx, p.PprofURL(), filepath.Join(r.dir, "profiles"))
	}
	if st != nil {
		if err := st.start(ctx, c, r.placer.Dialect(), tracker, pods.GetStore()); err != nil {
			res.Err = err
			return
		}
	}
	samples, endErr := r.wait(ctx, tracker, proc, len(sizes), st)
	if st != nil {
		end := tracker.Elapsed()
		endErr = errors.Join(endErr, st.stop())
		res.Stream = st.result(tracker.DoneAt(), end)
	}
	res.WatchErrors = int(watchErrors.Load())
	del.close()
	waitCycles(ctx, proc, r.opts.Trailing)
	after, quiet, err := c.writesQuiet(ctx, quietWrites, r.opts.Trailing)
	if err != nil {
		res.Err = err
		return
	}
	res.Quiet = quiet
	// The whole process, every thread (GC, informers, binds), from its
	// start to the end of its trailing writes.
	res.PlacerCPU = measure.CPUOf(proc.Pid())
	if res.PeakRSS, err = measure.PeakRSS(proc.Pid()); err != nil {
		endErr = errors.Join(endErr, fmt.Errorf("%s's peak memory: %w", r.placer.Name(), err))
	}
	samples.final(ctx, proc)
	stored, err := storedBinds(ctx, c.auditLog, tracker, sizes)
	if err != nil {
		res.Err = err
		return
	}
	res.Throughput, res.PartialDuring = stored.Throughput(), stored.PartialLongerThan(r.opts.PartialGrace)
	res.Watched = report.Watched{Makespan: tracker.Throughput().Makespan, PartialDuring: len(tracker.PartialLongerThan(r.opts.PartialGrace))}
	res.Cycles, res.Counters = samples.cycles, samples.counters
	res.CachesSynced = cachesSynced(tracker.StartedAt(), samples.counters)
	res.AnsweredApart = answeredApart(samples.last, r.opts.PartialGrace)
	res.ActiveCPU = samples.cpu.Between(res.Throughput.FirstBind, res.Throughput.LastBind)
	if prof != nil {
		res.Profile = prof.stop(ctx)
	}
	res.APIServerCPU = measure.CPUOf(c.apiserver...) - apiCPU0
	res.EtcdCPU = measure.CPUOf(c.etcd...) - etcdCPU0
	res.Writes = measure.WritesFrom(after).Minus(measure.WritesFrom(before)).Minus(del.writes()).Minus(st.writes())

	// The final state first: the warm round replaces the gangs.
	if err := r.finalState(ctx, c, tracker, sizes, res); err != nil {
		res.Err = err
		return
	}
	if st != nil {
		// Every gang bound during the run, those deleted since too.
		res.Quality.Racks = measure.RacksOf(st.nodes, st.binds.Pods(), scenario.RackLabel)
	}
	var warmErr error
	if metered, ok := proc.(placer.Metered); ok && r.scenario.WarmRound && endErr == nil {
		res.Warm, warmErr = r.warmRound(ctx, c, proc, metered.MetricsURL(), pods.GetIndexer(), sizes)
	}
	stopped = true
	res.Err = errors.Join(endErr, warmErr, proc.Stop())
}

// storedBinds replays the run's binds, up to now, from the API server's
// audit log at auditLog: when the API server completed each, after
// storing it. The harness's watch sees each later, by seconds when the
// API server closes the watch during a burst of binds (WatchErrors); it
// is the run's clock and pace (when it ends, when a gang is deleted), the
// audit log its times. Every bind the watch has seen was completed, but
// the log is written in batches, a moment after: the replay is repeated
// for up to auditCatchUp until the log has as many binds as the watch
// saw. One with fewer after that has lost events and cannot time the
// run.
func storedBinds(ctx context.Context, auditLog string, tracker *measure.Tracker, sizes map[string]int) (*measure.Tracker, error) {
	watched := tracker.Progress().Bound
	deadline := time.Now().Add(auditCatchUp)
	for {
		stored, err := measure.ReplayAudit(auditLog, tracker.StartedAt(), time.Now(), tracker.GangsOfPods(), sizes)
		if err != nil {
			return nil, fmt.Errorf("read the binds from the audit log: %w", err)
		}
		n := stored.Progress().Bound
		if n >= watched {
			return stored, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the audit log has %d binds of the run where the harness's watch saw %d, %v after: it lost events, and cannot time the run", n, watched, auditCatchUp)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(auditCatchUp / 50):
		}
	}
}

// auditCatchUp bounds how long the API server's batched audit log may
// trail the binds the harness's watch has seen.
var auditCatchUp = 5 * time.Second

// warmRound deletes the run's gangs, waits until the placer has seen them
// go, creates as many new ones and reads the placer's counters over their
// placing (scenario.Scenario.WarmRound); pods is the harness's pod
// informer's indexer.
func (r *run) warmRound(ctx context.Context, c *cluster, proc placer.Process, metrics string, pods toolscache.Indexer, old map[string]int) (*report.WarmRound, error) {
	d := newDeleter(ctx, c, 0, pods, r.placer.Dialect().PodGroupType)
	if err := inParallel(ctx, slices.Collect(maps.Keys(old)), func(_ context.Context, gang string) error {
		d.delete(gang)
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := waitPods(ctx, c, r.opts.RunTimeout, func(pods, _ int) bool { return pods == 0 }); err != nil {
		return nil, fmt.Errorf("warm round: the first round's pods: %w", err)
	}
	waitCycles(ctx, proc, r.opts.Trailing)
	before, err := scrape(ctx, metrics)
	if err != nil {
		return nil, fmt.Errorf("warm round: %w", err)
	}
	start := time.Now()
	sizes, err := createGangs(ctx, c, r.scenario, r.placer.Dialect(), r.scenario.Gangs)
	if err != nil {
		return nil, fmt.Errorf("warm round: %w", err)
	}
	want := 0
	for _, n := range sizes {
		want += n
	}
	bound, err := waitPods(ctx, c, r.opts.RunTimeout, func(_, bound int) bool { return bound == want })
	if err != nil {
		return nil, fmt.Errorf("warm round: %d of %d pods bound: %w", bound, want, err)
	}
	w := &report.WarmRound{Pods: bound, Makespan: time.Since(start)}
	waitCycles(ctx, proc, r.opts.Trailing)
	after, err := scrape(ctx, metrics)
	if err != nil {
		return nil, fmt.Errorf("warm round: %w", err)
	}
	w.Counters = troupeCounters(after)
	for k, v := range troupeCounters(before) {
		w.Counters[k] -= v
	}
	r.logf("  warm round: %d pods bound in %v; decision time %v per pod, CPU %v per pod", w.Pods, w.Makespan.Round(time.Millisecond), w.DecisionPerPod(), w.DecisionCPUPerPod())
	return w, nil
}

// waitPods lists the run's pods every podPoll until done says, of how
// many there are and how many are bound, that the wait is over, for at
// most timeout. It returns the last count of bound pods.
func waitPods(ctx context.Context, c *cluster, timeout time.Duration, done func(pods, bound int) bool) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := c.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		bound := 0
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName != "" {
				bound++
			}
		}
		switch {
		case done(len(pods.Items), bound):
			return bound, nil
		case time.Now().After(deadline):
			return bound, fmt.Errorf("not done after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return bound, ctx.Err()
		case <-time.After(podPoll):
		}
	}
}

// podPoll is how often waitPods lists the pods.
const podPoll = 50 * time.Millisecond

// sampled is what the samples gathered.
type sampled struct {
	cycles   []report.CycleSample
	counters map[string]float64
	cpu      measure.CPUSeries
	// last is the placer's last metrics scrape.
	last []measure.Sample
}

// scrape reads the placer's metrics, if it has them, and adds a cycle
// sample for the time since the last scrape.
func (s *sampled) scrape(ctx context.Context, proc placer.Process, at time.Duration, backlog int) {
	metered, ok := proc.(placer.Metered)
	if !ok {
		return
	}
	cur, err := scrape(ctx, metered.MetricsURL())
	if err != nil {
		return
	}
	s.cycles = append(s.cycles, cycleSample(at, backlog, s.last, cur))
	s.counters = troupeCounters(cur)
	s.last = cur
}

// waitCycles waits, for a placer that counts its cycles (Troupe), until
// two more have ended, at most max: the cycle under way, whose status
// writes follow its binds, and one after it.
func waitCycles(ctx context.Context, proc placer.Process, max time.Duration) {
	metered, ok := proc.(placer.Metered)
	if !ok {
		return
	}
	cycles := func() float64 {
		cur, err := scrape(ctx, metered.MetricsURL())
		if err != nil {
			return -1
		}
		return measure.Sum(cur, troupeCycles, nil)
	}
	from := cycles()
	deadline := time.Now().Add(max)
	for from >= 0 && cycles() < from+2 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(counterPoll)
	}
}

// counterPoll is how often waitCycles reads the placer's counters.
const counterPoll = 200 * time.Millisecond

// quietWrites is how long the API server must take no write for a run's
// count of writes to be closed (at most --trailing after the run).
const quietWrites = time.Second

// cpuTick is how often the placer's CPU time is read; every tenth tick is
// a one-second sample.
const cpuTick = 100 * time.Millisecond

// final reads the placer's counters at the end, without a cycle sample.
func (s *sampled) final(ctx context.Context, proc placer.Process) {
	if metered, ok := proc.(placer.Metered); ok {
		if cur, err := scrape(ctx, metered.MetricsURL()); err == nil {
			s.counters = troupeCounters(cur)
			s.last = cur
		}
	}
}

// wait samples until the run ends, and says why it ended badly, if it
// did: the placer exited, or a stream's gang could not be created.
// Stopping at --settle or --run-timeout is no error: the gangs left
// unbound are the result.
func (r *run) wait(ctx context.Context, tracker *measure.Tracker, proc placer.Process, gangs int, st *stream) (sampled, error) {
	var s sampled
	start := time.Now()
	tick := time.NewTicker(cpuTick)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-tick.C:
		}
		s.cpu = append(s.cpu, measure.CPUPoint{At: time.Since(start), CPU: measure.CPUOf(proc.Pid())})
		p := tracker.Progress()
		if p.GangsDone == gangs {
			s.scrape(ctx, proc, time.Since(start), p.Unbound)
			return s, nil
		}
		if n%10 != 0 {
			continue
		}
		s.scrape(ctx, proc, time.Since(start), p.Unbound)
		if exited, ok := proc.(interface{ Exited() (bool, error) }); ok {
			if done, err := exited.Exited(); done {
				return s, fmt.Errorf("%s exited during the run: %v (see its log in %s)", r.placer.Name(), err, r.dir)
			}
		}
		allArrived := true
		if st != nil {
			if err := st.arrivals.failed(); err != nil {
				return s, err
			}
			allArrived = st.arrivals.complete()
		}
		settle, mayEnd := settleAfter(r.scenario, r.opts.Settle, allArrived)
		switch {
		case mayEnd && settled(p, settle):
			r.logf("  no pod bound for %v: stopping with %d of %d gangs bound whole", settle, p.GangsDone, gangs)
			return s, nil
		case time.Since(start) > r.opts.RunTimeout:
			// The gangs left are the result (unbound); for the null
			// binder or Troupe where every gang fits, a failed run.
			r.logf("  --run-timeout %v: stopping with %d of %d gangs bound whole", r.opts.RunTimeout, p.GangsDone, gangs)
			return s, nil
		}
	}
}

// finalState reads the cluster at the end: gangs left partial, gangs
// never bound, and the placement's quality.
func (r *run) finalState(ctx context.Context, c *cluster, tracker *measure.Tracker, sizes map[string]int, res *report.Result) error {
	pods, err := c.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := c.clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	podPtrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podPtrs[i] = &pods.Items[i]
	}
	nodePtrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		nodePtrs[i] = &nodes.Items[i]
	}
	res.Partial = measure.PartialGangs(podPtrs, sizes)
	// A bind the watch had not delivered when the clock stopped still
	// counts: the list is the truth.
	whole := measure.BoundWhole(podPtrs, sizes)
	for _, g := range tracker.GangsNeverUp() {
		if !whole[g] {
			res.NeverUp = append(res.NeverUp, g)
		}
	}
	res.Quality = measure.Assess(nodePtrs, podPtrs)
	if r.scenario.Racked() {
		res.Quality.Racks = measure.RacksOf(nodePtrs, podPtrs, scenario.RackLabel)
		background, err := c.clientset.CoreV1().Pods(scenario.BackgroundNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		all := slices.Clone(podPtrs)
		for i := range background.Items {
			all = append(all, &background.Items[i])
		}
		res.Quality.Stranding = measure.StrandingOf(nodePtrs, all, podPtrs, whole, scenario.RackLabel)
	}
	return nil
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.log, format+"\n", args...)
}

// settleAfter is how long a run must go without a bind to be over, and
// whether it may be over yet: --settle; for a stream, not before every
// gang has arrived, and --settle after the last bound gang has ended (its
// hold), since a gang's end makes room for those that wait.
func settleAfter(s scenario.Scenario, settle time.Duration, allArrived bool) (time.Duration, bool) {
	if !s.Streamed() {
		return settle, true
	}
	return settle + s.Hold, allArrived
}

// settled says a run is over for want of binds: no pod was bound for
// settle since the last one. Before the first bind only --run-timeout
// ends a run: a peer's first decision over a large backlog can take
// longer than settle (Volcano's and kube-scheduler's took over 15 s at
// 5000 nodes), and stopping it then would report gangs it was about to
// bind as never bound.
func settled(p measure.Progress, settle time.Duration) bool {
	return p.Bound > 0 && p.SinceLastBind > settle
}

// podInformer is the harness's informer of the scenario's pods, as
// client-go's own, but for its watches: each is wrapped so that one that
// breaks before the informer stops it calls interrupted
// (measure.CountInterruptions).
func podInformer(cs kubernetes.Interface, resync time.Duration, interrupted func()) toolscache.SharedIndexInformer {
	pods := cs.CoreV1().Pods(namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := pods.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return measure.CountInterruptions(w, interrupted), nil
		},
	}
	return toolscache.NewSharedIndexInformerWithOptions(toolscache.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.Pod{},
		toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}})
}
