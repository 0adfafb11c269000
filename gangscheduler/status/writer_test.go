package status_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// phase is a PodGroup status that differs from another only by its phase.
func phase(p schedulingv1alpha1.PodGroupPhase) schedulingv1alpha1.PodGroupStatus {
	return schedulingv1alpha1.PodGroupStatus{Phase: p}
}

// statusPatches wraps the suite's client: each status patch first waits
// for hold (if set) to let it through, then fails while failing is set.
type statusPatches struct {
	hold    chan struct{}
	failing atomic.Bool
}

var errRefused = errors.New("status patch refused by the test")

func (p *statusPatches) client() client.Client {
	c, err := client.NewWithWatch(suite.Env.Config, client.Options{Scheme: suite.Client.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if p.hold != nil {
				select {
				case <-p.hold:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if p.failing.Load() {
				return errRefused
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

var _ = Describe("the status writer", func() {
	var (
		ctx context.Context
		ns  string
		// seen is the PodGroup as it was created: an informer that has not
		// caught up with any write shows this.
		seen *schedulingv1alpha1.PodGroup
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "writer")
		seen = testutil.MakePodGroup("pg", ns).Obj()
		Expect(suite.Client.Create(ctx, seen)).To(Succeed())
	})

	current := func() *schedulingv1alpha1.PodGroup {
		pg := &schedulingv1alpha1.PodGroup{}
		ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKeyFromObject(seen), pg)).To(Succeed())
		return pg
	}
	write := func(w *status.Writer, over *schedulingv1alpha1.PodGroup, old, update schedulingv1alpha1.PodGroupStatus) *status.Batch {
		return w.Start(ctx, nil, []status.PodGroupWrite{{PodGroup: over, Old: old, Update: status.Update{Status: update}}}, nil)
	}

	It("answers with a status from the moment it is decided, before its write lands", func() {
		patches := &statusPatches{hold: make(chan struct{})}
		w := status.NewWriter(patches.client(), clientevents.NewFakeRecorder(10), 2)
		batch := write(w, seen, seen.Status, phase(schedulingv1alpha1.PodGroupInqueue))
		Expect(w.OldPodGroupStatus(seen)).To(Equal(phase(schedulingv1alpha1.PodGroupInqueue)))
		Consistently(batch.Done()).WithTimeout(200*time.Millisecond).ShouldNot(BeClosed(), "the write was held, yet the batch finished")
		Expect(current().Status.Phase).To(BeEmpty(), "the write was held, yet it landed")

		close(patches.hold)
		Expect(batch.Wait()).To(Succeed())
		Expect(current().Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))
	})

	// Two writes ahead of the informer: the second was decided over the
	// first, so while the informer shows the object from before either of
	// them, or the first's own version, the second is what stands.
	It("keeps its last write while the informer shows any version before it, and lets go once it shows that one", func() {
		w := status.NewWriter(suite.Client, clientevents.NewFakeRecorder(10), 2)
		Expect(write(w, seen, seen.Status, phase(schedulingv1alpha1.PodGroupInqueue)).Wait()).To(Succeed())
		afterFirst := current()
		Expect(afterFirst.ResourceVersion).NotTo(Equal(seen.ResourceVersion))

		old := w.OldPodGroupStatus(seen)
		Expect(old).To(Equal(phase(schedulingv1alpha1.PodGroupInqueue)))
		Expect(write(w, seen, old, phase(schedulingv1alpha1.PodGroupRunning)).Wait()).To(Succeed())

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

	It("gives way, when a write fails, to what it remembered before it", func() {
		patches := &statusPatches{}
		w := status.NewWriter(patches.client(), clientevents.NewFakeRecorder(10), 2)
		inqueue := phase(schedulingv1alpha1.PodGroupInqueue)
		Expect(write(w, seen, seen.Status, inqueue).Wait()).To(Succeed())

		patches.failing.Store(true)
		Expect(write(w, seen, inqueue, phase(schedulingv1alpha1.PodGroupRunning)).Wait()).To(MatchError(errRefused))
		Expect(w.OldPodGroupStatus(seen)).To(Equal(inqueue), "the failed write's status stood in for the one that landed")
		Expect(current().Status).To(Equal(inqueue))
	})

	// A batch outlasts its cycle: a replica that stopped leading meanwhile
	// sends nothing more of it.
	It("sends no write once the fence refuses, and remembers none of them", func() {
		patches := &statusPatches{}
		w := status.NewWriter(patches.client(), clientevents.NewFakeRecorder(10), 2)
		inqueue := phase(schedulingv1alpha1.PodGroupInqueue)
		Expect(write(w, seen, seen.Status, inqueue).Wait()).To(Succeed())

		lost := errors.New("lease not renewed within the deadline")
		batch := w.Start(ctx, func() error { return lost },
			[]status.PodGroupWrite{{PodGroup: seen, Old: inqueue, Update: status.Update{Status: phase(schedulingv1alpha1.PodGroupRunning)}}}, nil)
		Expect(batch.Wait()).To(MatchError(And(ContainSubstring("1 status writes not sent: this replica may no longer lead"), ContainSubstring(lost.Error()))))
		Expect(current().Status).To(Equal(inqueue), "a write went out after the fence refused")
		Expect(w.OldPodGroupStatus(seen)).To(Equal(inqueue), "the dropped write's status stood in for the one that landed")
	})

	It("remembers nothing of a first write that fails", func() {
		patches := &statusPatches{}
		patches.failing.Store(true)
		w := status.NewWriter(patches.client(), clientevents.NewFakeRecorder(10), 2)
		Expect(write(w, seen, seen.Status, phase(schedulingv1alpha1.PodGroupInqueue)).Wait()).To(MatchError(errRefused))
		Expect(w.OldPodGroupStatus(seen)).To(Equal(seen.Status))
	})
})
