package integration

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	poolLabel = "node-pool"
	cpuPool   = "cpu"
	gpuPool   = "gpu"
)

// A small mixed cluster: two CPU-only nodes and two nodes with 8 GPUs each.
var _ = Describe("TFJob and PyTorchJob gangs through the operator and troupe-scheduler", Ordered, func() {
	ctx := context.Background()

	BeforeAll(func() {
		for i := range 2 {
			cpu := testutil.MakeNode(fmt.Sprintf("cpu-%d", i)).Capacity("16", "64Gi").Label(poolLabel, cpuPool).Obj()
			Expect(testutil.CreateReadyNode(ctx, suite.Client, cpu)).To(Succeed())
			gpu := testutil.MakeNode(fmt.Sprintf("gpu-%d", i)).Capacity("32", "256Gi").GPU(8).Label(poolLabel, gpuPool).Obj()
			Expect(testutil.CreateReadyNode(ctx, suite.Client, gpu)).To(Succeed())
			// The other containers' schedulers must not find these nodes,
			// nor this container's pending gangs.
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, cpu))).To(Succeed())
				Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, gpu))).To(Succeed())
			})
		}
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)

		opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		skipNameValidation := func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) }
		go func() { done <- app.Run(runCtx, suite.Env.Config, opts, skipNameValidation) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done, 30*time.Second).Should(Receive(BeNil()))
		})
	})

	boundPods := func(g Gomega, ns, job string) []corev1.Pod {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, job)
		g.Expect(err).NotTo(HaveOccurred())
		return pods
	}
	poolOf := func(nodeName string) string {
		node := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
		return node.Labels[poolLabel]
	}

	It("places a CPU-only chief on a CPU node and the GPU workers on GPU nodes, then runs", func() {
		ns := suite.NewNamespace(ctx, "mixed")
		DeferCleanup(deleteGangs, ctx, ns)
		job := testutil.MakeTFJob("mixed", ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeChief, testutil.MakeReplica(1, "tensorflow").
				Request(corev1.ResourceCPU, "2").NodeSelector(poolLabel, cpuPool).Obj()).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, testutil.MakeReplica(4, "tensorflow").
				Request(corev1.ResourceCPU, "4").Limit(testutil.GPU, "2").Obj()).
			Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = boundPods(g, ns, "mixed")
			g.Expect(pods).To(HaveLen(5))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound", p.Name)
			}
		}).Should(Succeed())
		gpusPerNode := map[string]int{}
		for _, p := range pods {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "chief" {
				Expect(poolOf(p.Spec.NodeName)).To(Equal(cpuPool), "the CPU-only chief must not take a GPU node")
				continue
			}
			Expect(poolOf(p.Spec.NodeName)).To(Equal(gpuPool))
			gpusPerNode[p.Spec.NodeName] += 2
		}
		Expect(gpusPerNode).To(HaveLen(1), "the workers bin-pack onto one GPU node, keeping the other whole")

		Eventually(func(g Gomega) {
			pg := &schedulingv1alpha1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mixed"}, pg)).To(Succeed())
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		}).Should(Succeed())
		for i := range pods {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			got := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mixed"}, got)).To(Succeed())
			g.Expect(testutil.ConditionTrue(&got.Status, "Running")).To(BeTrue())
		}).Should(Succeed())
	})

	It("binds one of two gangs that cannot both fit, whole, and nothing of the other", func() {
		// The two GPU nodes have 16 GPUs: each of these jobs wants 12, so
		// only one of them fits at a time.
		ns := suite.NewNamespace(ctx, "contend")
		DeferCleanup(deleteGangs, ctx, ns)
		for _, name := range []string{"first", "second"} {
			job := testutil.MakePyTorchJob(name, ns).
				ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, testutil.MakeReplica(1, "pytorch").
					Request(corev1.ResourceCPU, "1").Limit(testutil.GPU, "2").Obj()).
				ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, testutil.MakeReplica(5, "pytorch").
					Request(corev1.ResourceCPU, "1").Limit(testutil.GPU, "2").Obj()).
				Obj()
			Expect(suite.Client.Create(ctx, job)).To(Succeed())
		}
		boundCount := func(g Gomega, job string) int {
			n := 0
			for _, p := range boundPods(g, ns, job) {
				if p.Spec.NodeName != "" {
					n++
				}
			}
			return n
		}
		Eventually(func(g Gomega) {
			g.Expect(boundCount(g, "first") + boundCount(g, "second")).To(Equal(6))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			counts := []int{boundCount(g, "first"), boundCount(g, "second")}
			g.Expect(counts).To(ConsistOf(6, 0), "a gang is bound whole or not at all")
		}, 3*time.Second).Should(Succeed())
	})
})
