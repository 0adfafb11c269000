package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/internal/localcluster"
	"github.com/troupe-ml/troupe/internal/operator"
)

// Main parses the flags and runs the demo until Ctrl-C (SIGINT or
// SIGTERM), or with --until-running until the examples run. It returns the
// exit code: 0 on success or a clean stop, 1 on failure, 2 for bad flags.
// A second Ctrl-C while stopping kills the cluster's processes at once.
func Main(args []string, stdout, stderr io.Writer) int {
	opts, err := ParseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
			return 2
		}
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A closed stdout (`make demo | tee log`, then Ctrl-C, which ends tee
	// too) must not kill the demo before it has stopped the cluster:
	// writes fail instead.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		cancel()
		if _, ok := <-sigs; ok {
			fmt.Fprintln(stderr, "demo: interrupted again: killing the cluster's processes")
			killLeftovers(opts.StateDir)
			os.Exit(130)
		}
	}()
	return Run(ctx, opts, stdout, stderr)
}

// Run runs the demo with parsed options until ctx ends (interactive) or
// the examples run (--until-running), then stops everything it started.
func Run(ctx context.Context, opts *Options, stdout, stderr io.Writer) int {
	d := &demo{opts: opts, out: stdout, start: time.Now(), tty: isTerminal(stdout)}
	if err := opts.resolve(stderr); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	// The clock (and --timeout) starts once the binaries are built.
	d.start = time.Now()
	runErr := d.run(ctx)
	if !d.prepared {
		// The state folder is another demo's, or could not be made.
		fmt.Fprintf(stderr, "demo: %v\n", runErr)
		return 1
	}
	interrupted := ctx.Err() != nil
	if interrupted && d.tty {
		fmt.Fprintln(stdout)
	}
	d.step("stopping: " + d.started())
	stopErr := d.stop()
	// Ctrl-C is how an interactive demo ends; the smoke test must finish.
	finished := runErr == nil || (interrupted && !opts.UntilRunning)
	switch {
	case !finished:
		if stopErr != nil {
			fmt.Fprintf(stderr, "demo: stopping: %v\n", stopErr)
		}
		fmt.Fprintf(stderr, "demo: FAILED: %v\n(logs: %s)\n", runErr, filepath.Join(opts.StateDir, logsDir))
		return 1
	case stopErr != nil:
		fmt.Fprintf(stderr, "demo: stopping: %v\n", stopErr)
		return 1
	}
	d.step(fmt.Sprintf("stopped; nothing left running. Logs: %s", filepath.Join(opts.StateDir, logsDir)))
	return 0
}

// demo is one run: what it started, so that stop can end it.
type demo struct {
	opts  *Options
	out   io.Writer
	start time.Time
	tty   bool

	logFile    *os.File
	outFiles   []*os.File
	env        *envtest.Environment
	cfg        *rest.Config
	client     client.Client
	kubeconfig string
	procs      []*localcluster.Proc
	kcm        *localcluster.Proc
	managers   []*manager
	notes      []string
	watched    []string
	// story is what the demo did and saw once the table came up, for a
	// terminal's table (elsewhere it goes out as steps).
	story []string
	// show is the gang restart (--show-gang-restart).
	show *gangShow
	// prepared: the state folder is this run's to stop and clean.
	prepared bool
}

// manager is the operator or the scheduler running in-process.
type manager struct {
	name   string
	cancel context.CancelFunc
	done   chan error
}

// step prints one line of progress with the time since the start.
func (d *demo) step(msg string) {
	fmt.Fprintf(d.out, "[%5.1fs] %s\n", time.Since(d.start).Seconds(), msg)
}

func (d *demo) note(msg string) {
	d.notes = append(d.notes, msg)
	d.step("note: " + msg)
}

// tell says what happens while the table is shown: under a terminal's
// table, which is redrawn in place, or else as a step.
func (d *demo) tell(msg string) {
	if d.tty && !d.opts.UntilRunning {
		d.story = append(d.story, fmt.Sprintf("[%5.1fs] %s", time.Since(d.start).Seconds(), msg))
		return
	}
	d.step(msg)
}

