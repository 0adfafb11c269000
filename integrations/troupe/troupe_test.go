package troupe_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var _ = Describe("the troupe backend (--gang-scheduler-name=troupe)", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "troupe")
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe", "--enable-scheme=tfjob"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})

	podGroup := func(g Gomega, name string) *schedulingv1alpha1.PodGroup {
		pg := &schedulingv1alpha1.PodGroup{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg)).To(Succeed())
		return pg
	}
	// A TFJob with a CPU-only chief on CPU nodes and two GPU workers.
	mixedJob := func(name string) *kubeflowv1.TFJob {
		return testutil.MakeTFJob(name, ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeChief, testutil.MakeReplica(1, "tensorflow").
				Request(corev1.ResourceCPU, "2").NodeSelector("node-pool", "cpu").Obj()).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, testutil.MakeReplica(2, "tensorflow").
				Request(corev1.ResourceCPU, "4").Limit("nvidia.com/gpu", "2").Obj()).
			Obj()
	}

	It("creates one PodGroup per job and decorates every pod with its group and role", func() {
		job := mixedJob("mixed")
		job.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{Queue: "research", PriorityClass: "high", ScheduleTimeoutSeconds: ptr.To[int32](120)}
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		var pg *schedulingv1alpha1.PodGroup
		Eventually(func(g Gomega) { pg = podGroup(g, "mixed") }).Should(Succeed())
		Expect(pg.Spec.MinMember).To(Equal(int32(3)))
		Expect(pg.Spec.MinTaskMember).To(Equal(map[string]int32{"chief": 1, "worker": 2}))
		Expect(pg.Spec.MinResources.Cpu().Cmp(resource.MustParse("10"))).To(BeZero())
		Expect(pg.Spec.MinResources.Name("nvidia.com/gpu", resource.DecimalSI).Cmp(resource.MustParse("4"))).To(BeZero())
		Expect(pg.Spec.Queue).To(Equal("research"))
		Expect(pg.Spec.PriorityClassName).To(Equal("high"))
		Expect(pg.Spec.ScheduleTimeoutSeconds).To(Equal(ptr.To[int32](120)))
		Expect(pg.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "TFJob"), HaveField("Name", "mixed"), HaveField("Controller", Equal(ptr.To(true))))))

		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "mixed")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Spec.SchedulerName).To(Equal(troupe.SchedulerName))
				g.Expect(p.Annotations).To(HaveKeyWithValue(schedulingv1alpha1.PodGroupNameAnnotation, "mixed"))
				g.Expect(p.Annotations).To(HaveKeyWithValue(schedulingv1alpha1.TaskSpecAnnotation, p.Labels[kubeflowv1.ReplicaTypeLabel]),
					"every pod carries its own role, so master and workers never share predicate-cache entries")
			}
		}).Should(Succeed())
	})

	It("defaults the queue, follows spec changes, and re-creates a deleted PodGroup", func() {
		Expect(suite.Client.Create(ctx, mixedJob("lifecycle"))).To(Succeed())
		var pg *schedulingv1alpha1.PodGroup
		Eventually(func(g Gomega) { pg = podGroup(g, "lifecycle") }).Should(Succeed())
		Expect(pg.Spec.Queue).To(Equal(schedulingv1alpha1.DefaultQueueName))

		Eventually(func(g Gomega) {
			job := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lifecycle"}, job)).To(Succeed())
			job.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypeWorker].Replicas = ptr.To[int32](4)
			g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			pg := podGroup(g, "lifecycle")
			g.Expect(pg.Spec.MinMember).To(Equal(int32(5)))
			g.Expect(pg.Spec.MinTaskMember).To(HaveKeyWithValue("worker", int32(4)))
		}).Should(Succeed())

		oldUID := pg.UID
		Expect(suite.Client.Delete(ctx, pg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(podGroup(g, "lifecycle").UID).NotTo(Equal(oldUID))
		}).Should(Succeed())
	})

	It("deletes the PodGroup of a finished or suspended job, so it holds no queue capacity", func() {
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("done", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("paused", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Eventually(func(g Gomega) { podGroup(g, "done"); podGroup(g, "paused") }).Should(Succeed())

		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			var err error
			pods, err = testutil.JobPods(ctx, suite.Client, ns, "done")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(1))
		}).Should(Succeed())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())

		Eventually(func(g Gomega) {
			job := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "paused"}, job)).To(Succeed())
			job.Spec.RunPolicy.Suspend = ptr.To(true)
			g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
		}).Should(Succeed())

		for _, name := range []string{"done", "paused"} {
			Eventually(func() bool {
				err := suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &schedulingv1alpha1.PodGroup{})
				return apierrors.IsNotFound(err)
			}).Should(BeTrue(), "PodGroup %s", name)
		}
		Consistently(func() bool {
			err := suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "done"}, &schedulingv1alpha1.PodGroup{})
			return apierrors.IsNotFound(err)
		}, 2*time.Second).Should(BeTrue(), "a finished job's PodGroup is not re-created")
	})

	It("leaves a schedulerName the user chose", func() {
		job := testutil.MakeTFJob("custom", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj()
		job.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypeWorker].Template.Spec.SchedulerName = "my-scheduler"
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "custom")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Spec.SchedulerName).To(Equal("my-scheduler"))
			g.Expect(pods[0].Annotations).To(HaveKeyWithValue(schedulingv1alpha1.PodGroupNameAnnotation, "custom"))
		}).Should(Succeed())
	})
})

var _ = Describe("troupe.Backend.CheckInstalled", func() {
	It("names the CRD to install when the cluster does not serve PodGroups", func() {
		err := troupe.Backend{}.CheckInstalled(meta.NewDefaultRESTMapper(nil))
		Expect(err).To(MatchError(ContainSubstring("install config/crd/bases/scheduling.troupe.dev_podgroups.yaml")))
	})
	It("passes against an API server with the CRD", func() {
		Expect(troupe.Backend{}.CheckInstalled(suite.Client.RESTMapper())).To(Succeed())
	})
})
