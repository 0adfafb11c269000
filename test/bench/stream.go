package bench

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// arrivals creates a stream's gangs during a run, each at its time
// (scenario.Scenario.ArrivalAt) from the clock's start, and records when
// each arrived (its creation began) and which exist whole (its PodGroup
// and every pod created).
type arrivals struct {
	s      scenario.Scenario
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	at      map[string]time.Duration
	created map[string]bool
	err     error
}

// startArrivals calls create for gang 0, 1, ... of s, each in its own
// goroutine at origin+s.ArrivalAt(i), until every gang has arrived or
// stop is called.
func startArrivals(ctx context.Context, s scenario.Scenario, origin time.Time, create func(ctx context.Context, gang int) error) *arrivals {
	ctx, cancel := context.WithCancel(ctx)
	a := &arrivals{s: s, cancel: cancel, done: make(chan struct{}), at: map[string]time.Duration{}, created: map[string]bool{}}
	go func() {
		defer close(a.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := range s.Gangs {
			timer := time.NewTimer(time.Until(origin.Add(s.ArrivalAt(i))))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			name := s.GangName(i)
			a.mu.Lock()
			a.at[name] = time.Since(origin)
			a.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := create(ctx, i)
				a.mu.Lock()
				defer a.mu.Unlock()
				switch {
				case err == nil:
					a.created[name] = true
				case ctx.Err() == nil && a.err == nil:
					a.err = fmt.Errorf("gang %s arriving: %w", name, err)
				}
			}()
		}
	}()
	return a
}

// stop ends the arrivals, waits for the creations under way, and returns
// the first that failed.
func (a *arrivals) stop() error {
	a.cancel()
	<-a.done
	return a.failed()
}

// failed is the first creation that failed, if one did.
func (a *arrivals) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// complete says every gang has arrived and exists whole.
func (a *arrivals) complete() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.created) == a.s.Gangs
}

// arrived is when each gang arrived so far, from the clock's start.
func (a *arrivals) arrived() map[string]time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.at)
}

// existing are the gangs that exist whole so far.
func (a *arrivals) existing() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.created)
}

// stream is a streamed scenario's side of a run (TS): it creates the
// gangs during the run, samples the GPUs stranded while gangs wait, and
// logs every bind, so that the racks of gangs deleted during the run are
// still read at its end.
type stream struct {
	s scenario.Scenario
	// nodes are the run's nodes, fixed for the run.
	nodes    []*corev1.Node
	binds    *measure.BindLog
	sampler  *measure.StrandingSampler
	created  *writeCounter
	arrivals *arrivals

	stopSampling context.CancelFunc
	sampled      chan struct{}
}

// newStream reads the run's nodes and background pods, which the run
// does not change, before the clock starts.
func newStream(ctx context.Context, c *cluster, s scenario.Scenario) (*stream, error) {
	nodes, err := c.clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	background, err := c.clientset.CoreV1().Pods(scenario.BackgroundNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	st := &stream{s: s, binds: measure.NewBindLog(), created: &writeCounter{counts: measure.Writes{}}}
	for i := range nodes.Items {
		st.nodes = append(st.nodes, &nodes.Items[i])
	}
	var busy []*corev1.Pod
	for i := range background.Items {
		busy = append(busy, &background.Items[i])
	}
	st.sampler = measure.NewStrandingSampler(st.nodes, busy, scenario.RackLabel)
	return st, nil
}

// start starts the arrivals, on the tracker's clock, creating the gangs in
// dialect, and the sampling of the GPUs stranded, from the pods informer's
// store.
func (st *stream) start(ctx context.Context, c *cluster, dialect placer.Dialect, tracker *measure.Tracker, pods toolscache.Store) error {
	cl, err := client.NewWithWatch(c.cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	counted := st.created.client(cl)
	origin := time.Now().Add(-tracker.Elapsed())
	st.arrivals = startArrivals(ctx, st.s, origin, func(ctx context.Context, i int) error {
		return writeGangs(ctx, counted, dialect, []scenario.Gang{st.s.Gang(i, namespace, dialect)})
	})
	ctx, st.stopSampling = context.WithCancel(ctx)
	st.sampled = make(chan struct{})
	go func() {
		defer close(st.sampled)
		tick := time.NewTicker(measure.StrandingTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			st.sample(tracker.DoneAt(), pods.List())
		}
	}()
	return nil
}

// sample samples the GPUs stranded, from the gangs' pods now (objs) and
// those bound whole (done): a gang waits from when it exists whole (its
// PodGroup and every pod created) until it is bound whole.
func (st *stream) sample(done map[string]time.Duration, objs []any) {
	existing := st.arrivals.existing()
	gangPods := make([]*corev1.Pod, 0, len(objs))
	notWaiting := map[string]bool{}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			gangPods = append(gangPods, p)
			if g := scenario.GangOf(p); !existing[g] {
				notWaiting[g] = true
			}
		}
	}
	for g := range done {
		notWaiting[g] = true
	}
	st.sampler.Sample(gangPods, notWaiting)
}

// stop ends the arrivals and the sampling and returns the first creation
// that failed.
func (st *stream) stop() error {
	if st.arrivals == nil {
		return nil
	}
	err := st.arrivals.stop()
	st.stopSampling()
	<-st.sampled
	return err
}

// result is what the stream measured, with done the gangs bound whole and
// end the run's end, from the clock's start.
func (st *stream) result(done map[string]time.Duration, end time.Duration) *measure.Stream {
	var arrived map[string]time.Duration
	if st.arrivals != nil {
		arrived = st.arrivals.arrived()
	}
	workers := make(map[string]int, st.s.Gangs)
	for i := range st.s.Gangs {
		workers[st.s.GangName(i)] = st.s.ReplicasOf(len(st.s.Roles)-1, i)
	}
	s := measure.StreamOf(arrived, done, end, workers)
	s.Stranded, s.Free = st.sampler.Samples()
	return &s
}

// writes are the API writes the stream's creations made; none for a run
// without a stream.
func (st *stream) writes() measure.Writes {
	if st == nil {
		return measure.Writes{}
	}
	return st.created.writes()
}

// writeCounter counts the writes made through its client, by "VERB
// resource" as the API server counts them, so that the harness's own
// writes during a run are not charged to the placer.
type writeCounter struct {
	mu     sync.Mutex
	counts measure.Writes
}

// client is cl counting its creates, updates, patches and deletes, each
// request once whatever its outcome (the API server counts refused ones
// too).
func (w *writeCounter) client(cl client.WithWatch) client.Client {
	count := func(cl client.WithWatch, verb string, obj client.Object) {
		resource := fmt.Sprintf("%T", obj)
		if gvk, err := apiutil.GVKForObject(obj, cl.Scheme()); err == nil {
			resource = strings.ToLower(gvk.Kind) + "s"
			if m, err := cl.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				resource = m.Resource.Resource
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.counts[verb+" "+resource]++
	}
	return interceptor.NewClient(cl, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count(cl, "POST", obj)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count(cl, "PUT", obj)
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count(cl, "PATCH", obj)
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count(cl, "DELETE", obj)
			return cl.Delete(ctx, obj, opts...)
		},
	})
}

func (w *writeCounter) writes() measure.Writes {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}