func (d *demo) run(ctx context.Context) error {
	o := d.opts
	if err := prepareStateDir(o.StateDir, d.step); err != nil {
		return err
	}
	d.prepared = true
	if err := d.setupLogging(); err != nil {
		return err
	}
	d.step(fmt.Sprintf("state in %s (logs in %s/)", o.StateDir, filepath.Join(o.StateDir, logsDir)))
	examples, err := loadManifests(o.Examples)
	if err != nil {
		return err
	}
	if o.ShowGangRestart {
		if d.show, err = newGangShow(o.gangExample, examples); err != nil {
			return err
		}
	}

	d.step("starting etcd and kube-apiserver (" + o.ControlPlaneDir + "), installing the CRDs of " + relPath(o.CRDDir))
	env, files, err := localcluster.NewControlPlane(o.ControlPlaneDir, []string{o.CRDDir}, o.StateDir, filepath.Join(o.StateDir, logsDir))
	d.outFiles = files
	if err != nil {
		return err
	}
	// Set before Start: when the CRDs fail to install, envtest leaves etcd
	// and kube-apiserver running, and stop ends them.
	d.env = env
	if d.cfg, err = env.Start(); err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	d.kubeconfig = filepath.Join(o.StateDir, kubeconfigFile)
	if err := localcluster.WriteKubeconfig(d.cfg, d.kubeconfig, "troupe-demo"); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(scheme))
	if d.client, err = client.New(d.cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	d.step("API server ready at " + d.cfg.Host)
	if err := ctx.Err(); err != nil {
		return err
	}

	if !o.NoControllerManager {
		d.step("starting kube-controller-manager: garbage collector, namespaces, node lifecycle")
		if d.kcm, err = d.startProc("kube-controller-manager", filepath.Join(o.ControlPlaneDir, "kube-controller-manager"), localcluster.ControllerManagerArgs(d.kubeconfig)); err != nil {
			return err
		}
	}
	kargs, err := localcluster.KwokArgs(d.kubeconfig, o.KwokDir)
	if err != nil {
		return err
	}
	d.step("starting kwok: simulated kubelets for the nodes annotated " + localcluster.KwokSelector)
	if _, err = d.startProc("kwok", filepath.Join(o.KwokDir, "kwok"), kargs); err != nil {
		return err
	}

	nodes := localcluster.Nodes(o.CPUNodes, o.GPUNodes)
	if err := localcluster.CreateNodes(ctx, d.client, nodes); err != nil {
		return err
	}
	d.step(fmt.Sprintf("created %d CPU nodes (16 CPU, 64Gi, node-pool=cpu) and %d GPU nodes (32 CPU, 256Gi, 8 nvidia.com/gpu, node-pool=gpu, taint nvidia.com/gpu=present:NoSchedule)", o.CPUNodes, o.GPUNodes))

	if err := d.startManagers(); err != nil {
		return err
	}
	sched := "troupe-scheduler"
	if o.SchedulerConfig != "" {
		sched += " (--config=" + o.SchedulerConfig + ")"
	}
	d.step("started troupe-operator (--gang-scheduler-name=troupe) and " + sched + " in-process")

	// The jobs can wait for the nodes; the API server's first write of a
	// custom resource takes it about 2 s (it sets up quota admission for
	// the kind), time in which kwok makes the nodes Ready.
	if d.watched, err = applyManifests(ctx, d.client, examples, d.step); err != nil {
		return err
	}

	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	untaintAfter := 20 * time.Second
	if d.kcm == nil {
		untaintAfter = 0
		d.notes = append(d.notes, "no kube-controller-manager: the demo removed the nodes' not-ready taints itself, and a deleted job's pods stay")
	}
	if err := localcluster.WaitNodesReady(ctx, d.client, names, untaintAfter, d.remaining(time.Minute), d.note); err != nil {
		return err
	}
	d.step(fmt.Sprintf("all %d nodes Ready and schedulable", len(nodes)))
	return d.watch(ctx)
}

