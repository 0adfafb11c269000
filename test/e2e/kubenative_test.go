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
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=" + kubenative.Name})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})
	AfterEach(func() { sched.check() })

	// A CPU-only master and GPU workers, as PyTorch jobs often come.
	pytorchJob := func(name, ns string, workers int32) *kubeflowv1.PyTorchJob {
		return testutil.MakePyTorchJob(name, ns).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, cpuMaster(kubeflowv1.PyTorchJobDefaultContainerName)).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, gpuWorker(workers, kubeflowv1.PyTorchJobDefaultContainerName, "4")).
			Obj()
	}

	It("binds every pod of a mixed PyTorchJob whose gang fits, each in its pool, and marks the PodGroup scheduled", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-fits")
		pools(ctx, ns, 1, 2, 4)
		Expect(suite.Client.Create(ctx, pytorchJob("fits", ns, 2))).To(Succeed())

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

	It("binds no pod of a PyTorchJob whose gang does not fit, and says why on the job", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-too-big")
		// 12 GPUs for 3 workers of 4, but 6 a node: the master and two
		// workers fit, the third does not, so none may bind.
		pools(ctx, ns, 1, 2, 6)
		Expect(suite.Client.Create(ctx, pytorchJob("too-big", ns, 3))).To(Succeed())

		var why string
		Eventually(func(g Gomega) {
			got := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "too-big"}, got)).To(Succeed())
			c := testutil.Condition(&got.Status, engine.ConditionGangScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(engine.ReasonGangUnschedulable))
			why = c.Message
			// kube-scheduler's verdict on the PodGroup: three of the four
			// fit. (In 1.37 it does not say what the fourth lacks.)
			g.Expect(why).To(ContainSubstring("minCount (4) cannot be satisfied: 3 scheduled"))
		}).WithTimeout(bindTimeout).Should(Succeed())
		AddReportEntry("the job's GangScheduled message", why)
		// All or nothing, for several of kube-scheduler's retries.
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, jobPods("too-big"), 4) }).
			WithTimeout(15 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("restarts a PyTorchJob whose worker failed as a whole gang, which kube-scheduler binds whole again", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "native-regang")
		pools(ctx, ns, 1, 2, 4)
		job := pytorchJob("regang", ns, 2)
		for _, spec := range job.Spec.PyTorchReplicaSpecs {
			spec.RestartPolicy = "ExitCode"
		}
		job.Spec.RunPolicy.GangPolicy = gangRestart()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		first := expectAllBound(ctx, ns, jobPods("regang"), 3)
		firstGroup := &schedulingv1beta1.PodGroup{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regang"}, firstGroup)).To(Succeed())

		expectGangRestarted(ctx, ns, "regang", peers.KubeSchedulerName, first, 2)
		pg := &schedulingv1beta1.PodGroup{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regang"}, pg)).To(Succeed())
		Expect(pg.UID).NotTo(Equal(firstGroup.UID), "the next gang is a new PodGroup, which kube-scheduler places afresh")
	})
})
