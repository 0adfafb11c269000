package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/binder"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/queues"
	"github.com/troupe-ml/troupe/gangscheduler/scheduler"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// watchBinds is an action that runs after allocate, still inside the
// session: it waits (up to a bound far beyond a bind's time) until the API
// server shows every pod the session has committed so far bound, and
// records whether it did. A scheduler that binds only after the session
// ends makes it wait the whole bound and record false.
type watchBinds struct {
	c     client.Client
	ns    string
	wait  time.Duration
	bound atomic.Bool
	saw   atomic.Int32
}

func (*watchBinds) Name() string { return "watch-binds" }

func (w *watchBinds) Execute(ssn *framework.Session) {
	want := len(ssn.Bindings())
	deadline := time.Now().Add(w.wait)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		if err := w.c.List(context.Background(), &pods, client.InNamespace(w.ns)); err == nil {
			n := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					n++
				}
			}
			w.saw.Store(int32(n))
			if want > 0 && n == want {
				w.bound.Store(true)
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// knobs vary the scheduler a commit spec assembles.
type knobs struct {
	fence func() error
	// extra actions run after allocate.
	extra         []framework.Action
	bindsSeenWait time.Duration
	startAfter    func(context.Context)
	// frozen stops the informers once they have synced: the cache keeps
	// what they listed and shows nothing after, binds included.
	frozen bool
	// statusClient, if set, is the status writer's client.
	statusClient client.Client
	// bindClient, if set, is the binder's client.
	bindClient client.Client
}

var _ = Describe("a cycle's commit", Serial, func() {
	var (
		ctx context.Context
		ns  string
	)

	// gang creates gang gN: a PodGroup and two 1-CPU pods.
	gang := func(g int) {
		name := fmt.Sprintf("g%d", g)
		ExpectWithOffset(1, suite.Client.Create(ctx, testutil.MakePodGroup(name, ns).MinMember(2).Obj())).To(Succeed())
		for m := range 2 {
			pod := testutil.MakeGangPod(fmt.Sprintf("%s-%d", name, m), ns).Group(name).Role("worker").
				Request(corev1.ResourceCPU, "1").Obj()
			ExpectWithOffset(1, suite.Client.Create(ctx, pod)).To(Succeed())
		}
	}

	// gangs creates n gangs, g0..g{n-1}, on two nodes of 8 CPU.
	gangs := func(n int) {
		for i := range 2 {
			node := testutil.MakeNode(fmt.Sprintf("%s-n%d", ns, i)).Capacity("8", "32Gi").Obj()
			Expect(testutil.CreateReadyNode(ctx, suite.Client, node)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), node))).To(Succeed()) })
		}
		for g := range n {
			gang(g)
		}
	}

	// newScheduler assembles troupe-scheduler from its parts over a fresh
	// informer cache, with the allocate action and then k.extra.
	newScheduler := func(k knobs) *scheduler.Scheduler {
		cctx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		informers, err := ctrlcache.New(suite.Env.Config, ctrlcache.Options{Scheme: scheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		c, err := cache.New(cctx, informers, cache.Options{SchedulerName: "troupe-scheduler"})
		Expect(err).NotTo(HaveOccurred())
		informersCtx, stopInformers := context.WithCancel(cctx)
		DeferCleanup(stopInformers)
		go func() { _ = informers.Start(informersCtx) }()
		Expect(c.WaitForSync(cctx)).To(BeTrue())
		if k.frozen {
			stopInformers()
		}
		recorder := clientevents.NewFakeRecorder(1000)
		statusClient := k.statusClient
		if statusClient == nil {
			statusClient = suite.Client
		}
		writer := status.NewWriter(statusClient, recorder, status.WriterOptions{Workers: 4})
		go func() { _ = writer.Start(cctx) }()
		bindClient := k.bindClient
		if bindClient == nil {
			bindClient = suite.Client
		}
		return scheduler.New(c, binder.New(bindClient, recorder, 4), writer,
			scheduler.Options{
				Actions:       append([]framework.Action{actions.NewAllocate()}, k.extra...),
				Plugins:       plugins.Default(),
				Fence:         k.fence,
				BindsSeenWait: k.bindsSeenWait,
				StartAfter:    k.startAfter,
			})
	}

	podGroupPhase := func(g int) schedulingv1alpha1.PodGroupPhase {
		var pg schedulingv1alpha1.PodGroup
		ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("g%d", g)}, &pg)).To(Succeed())
		return pg.Status.Phase
	}

	boundPods := func(g Gomega) map[string]string {
		var pods corev1.PodList
		g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		out := map[string]string{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				out[p.Name] = p.Spec.NodeName
			}
		}
		return out
	}

	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "commit")
		Expect(queues.EnsureDefaultQueue(ctx, suite.Client)).To(Succeed())
	})

	It("starts a gang's binds while the session is still deciding, and writes the status after them", func() {
		gangs(3)
		watch := &watchBinds{c: suite.Client, ns: ns, wait: 20 * time.Second}
		s := newScheduler(knobs{extra: []framework.Action{watch}})
		Expect(s.RunOnce(ctx)).To(Succeed())

		Expect(watch.bound.Load()).To(BeTrue(),
			"the API server showed %d of 6 pods bound while the session went on: binds waited for the session's end", watch.saw.Load())
		Expect(boundPods(Default)).To(HaveLen(6))
		for g := range 3 {
			Expect(podGroupPhase(g)).To(Equal(schedulingv1alpha1.PodGroupRunning), "PodGroup g%d", g)
		}
	})

	// What a user reads must not delay the binds: the loop starts the next
	// cycle while the last one's status writes are under way.
	It("binds the next cycle's gangs while the last cycle's status writes are held, and writes each PodGroup's latest status after them", func() {
		gangs(1)
		held := &heldStatusPatches{release: make(chan struct{})}
		s := newScheduler(knobs{statusClient: held.client()})
		sctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer GinkgoRecover()
			Expect(s.Start(sctx)).To(Succeed())
		}()
		Eventually(boundPods).Should(HaveLen(2))
		Eventually(held.waiting).Should(HaveKey("g0"), "the first cycle wrote no status for g0")

		gang(1)
		Eventually(boundPods).Should(HaveLen(4), "g1 waited for g0's status write")
		Expect(held.waiting()).To(HaveKeyWithValue("g0", 1), "g0's status write was let through")
		Expect(podGroupPhase(0)).To(BeEmpty(), "g0's status landed while its write was held")
		// Each PodGroup's writes are its own: g1's do not wait for g0's.
		Eventually(held.waiting).Should(HaveKey("g1"), "g1's status write waited for g0's")

		close(held.release)
		Eventually(func() []schedulingv1alpha1.PodGroupPhase {
			return []schedulingv1alpha1.PodGroupPhase{podGroupPhase(0), podGroupPhase(1)}
		}).
			Should(HaveEach(schedulingv1alpha1.PodGroupRunning))
		// Cycles go on (at least every MaxIdlePeriod): none of them writes
		// a status again, though the informer may show the first writes
		// only later than the cycle that decided them. g1 was decided
		// while its first write was held (the PodGroup first seen without
		// its pods, then bound): whatever came after is one more write.
		running := schedulingv1alpha1.PodGroupRunning
		Consistently(held.podGroupWrites).WithTimeout(3 * time.Second).Should(And(
			HaveKeyWithValue("g0", []schedulingv1alpha1.PodGroupPhase{running}),
			HaveKeyWithValue("g1", Or(
				Equal([]schedulingv1alpha1.PodGroupPhase{running}),
				And(HaveExactElements(Not(BeEmpty()), Equal(running)), Not(HaveEach(running))),
			)),
			HaveLen(2)))
	})

	// The status writes wait for the scheduler's own informer to show the
	// cycle's binds, so that they do not take the API server's time while
	// it sends the binds to their watchers; a watch that never shows them
	// holds the status back by BindsSeenWait at most.
	It("writes the status once its informer shows the binds, without waiting out BindsSeenWait", func() {
		gangs(2)
		s := newScheduler(knobs{bindsSeenWait: time.Minute})
		start := time.Now()
		Expect(s.RunOnce(ctx)).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "the cycle waited for binds its informer had shown")
		Expect(boundPods(Default)).To(HaveLen(4))
		for g := range 2 {
			Expect(podGroupPhase(g)).To(Equal(schedulingv1alpha1.PodGroupRunning), "PodGroup g%d", g)
		}
	})

	It("runs no cycle before StartAfter returns", func() {
		gangs(1)
		release := make(chan struct{})
		s := newScheduler(knobs{startAfter: func(ctx context.Context) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}})
		sctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer GinkgoRecover()
			Expect(s.Start(sctx)).To(Succeed())
		}()
		Consistently(boundPods).WithTimeout(time.Second).Should(BeEmpty(), "a cycle ran before StartAfter returned")
		close(release)
		Eventually(boundPods).WithTimeout(30 * time.Second).Should(HaveLen(2))
	})

	It("writes the status after BindsSeenWait when its informer never shows the binds", func() {
		gangs(2)
		const wait = 2 * time.Second
		s := newScheduler(knobs{bindsSeenWait: wait, frozen: true})
		start := time.Now()
		Expect(s.RunOnce(ctx)).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically(">=", wait), "the status did not wait for the binds to show")
		Expect(boundPods(Default)).To(HaveLen(4))
		for g := range 2 {
			Expect(podGroupPhase(g)).To(Equal(schedulingv1alpha1.PodGroupRunning), "PodGroup g%d: the status was not written after the wait", g)
		}
	})

	// The scheduler cannot bind a gang in one request (Kubernetes binds a
	// pod at a time); the spread histograms say for how long the API
	// server showed each gang partly bound, from the binds' answers.
	It("times how far apart each whole gang's binds went out and came back, and leaves out a gang a bind of which failed", func() {
		gangs(3)
		const late = 300 * time.Millisecond
		direct, err := client.NewWithWatch(suite.Env.Config, client.Options{Scheme: suite.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		bindClient := interceptor.NewClient(direct, interceptor.Funcs{
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
				switch obj.GetName() {
				case "g0-1":
					time.Sleep(late) // answered late: g0 is partly bound meanwhile
				case "g2-1":
					return errors.New("refused by the test")
				}
				return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
			},
		})
		// g2 is left partial; the later specs' schedulers watch every
		// namespace and would complete it first of all.
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})
		requests, answers := spreadHistogram(metrics.GangBindRequestSpread), spreadHistogram(metrics.GangBindAnswerSpread)
		s := newScheduler(knobs{bindClient: bindClient})
		Expect(s.RunOnce(ctx)).To(MatchError(ContainSubstring("1 of 6 binds failed")))

		Expect(spreadHistogram(metrics.GangBindAnswerSpread).Since(answers)).To(Equal(testutil.HistogramCounts{Count: 2, Over: map[float64]uint64{0.25: 1, 1: 0}}),
			"g0 and g1 were bound whole, g0's answers came back at least %v apart; g2 is not whole", late)
		Expect(spreadHistogram(metrics.GangBindRequestSpread).Since(requests)).To(Equal(testutil.HistogramCounts{Count: 2, Over: map[float64]uint64{0.25: 0, 1: 0}}),
			"each gang's binds went out together")
	})

	It("binds no gang, and no part of one, once the fence refuses mid-session, and writes no status", func() {
		gangs(3)
		var asked atomic.Int32
		lost := errors.New("lease not renewed within the deadline")
		// The fence lets the first gang through, then refuses.
		fence := func() error {
			if asked.Add(1) > 1 {
				return lost
			}
			return nil
		}
		s := newScheduler(knobs{fence: fence})
		Expect(s.RunOnce(ctx)).To(Succeed())

		bound := boundPods(Default)
		Expect(bound).To(HaveLen(2), "only the first gang decided is bound")
		Expect(bound).To(SatisfyAny(HaveKey("g0-0"), HaveKey("g1-0"), HaveKey("g2-0")))
		for g := range 3 {
			_, a := bound[fmt.Sprintf("g%d-0", g)]
			_, b := bound[fmt.Sprintf("g%d-1", g)]
			Expect(a).To(Equal(b), "gang g%d bound partly", g)
			Expect(podGroupPhase(g)).To(BeEmpty(), "a fenced cycle wrote the status of PodGroup g%d", g)
		}
		Consistently(boundPods).WithTimeout(time.Second).Should(HaveLen(2))
	})
})