// remaining is what is left of --timeout with --until-running, or def.
func (d *demo) remaining(def time.Duration) time.Duration {
	if !d.opts.UntilRunning {
		return def
	}
	return time.Until(d.start.Add(d.opts.Timeout))
}

func (d *demo) startProc(name, path string, args []string) (*localcluster.Proc, error) {
	p, err := localcluster.Start(name, path, args, filepath.Join(d.opts.StateDir, logsDir, name+".log"))
	if err != nil {
		return nil, err
	}
	d.procs = append(d.procs, p)
	return p, nil
}

// setupLogging sends the in-process operator's and scheduler's logs, and
// client-go's, to logs/troupe.log, so that the terminal shows the table.
// controller-runtime keeps the first logger it is given, so this comes
// before their flag parsing.
func (d *demo) setupLogging() error {
	f, err := os.OpenFile(filepath.Join(d.opts.StateDir, logsDir, "troupe.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	d.logFile = f
	logger := zap.New(zap.WriteTo(f))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	return nil
}

// startManagers runs the operator and the scheduler as their binaries do,
// with metrics and probes off (nothing serves on the machine's ports).
func (d *demo) startManagers() error {
	off := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}
	opOpts, err := operator.ParseFlags(append(off, "--gang-scheduler-name=troupe"), io.Discard)
	if err != nil {
		return fmt.Errorf("operator flags: %w", err)
	}
	schedArgs := off
	if d.opts.SchedulerConfig != "" {
		schedArgs = append(slices.Clone(off), "--config="+d.opts.SchedulerConfig)
	}
	schedOpts, err := app.ParseFlags(schedArgs, io.Discard)
	if err != nil {
		return fmt.Errorf("scheduler flags: %w", err)
	}
	d.managers = append(d.managers,
		d.runManager("troupe-scheduler", func(ctx context.Context) error { return app.Run(ctx, d.cfg, schedOpts) }),
		d.runManager("troupe-operator", func(ctx context.Context) error { return operator.Run(ctx, d.cfg, opOpts) }))
	return nil
}

func (d *demo) runManager(name string, run func(context.Context) error) *manager {
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- run(ctx) }()
	return m
}

// health reports a component that stopped on its own.
func (d *demo) health() error {
	for _, m := range d.managers {
		select {
		case err := <-m.done:
			m.done <- err // keep it for stop
			return fmt.Errorf("%s stopped: %v (see logs/troupe.log)", m.name, err)
		default:
		}
	}
	for _, p := range d.procs {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v (see logs/%s.log)", p.Name, err, p.Name)
		}
	}
	return nil
}

