package status_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clientevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// phase is a PodGroup status that differs from another only by its phase.
func phase(p schedulingv1alpha1.PodGroupPhase) schedulingv1alpha1.PodGroupStatus {
	return schedulingv1alpha1.PodGroupStatus{Phase: p}
}

// statusPatches wraps the suite's client: each status patch first waits
// for hold (if set) to let it through, then fails while failing is set.
// It records the phase of each patch sent.
type statusPatches struct {
	hold    chan struct{}
	failing atomic.Bool
	// applyThenFail, while set, lets a patch through and then reports it
	// failed: a timeout after the API server took the write.
	applyThenFail atomic.Bool

	mu     sync.Mutex
	phases []schedulingv1alpha1.PodGroupPhase
	held   int
}

var (
	errRefused  = errors.New("status patch refused by the test")
	errTimedOut = errors.New("status patch applied, then reported timed out by the test")
)

func (p *statusPatches) client() client.Client {
	c, err := client.NewWithWatch(suite.Env.Config, client.Options{Scheme: suite.Client.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if p.hold != nil {
				p.count(1)
				select {
				case <-p.hold:
				case <-ctx.Done():
					return ctx.Err()
				}
				p.count(-1)
			}
			if p.failing.Load() {
				return errRefused
			}
			if pg, ok := obj.(*schedulingv1alpha1.PodGroup); ok {
				p.mu.Lock()
				p.phases = append(p.phases, pg.Status.Phase)
				p.mu.Unlock()
			}
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil || !p.applyThenFail.Load() {
				return err
			}
			return errTimedOut
		},
	})
}

func (p *statusPatches) count(by int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held += by
}

// waiting is how many patches are held.
func (p *statusPatches) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// sent are the phases of the PodGroup status patches sent, in order.
func (p *statusPatches) sent() []schedulingv1alpha1.PodGroupPhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]schedulingv1alpha1.PodGroupPhase(nil), p.phases...)
}

// announcedAll drains the events recorded until there are n, and fails
// if another follows within a short while. Flush returns once every write
// was attempted; a write that landed records its events just after, so
// they are waited for rather than read at once.
func announcedAll(r *clientevents.FakeRecorder, n int) []string {
	var out []string
	EventuallyWithOffset(1, func() int { out = append(out, announced(r)...); return len(out) }).Should(BeNumerically(">=", n))
	ConsistentlyWithOffset(1, r.Events).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "more events than %d: %v", n, out)
	return out
}

