//go:build e2e

package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Kubernetes' own gang scheduling: upstream kube-scheduler v1.37 (built by
// hack/controlplane.sh beside the API server) with the GenericWorkload
// gate, which runs the GangScheduling plugin in its default profile, on
// an API server that serves the Workload API. Nothing else is installed.
var _ = Describe("kube-scheduler's own gang scheduling (the Workload API)", Ordered, func() {
	var sched *peer

	BeforeAll(func(ctx SpecContext) {
		sched = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartKubeScheduler(context.Background(), peers.KubeSchedulerOptions{Options: o, GangScheduling: true})
		}, peers.KubeSchedulerBinary)
		startOperator("--gang-scheduler-name=" + kubenative.Name)
	})
	AfterEach(func() { sched.check() })

	It("binds every pod of a mixed PyTorchJob whose gang fits, each in its pool, and marks the PodGroup scheduled", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-fits")
		pools(ctx, ns, 1, 2, 4)
		Expect(suite.Client.Create(ctx, mixedPyTorchJob("fits", ns, 2))).To(Succeed())

		pods := expectAllBound(ctx, ns, jobPods("fits"), 3)
		expectPlaced(ctx, peers.KubeSchedulerName, pods)
		for _, p := range pods {
			Expect(p.Spec.SchedulingGroup).To(HaveValue(HaveField("PodGroupName", HaveValue(Equal("fits")))))
		}
		// kube-scheduler's own verdict on the gang, which the job's
		// kubectl troupe status shows as the PodGroup's phase.
		Eventually(func(g Gomega) {
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits"}, pg)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)).To(BeTrue())
		}).WithTimeout(bindTimeout).Should(Succeed())
	})

	It("keeps a second PyTorchJob that does not fit beside the first pending with no pod bound, and says why on the job", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-second")
		// 8 GPUs: the first job's two workers take them all. The second
		// job's master would fit on the CPU node, its workers nowhere, so
		// none of its pods may bind.
		pools(ctx, ns, 1, 2, 4)
		Expect(suite.Client.Create(ctx, mixedPyTorchJob("first", ns, 2))).To(Succeed())
		expectAllBound(ctx, ns, jobPods("first"), 3)
		Expect(suite.Client.Create(ctx, mixedPyTorchJob("second", ns, 2))).To(Succeed())

		var why string
		Eventually(func(g Gomega) {
			got := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, got)).To(Succeed())
			c := testutil.Condition(&got.Status, engine.ConditionGangScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(engine.ReasonGangUnschedulable))
			why = c.Message
			// kube-scheduler's verdict on the PodGroup: fewer than three
			// fit. (In 1.37 it does not say what the others lack.)
			g.Expect(why).To(ContainSubstring("minCount (3) cannot be satisfied"))
		}).WithTimeout(bindTimeout).Should(Succeed())
		AddReportEntry("the job's GangScheduled message", why)
		// All or nothing, for several of kube-scheduler's retries.
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, jobPods("second"), 3) }).
			WithTimeout(15 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("restarts a PyTorchJob whose worker failed as a whole gang, which kube-scheduler binds whole again", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-regang")
		pools(ctx, ns, 1, 2, 4)
		Expect(suite.Client.Create(ctx, gangRestartJob(mixedPyTorchJob("regang", ns, 2)))).To(Succeed())
		first := expectAllBound(ctx, ns, jobPods("regang"), 3)
		firstGroup := &schedulingv1beta1.PodGroup{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regang"}, firstGroup)).To(Succeed())

		expectGangRestarted(ctx, ns, "regang", peers.KubeSchedulerName, first, 2)
		pg := &schedulingv1beta1.PodGroup{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regang"}, pg)).To(Succeed())
		Expect(pg.UID).NotTo(Equal(firstGroup.UID), "the next gang is a new PodGroup, which kube-scheduler places afresh")
	})
})
