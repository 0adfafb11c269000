package conformance_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// What the kube-scheduler backend keeps beside its PodGroup: the Workload
// the PodGroup is made from, and the wait for a PodGroup that
// kube-controller-manager's protection still holds.
var _ = Describe("Gang backend kube-scheduler's Workload", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "workload")
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=" + kubenative.Name})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	workload := func(g Gomega, name string) *schedulingv1beta1.Workload {
		wl := &schedulingv1beta1.Workload{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, key(name), wl)).To(Succeed())
		return wl
	}
	minCount := func(g Gomega, wl *schedulingv1beta1.Workload) int32 {
		g.ExpectWithOffset(1, wl.Spec.PodGroupTemplates).To(HaveLen(1))
		t := wl.Spec.PodGroupTemplates[0]
		g.ExpectWithOffset(1, t.Name).To(Equal(kubenative.TemplateName))
		g.ExpectWithOffset(1, t.SchedulingPolicy.Gang).NotTo(BeNil())
		return t.SchedulingPolicy.Gang.MinCount
	}

	It("writes a Workload with one gang template that the PodGroup names, follows minCount, makes it again if deleted, and deletes it with a suspended job", func() {
		Expect(suite.Client.Create(ctx, testutil.MakePyTorchJob("pt", ns).
			Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj())).To(Succeed())
		var uid types.UID
		Eventually(func(g Gomega) {
			wl := workload(g, "pt")
			g.Expect(minCount(g, wl)).To(Equal(int32(3)))
			g.Expect(wl.Spec.ControllerRef).To(HaveValue(Equal(schedulingv1beta1.TypedLocalObjectReference{
				APIGroup: kubeflowv1.GroupVersion.Group, Kind: "PyTorchJob", Name: "pt",
			})))
			g.Expect(wl.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "PyTorchJob"), HaveField("Controller", HaveValue(BeTrue())))))
			uid = wl.UID
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			job := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, key("pt"), job)).To(Succeed())
			job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas = ptr.To[int32](4)
			g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(minCount(g, workload(g, "pt"))).To(Equal(int32(5))) }).Should(Succeed())

		Expect(suite.Client.Delete(ctx, workload(Default, "pt"))).To(Succeed())
		Eventually(func(g Gomega) {
			wl := workload(g, "pt")
			g.Expect(wl.UID).NotTo(Equal(uid))
			g.Expect(minCount(g, wl)).To(Equal(int32(5)))
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			job := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, key("pt"), job)).To(Succeed())
			job.Spec.RunPolicy.Suspend = ptr.To(true)
			g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(suite.Client.Get(ctx, key("pt"), &schedulingv1beta1.Workload{}))
		}).Should(BeTrue())
	})

	It("creates no pod of the next gang while the last gang's PodGroup is still being deleted, and says why", func() {
		job := testutil.MakeTFJob("regang", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 2).Obj()
		job.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypeWorker].RestartPolicy = "ExitCode"
		job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{
			RestartPolicy: kubeflowv1.GangRestartPolicyGang,
			Backoff:       &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](0), MaxSeconds: ptr.To[int32](0)},
		}
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		// Play kube-controller-manager's PodGroup protection, which this
		// API server does not run: a finalizer held until the test lifts it.
		const finalizer = "test.troupe.dev/protection"
		pg := &schedulingv1beta1.PodGroup{}
		Eventually(func(g Gomega) {
			g.Expect(suite.Client.Get(ctx, key("regang"), pg)).To(Succeed())
			controllerutil.AddFinalizer(pg, finalizer)
			g.Expect(suite.Client.Update(ctx, pg)).To(Succeed())
		}).Should(Succeed())
		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			all, err := testutil.JobPods(ctx, suite.Client, ns, "regang")
			g.Expect(err).NotTo(HaveOccurred())
			pods = testutil.Live(all)
			g.Expect(pods).To(HaveLen(2))
		}).Should(Succeed())
		Expect(testutil.FailPod(ctx, suite.Client, &pods[1], 137)).To(Succeed())

		// The teardown deleted the PodGroup, which stays, Terminating.
		Eventually(func(g Gomega) {
			g.Expect(suite.Client.Get(ctx, key("regang"), pg)).To(Succeed())
			g.Expect(pg.DeletionTimestamp).NotTo(BeNil())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, key("regang"), got)).To(Succeed())
			c := testutil.Condition(&got.Status, engine.ConditionGangScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("PodGroup regang of the previous gang is still being deleted"))
		}).Should(Succeed())
		nextGeneration := func() (int, error) {
			all, err := testutil.JobPods(ctx, suite.Client, ns, "regang")
			n := 0
			for _, p := range testutil.Live(all) {
				if p.Labels[kubeflowv1.GangGenerationLabel] == "1" {
					n++
				}
			}
			return n, err
		}
		Consistently(nextGeneration, quiet).Should(BeZero(), "no pod names the departing PodGroup")

		Eventually(func(g Gomega) {
			g.Expect(suite.Client.Get(ctx, key("regang"), pg)).To(Succeed())
			controllerutil.RemoveFinalizer(pg, finalizer)
			g.Expect(suite.Client.Update(ctx, pg)).To(Succeed())
		}).Should(Succeed())
		Eventually(nextGeneration).Should(Equal(2))
		fresh := &schedulingv1beta1.PodGroup{}
		Expect(suite.Client.Get(ctx, key("regang"), fresh)).To(Succeed())
		Expect(fresh.UID).NotTo(Equal(pg.UID))
	})
})