// announced drains the events recorded so far.
func announced(r *clientevents.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

var _ = Describe("the status writer", func() {
	var (
		ctx context.Context
		ns  string
		// seen is the PodGroup as it was created: an informer that has not
		// caught up with any write shows this.
		seen     *schedulingv1alpha1.PodGroup
		recorder *clientevents.FakeRecorder
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "writer")
		seen = testutil.MakePodGroup("pg", ns).Obj()
		Expect(suite.Client.Create(ctx, seen)).To(Succeed())
		recorder = clientevents.NewFakeRecorder(100)
	})

	current := func() *schedulingv1alpha1.PodGroup {
		pg := &schedulingv1alpha1.PodGroup{}
		ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKeyFromObject(seen), pg)).To(Succeed())
		return pg
	}
	// started returns a running writer over c.
	started := func(c client.Client, opts status.WriterOptions) *status.Writer {
		w := status.NewWriter(c, recorder, opts)
		wctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() { _ = w.Start(wctx) }()
		return w
	}
	// decided hands w a status decided over the object at version over,
	// announcing it with an event named after its phase.
	decided := func(w *status.Writer, over *schedulingv1alpha1.PodGroup, to schedulingv1alpha1.PodGroupStatus, after <-chan struct{}) {
		w.Write([]status.PodGroupWrite{{
			PodGroup: over, Old: w.OldPodGroupStatus(over),
			Update: status.Update{Status: to, Events: []status.Event{{Type: corev1.EventTypeNormal, Reason: string(to.Phase), Message: "to " + string(to.Phase)}}},
		}}, nil, after)
	}

	It("answers with a status from the moment it is decided, before its write lands", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		decided(w, seen, phase(schedulingv1alpha1.PodGroupInqueue), nil)
		Expect(w.OldPodGroupStatus(seen)).To(Equal(phase(schedulingv1alpha1.PodGroupInqueue)))
		Eventually(patches.waiting).Should(Equal(1))
		flushed := make(chan error, 1)
		go func() { flushed <- w.Flush(ctx) }()
		Consistently(flushed).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "the write was held, yet Flush returned")
		Expect(current().Status.Phase).To(BeEmpty(), "the write was held, yet it landed")
		Expect(announced(recorder)).To(BeEmpty(), "an event went out before its status landed")

		close(patches.hold)
		Eventually(flushed).Should(Receive(Succeed()))
		Expect(current().Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))
		Expect(announcedAll(recorder, 1)).To(Equal([]string{"Normal Inqueue to Inqueue"}))
	})

	// Two writes ahead of the informer: the second was decided over the
	// first, so while the informer shows the object from before either of
	// them, or the first's own version, the second is what stands.
	It("keeps its last write while the informer shows any version before it, and lets go once it shows that one", func() {
		w := started(suite.Client, status.WriterOptions{Workers: 2})
		decided(w, seen, phase(schedulingv1alpha1.PodGroupInqueue), nil)
		Expect(w.Flush(ctx)).To(Succeed())
		afterFirst := current()
		Expect(afterFirst.ResourceVersion).NotTo(Equal(seen.ResourceVersion))

		Expect(w.OldPodGroupStatus(seen)).To(Equal(phase(schedulingv1alpha1.PodGroupInqueue)))
		decided(w, seen, phase(schedulingv1alpha1.PodGroupRunning), nil)
		Expect(w.Flush(ctx)).To(Succeed())

		running := phase(schedulingv1alpha1.PodGroupRunning)
		Expect(w.OldPodGroupStatus(seen)).To(Equal(running), "over the version both writes were made after")
		Expect(w.OldPodGroupStatus(afterFirst)).To(Equal(running), "over the first write's version, which the second was made after")
		last := current()
		Expect(last.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		Expect(w.OldPodGroupStatus(last)).To(Equal(last.Status))

		// Once the informer showed the last write, what is remembered is
		// gone: the object is the truth again, whatever comes after.
		Expect(w.OldPodGroupStatus(seen)).To(Equal(seen.Status))
	})

	// One write per object in flight: what is decided meanwhile waits, and
	// goes out as one write of the latest status, with every change's
	// events once it lands.
	It("folds the decisions made while a write is in flight into one next write of the latest", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		w := started(patches.client(), status.WriterOptions{Workers: 4})
		decided(w, seen, phase(schedulingv1alpha1.PodGroupPending), nil)
		Eventually(patches.waiting).Should(Equal(1))
		decided(w, seen, phase(schedulingv1alpha1.PodGroupInqueue), nil)
		decided(w, seen, phase(schedulingv1alpha1.PodGroupRunning), nil)
		Consistently(patches.waiting).WithTimeout(300*time.Millisecond).Should(Equal(1), "a second write of the object went out while the first was in flight")

		close(patches.hold)
		Expect(w.Flush(ctx)).To(Succeed())
		Expect(patches.sent()).To(Equal([]schedulingv1alpha1.PodGroupPhase{schedulingv1alpha1.PodGroupPending, schedulingv1alpha1.PodGroupRunning}))
		Expect(current().Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		Expect(announcedAll(recorder, 3)).To(Equal([]string{"Normal Pending to Pending", "Normal Inqueue to Inqueue", "Normal Running to Running"}))
	})

	It("announces a reason decided again before its write goes out once, in the latest words", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		write := func(to schedulingv1alpha1.PodGroupStatus, events ...status.Event) {
			w.Write([]status.PodGroupWrite{{PodGroup: seen, Old: w.OldPodGroupStatus(seen), Update: status.Update{Status: to, Events: events}}}, nil, nil)
		}
		unschedulable := func(msg string) status.Event {
			return status.Event{Type: corev1.EventTypeWarning, Reason: "Unschedulable", Message: msg}
		}
		write(phase(schedulingv1alpha1.PodGroupPending), unschedulable("8 of 8 nodes full"))
		Eventually(patches.waiting).Should(Equal(1))
		// Decided while the first write is in flight: one next write.
		write(phase(schedulingv1alpha1.PodGroupInqueue), unschedulable("7 of 8 nodes full"))
		write(phase(schedulingv1alpha1.PodGroupRunning), status.Event{Type: corev1.EventTypeNormal, Reason: "Scheduled", Message: "gang bound"})
		write(phase(schedulingv1alpha1.PodGroupPending), unschedulable("a member was lost"))

		close(patches.hold)
		Expect(w.Flush(ctx)).To(Succeed())
		Expect(announcedAll(recorder, 3)).To(Equal([]string{
			"Warning Unschedulable 8 of 8 nodes full",
			"Normal Scheduled gang bound",
			"Warning Unschedulable a member was lost",
		}))
	})

	It("tells the gang's pending pods only the latest decision's reason", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		pod := testutil.MakeGangPod("pg-0", ns).Group("pg").Obj()
		write := func(to schedulingv1alpha1.PodGroupStatus, podEvent *status.Event) {
			w.Write([]status.PodGroupWrite{{PodGroup: seen, Old: w.OldPodGroupStatus(seen), Update: status.Update{Status: to, PodEvent: podEvent},
				Pending: []*corev1.Pod{pod}}}, nil, nil)
		}
		write(phase(schedulingv1alpha1.PodGroupPending), &status.Event{Type: corev1.EventTypeWarning, Reason: "Unschedulable", Message: "no room"})
		Eventually(patches.waiting).Should(Equal(1))
		write(phase(schedulingv1alpha1.PodGroupInqueue), &status.Event{Type: corev1.EventTypeWarning, Reason: "Unschedulable", Message: "still no room"})
		write(phase(schedulingv1alpha1.PodGroupRunning), nil)

		close(patches.hold)
		Expect(w.Flush(ctx)).To(Succeed())
		Expect(announcedAll(recorder, 1)).To(Equal([]string{"Warning Unschedulable no room"}),
			"the pods heard a reason no longer true when its write landed")
	})

	// What a user reads lags what the scheduler decided by the write's
	// wait and its round trip: the lag histogram times each landed write
	// from the oldest decision it carries, not from the latest.
	It("times a landed write from the oldest decision it carries", func() {
		w := started(suite.Client, status.WriterOptions{Workers: 2})
		lag := func() testutil.HistogramCounts {
			c, err := testutil.ReadHistogram(metrics.StatusWriteLag, 0.25)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			return c
		}
		before := lag()
		const wait = 300 * time.Millisecond
		// Held back (its binds not seen yet), then decided again: one
		// write carries both decisions.
		held := make(chan struct{})
		DeferCleanup(func() { close(held) })
		decided(w, seen, phase(schedulingv1alpha1.PodGroupInqueue), held)
		time.Sleep(wait)
		decided(w, seen, phase(schedulingv1alpha1.PodGroupRunning), nil)
		Expect(w.Flush(ctx)).To(Succeed())
		Eventually(func() schedulingv1alpha1.PodGroupPhase { return current().Status.Phase }).Should(Equal(schedulingv1alpha1.PodGroupRunning))

		Eventually(func() testutil.HistogramCounts { return lag().Since(before) }).Should(Equal(testutil.HistogramCounts{Count: 1, Over: map[float64]uint64{0.25: 1}}),
			"one write landed, %v or more after the first decision it carries", wait)
	})

	It("writes nothing before after is closed", func() {
		w := started(suite.Client, status.WriterOptions{Workers: 2})
		after := make(chan struct{})
		decided(w, seen, phase(schedulingv1alpha1.PodGroupInqueue), after)
		Expect(w.OldPodGroupStatus(seen)).To(Equal(phase(schedulingv1alpha1.PodGroupInqueue)))
		Consistently(func() schedulingv1alpha1.PodGroupPhase { return current().Status.Phase }).
			WithTimeout(300 * time.Millisecond).Should(BeEmpty())
		close(after)
		Expect(w.Flush(ctx)).To(Succeed())
		Expect(current().Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))
	})

	It("retries a failed write until it lands, and announces it once", func() {
		patches := &statusPatches{}
		patches.failing.Store(true)
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		inqueue := phase(schedulingv1alpha1.PodGroupInqueue)
		decided(w, seen, inqueue, nil)
		Expect(w.Flush(ctx)).To(MatchError(And(ContainSubstring("1 status writes failed, retried with backoff"), ContainSubstring(errRefused.Error()))))
		Expect(w.OldPodGroupStatus(seen)).To(Equal(inqueue), "the failed write's status no longer stands: the next cycle would decide it again")
		Expect(current().Status.Phase).To(BeEmpty())
		Expect(announced(recorder)).To(BeEmpty(), "a failed write's event went out")

		patches.failing.Store(false)
		Eventually(func() schedulingv1alpha1.PodGroupPhase { return current().Status.Phase }).Should(Equal(schedulingv1alpha1.PodGroupInqueue))
		Eventually(recorder.Events).Should(Receive(Equal("Normal Inqueue to Inqueue")))
		Consistently(recorder.Events).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
	})

	It("folds a failed write's reason into the one decided while it waited for its retry", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		patches.failing.Store(true)
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		unschedulable := func(to schedulingv1alpha1.PodGroupPhase, msg string) {
			w.Write([]status.PodGroupWrite{{PodGroup: seen, Old: w.OldPodGroupStatus(seen), Update: status.Update{Status: phase(to),
				Events: []status.Event{{Type: corev1.EventTypeWarning, Reason: "Unschedulable", Message: msg}}}}}, nil, nil)
		}
		unschedulable(schedulingv1alpha1.PodGroupPending, "8 of 8 nodes full")
		Eventually(patches.waiting).Should(Equal(1))
		// Decided while the write that fails is in flight: the failed
		// write's event and this one meet when the failure is settled.
		unschedulable(schedulingv1alpha1.PodGroupInqueue, "7 of 8 nodes full")
		close(patches.hold)
		Expect(w.Flush(ctx)).To(HaveOccurred())
		patches.failing.Store(false)
		Eventually(func() schedulingv1alpha1.PodGroupPhase { return current().Status.Phase }).Should(Equal(schedulingv1alpha1.PodGroupInqueue))
		Expect(announcedAll(recorder, 1)).To(Equal([]string{"Warning Unschedulable 7 of 8 nodes full"}))
	})

	// A write that failed but was applied produced a version the writer
	// never learned. Once a later write lands, an informer still showing
	// that version is behind it: the failed write's status must not pass
	// for the truth, or the next cycle would decide the change again.
	It("keeps its landed write while the informer shows the version of one reported failed but applied", func() {
		patches := &statusPatches{}
		patches.applyThenFail.Store(true)
		w := started(patches.client(), status.WriterOptions{Workers: 2})
		decided(w, seen, schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning, Running: 2}, nil)
		Expect(w.Flush(ctx)).To(MatchError(ContainSubstring(errTimedOut.Error())))
		applied := current()
		Expect(applied.Status.Running).To(BeEquivalentTo(2), "the test's client did not apply the write")

		patches.applyThenFail.Store(false)
		next := schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning, Running: 3}
		decided(w, seen, next, nil)
		Eventually(func() schedulingv1alpha1.PodGroupStatus { return current().Status }).Should(Equal(next))
		Expect(w.Flush(ctx)).To(Succeed())

		Expect(w.OldPodGroupStatus(applied)).To(Equal(next), "the informer's version from before the landed write passed for the truth")
		Expect(w.OldPodGroupStatus(current())).To(Equal(next))
	})

	DescribeTable("undoes what a write reported failed but applied, once a later decision lacks it",
		func(next schedulingv1alpha1.PodGroupStatus) {
			patches := &statusPatches{}
			patches.applyThenFail.Store(true)
			w := started(patches.client(), status.WriterOptions{Workers: 2})
			running := schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning, Running: 2}
			decided(w, seen, running, nil)
			Expect(w.Flush(ctx)).To(MatchError(ContainSubstring(errTimedOut.Error())))
			Expect(current().Status).To(Equal(running), "the test's client did not apply the write")

			// The writer does not know the write landed: its base is still
			// the empty status. A patch from there to next would leave
			// running: 2 in place, and none would be sent back to it.
			patches.applyThenFail.Store(false)
			decided(w, seen, next, nil)
			Eventually(func() schedulingv1alpha1.PodGroupStatus { return current().Status }).Should(Equal(next))
		},
		Entry("a status without its field", phase(schedulingv1alpha1.PodGroupPending)),
		Entry("the status from before it", schedulingv1alpha1.PodGroupStatus{}),
	)

	// The writes outlast the cycle that decided them: a replica that
	// stopped leading meanwhile sends none.
	It("sends no write once the fence refuses, and remembers none of them", func() {
		lost := errors.New("lease not renewed within the deadline")
		var refusing atomic.Bool
		w := started(suite.Client, status.WriterOptions{Workers: 2, Fence: func() error {
			if refusing.Load() {
				return lost
			}
			return nil
		}})
		inqueue := phase(schedulingv1alpha1.PodGroupInqueue)
		decided(w, seen, inqueue, nil)
		Expect(w.Flush(ctx)).To(Succeed())
		landed := current()

		refusing.Store(true)
		decided(w, landed, phase(schedulingv1alpha1.PodGroupRunning), nil)
		Expect(w.Flush(ctx)).To(MatchError(And(ContainSubstring("1 status writes not sent: this replica may no longer lead"), ContainSubstring(lost.Error()))))
		Expect(current().Status).To(Equal(inqueue), "a write went out after the fence refused")
		Expect(w.OldPodGroupStatus(landed)).To(Equal(inqueue), "the dropped write's status stood in for the one that landed")
	})
})
