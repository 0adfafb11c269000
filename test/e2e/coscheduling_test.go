//go:build e2e

package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// permitWait is how long Coscheduling lets the placed pods of an incomplete
// gang wait at Permit; the all-or-nothing check watches several times as
// long.
const permitWait = 5 * time.Second

var _ = Describe("kube-scheduler with scheduler-plugins' Coscheduling", Ordered, func() {
	var sched *peer

	BeforeAll(func(ctx SpecContext) {
		Expect(peers.InstallCoscheduling(suite.Env.Config)).To(Succeed())
		sched = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartCoscheduling(context.Background(), peers.CoschedulingOptions{Options: o, PermitWaitingTime: permitWait})
		}, peers.CoschedulingBinary)
		startOperator("--gang-scheduler-name=" + schedulerplugins.Name)
	})
	AfterEach(func() { sched.check() })

	It("binds every pod of a PyTorchJob whose gang fits, each in its pool", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "cosched-fits")
		pools(ctx, ns, 1, 2, 4)
		job := mixedPyTorchJob("fits", ns, 2)
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		expectPlaced(ctx, peers.CoschedulingSchedulerName, expectAllBound(ctx, ns, jobPods("fits"), 3))
	})

	It("restarts a PyTorchJob whose worker failed as a whole gang, which Coscheduling binds whole again", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "cosched-regang")
		pools(ctx, ns, 1, 2, 4)
		Expect(suite.Client.Create(ctx, gangRestartJob(mixedPyTorchJob("regang", ns, 2)))).To(Succeed())

		first := expectAllBound(ctx, ns, jobPods("regang"), 3)
		expectGangRestarted(ctx, ns, "regang", peers.CoschedulingSchedulerName, first, 2)
	})

	It("binds no pod of a PyTorchJob whose gang fits in sum but not node by node, and says why on the job", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "cosched-too-big")
		// 12 GPUs for 3 workers of 4, but 6 a node: the master and two
		// workers fit, and wait at Permit for a third that never comes.
		pools(ctx, ns, 1, 2, 6)
		job := mixedPyTorchJob("too-big", ns, 3)
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		// Coscheduling has rejected the gang, and the job says so in its
		// words, role by role: which of them depends on when it last tried
		// each pod (before all siblings existed, as a sibling failed, or
		// when the gang was sent back from Permit).
		var why string
		Eventually(func(g Gomega) {
			got := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
			c := testutil.Condition(&got.Status, engine.ConditionGangScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(engine.ReasonGangUnschedulable))
			why = c.Message
			g.Expect(why).To(ContainSubstring("worker: "))
			g.Expect(why).To(Or(
				ContainSubstring("cannot find enough sibling pods"),
				ContainSubstring("gets rejected due to"),
				ContainSubstring("optimistic rejection in PostFilter"),
			))
		}).WithTimeout(bindTimeout).Should(Succeed())
		AddReportEntry("the job's GangScheduled message", why)
		// The reason underneath: with its siblings held at Permit, one
		// worker finds no node with 4 free GPUs. A pod's PodScheduled
		// condition holds only its latest verdict, which may be a sibling's
		// rejection by then, so this is read from the pods' conditions and
		// from kube-scheduler's FailedScheduling events, which keep each.
		Eventually(func(g Gomega) {
			var verdicts []string
			for _, p := range listPods(ctx, g, ns, jobPods("too-big"), 4) {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
						verdicts = append(verdicts, c.Message)
					}
				}
			}
			var events corev1.EventList
			g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			for _, e := range events.Items {
				if e.Reason == "FailedScheduling" {
					verdicts = append(verdicts, e.Message)
				}
			}
			g.Expect(verdicts).To(ContainElement(ContainSubstring("Insufficient nvidia.com/gpu")))
		}).WithTimeout(bindTimeout).Should(Succeed())
		// All or nothing, across several Permit timeouts (a binding is
		// never undone, so none now means none ever).
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, jobPods("too-big"), 4) }).
			WithTimeout(3 * permitWait).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