// heldStatusPatches is a status writer's client whose PodGroup status
// patches wait until release is closed; it counts them by PodGroup.
type heldStatusPatches struct {
	release chan struct{}
	mu      sync.Mutex
	// held are the patches waiting, by PodGroup name; sent are the
	// phases of the patches sent, in order, by PodGroup name.
	held map[string]int
	sent map[string][]schedulingv1alpha1.PodGroupPhase
}

func (h *heldStatusPatches) client() client.Client {
	h.held, h.sent = map[string]int{}, map[string][]schedulingv1alpha1.PodGroupPhase{}
	c, err := client.NewWithWatch(suite.Env.Config, client.Options{Scheme: suite.Client.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if pg, ok := obj.(*schedulingv1alpha1.PodGroup); ok {
				h.count(h.held, obj.GetName(), 1)
				select {
				case <-h.release:
				case <-ctx.Done():
				}
				h.count(h.held, obj.GetName(), -1)
				h.mu.Lock()
				h.sent[pg.Name] = append(h.sent[pg.Name], pg.Status.Phase)
				h.mu.Unlock()
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

func (h *heldStatusPatches) count(m map[string]int, name string, by int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m[name] += by
	if m[name] == 0 {
		delete(m, name)
	}
}

// waiting are the PodGroup status patches held now, by PodGroup.
func (h *heldStatusPatches) waiting() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.held)
}

// podGroupWrites are the phases of the PodGroup status patches sent, by
// PodGroup.
func (h *heldStatusPatches) podGroupWrites() map[string][]schedulingv1alpha1.PodGroupPhase {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]schedulingv1alpha1.PodGroupPhase{}
	for name, phases := range h.sent {
		out[name] = slices.Clone(phases)
	}
	return out
}

// spreadHistogram reads a spread histogram's observations, and those above
// 0.25 s and 1 s.
func spreadHistogram(h prometheus.Histogram) testutil.HistogramCounts {
	c, err := testutil.ReadHistogram(h, 0.25, 1)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}