// watch shows the table until ctx ends; with --until-running it returns
// once the examples run, or fails on a misplaced pod or at the timeout.
func (d *demo) watch(ctx context.Context) error {
	o := d.opts
	v := view{Kubeconfig: d.kubeconfig, Interactive: !o.UntilRunning}
	if !o.UntilRunning {
		d.step("showing the cluster; Ctrl-C stops it")
	}
	var deadline <-chan time.Time
	if o.UntilRunning {
		t := time.NewTimer(d.remaining(0))
		defer t.Stop()
		deadline = t.C
	}
	ticker := time.NewTicker(o.Refresh)
	defer ticker.Stop()
	var last, lastStatus string
	var snap *snapshot
	cleared := false
	for {
		if err := d.health(); err != nil {
			return err
		}
		s, err := observe(ctx, d.client)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			d.step(fmt.Sprintf("reading the cluster: %v", err))
		default:
			snap = s
		}
		if snap != nil && d.show != nil {
			if err := d.show.advance(ctx, d, snap); err != nil {
				if o.UntilRunning || ctx.Err() != nil {
					return err
				}
				// The cluster is still worth showing.
				d.tell(fmt.Sprintf("stopped showing the gang restart: %v", err))
				d.show = nil
			}
		}
		if snap != nil {
			v.Notes, v.Story = d.notes, d.story
			if o.UntilRunning {
				res := check(snap, d.watched)
				status := statusLine(res, len(d.watched))
				if d.show != nil {
					gang := d.show.judge(snap)
					if len(gang.Waiting) > 0 {
						status += "; gang restart: waiting for " + strings.Join(gang.Waiting, " | ")
					}
					res = res.and(gang)
				}
				if status != lastStatus {
					d.step(status)
					lastStatus = status
				}
				if res.broken() {
					fmt.Fprint(d.out, "\n"+render(snap, v))
					return brokenError(res)
				}
				if res.Done {
					fmt.Fprint(d.out, "\n"+render(snap, v)+"\n")
					ok := fmt.Sprintf("OK: all %d example jobs Running, every pod on the right kind of node", len(d.watched))
					if d.show != nil {
						ok += "; " + d.show.display() + " restarted as a whole gang and Running again as generation 1"
					}
					d.step(ok)
					return nil
				}
			} else {
				out := render(snap, v)
				switch {
				case d.tty:
					if !cleared {
						fmt.Fprint(d.out, "\033[2J")
						cleared = true
					}
					fmt.Fprint(d.out, "\033[H"+strings.ReplaceAll(out, "\n", "\033[K\n")+"\033[J")
				default:
					// Piped: print the table when it changes, not the clock.
					cmp := *snap
					cmp.Time = time.Time{}
					if key := render(&cmp, v); key != last {
						fmt.Fprint(d.out, "\n"+out)
						last = key
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			if snap != nil {
				fmt.Fprint(d.out, "\n"+render(snap, v))
				return fmt.Errorf("timed out after %v waiting for:\n  %s", o.Timeout, strings.Join(d.judge(snap).Waiting, "\n  "))
			}
			return fmt.Errorf("timed out after %v before the cluster could be read", o.Timeout)
		case <-ticker.C:
		}
	}
}

// judge is the verdict on the examples and the gang restart.
func (d *demo) judge(snap *snapshot) verdict {
	res := check(snap, d.watched)
	if d.show != nil {
		res = res.and(d.show.judge(snap))
	}
	return res
}

// brokenError says why the run cannot succeed any more.
func brokenError(res verdict) error {
	var parts []string
	if len(res.Misplaced) > 0 {
		parts = append(parts, "misplaced pods:\n  "+strings.Join(res.Misplaced, "\n  "))
	}
	if len(res.Failed) > 0 {
		parts = append(parts, "failed:\n  "+strings.Join(res.Failed, "\n  "))
	}
	return errors.New(strings.Join(parts, "\n"))
}

func statusLine(res verdict, jobs int) string {
	if res.Done {
		return fmt.Sprintf("%d/%d example jobs Running", jobs, jobs)
	}
	return fmt.Sprintf("%d/%d example jobs Running; waiting for %s", jobs-len(res.Waiting), jobs, strings.Join(res.Waiting, " | "))
}

// started names what stop will stop, in its order.
func (d *demo) started() string {
	var parts []string
	if len(d.managers) > 0 {
		parts = append(parts, "operator and scheduler")
	}
	for i := len(d.procs) - 1; i >= 0; i-- {
		parts = append(parts, d.procs[i].Name)
	}
	if d.env != nil {
		parts = append(parts, "kube-apiserver and etcd")
	}
	if len(parts) == 0 {
		return "nothing was started"
	}
	return strings.Join(parts, ", ")
}

// stop ends everything run started, in order, and empties the state
// folder but for its logs. It is safe after a partial start.
func (d *demo) stop() error {
	var errs []error
	for _, m := range d.managers {
		m.cancel()
	}
	for _, m := range d.managers {
		select {
		case err := <-m.done:
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
			}
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("%s did not stop within 30s", m.name))
		}
	}
	for i := len(d.procs) - 1; i >= 0; i-- {
		if err := d.procs[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if d.env != nil {
		if err := d.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd and kube-apiserver: %w", err))
		}
	}
	for _, f := range d.outFiles {
		_ = f.Close()
	}
	if d.logFile != nil {
		_ = d.logFile.Close()
	}
	if d.prepared {
		if n := killLeftovers(d.opts.StateDir); n > 0 {
			errs = append(errs, fmt.Errorf("killed %d processes that did not stop", n))
		}
		errs = append(errs, cleanStateDir(d.opts.StateDir))
	}
	return errors.Join(errs...)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
