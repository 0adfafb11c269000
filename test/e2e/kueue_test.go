//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Kueue in front of Troupe: Kueue's manager (a process built from its
// module) queues and admits PyTorchJobs through its kubeflow.org/pytorchjob
// integration; the operator, with the troupe backend, turns an admitted
// job into a gang, and troupe-scheduler places it.
//
// Kueue's webhooks are not registered with the API server (an API server
// without a cluster network cannot reach a webhook Service; see
// peers.InstallKueue), so the jobs are created suspended, as Kueue's
// mutating webhook would make them.
var _ = Describe("Kueue in front of Troupe", Ordered, func() {
	var kq, vc, cs *peer

	BeforeAll(func(ctx SpecContext) {
		bin, err := peers.KueueBinary()
		Expect(err).NotTo(HaveOccurred())
		Expect(peers.InstallKueue(ctx, suite.Env.Config, peers.KueueCRDDir(bin))).To(Succeed())
		Expect(kueue.AddToScheme(suite.Client.Scheme())).To(Succeed())
		kq = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartKueue(context.Background(), peers.KueueOptions{
				Options:          o,
				Frameworks:       []string{"kubeflow.org/pytorchjob", "kubeflow.org/tfjob"},
				WaitForPodsReady: 10 * time.Minute,
			})
		}, peers.KueueBinary)
		// The other backends' schedulers, for jobs that choose them.
		Expect(peers.InstallVolcano(ctx, suite.Env.Config)).To(Succeed())
		Expect(peers.InstallCoscheduling(suite.Env.Config)).To(Succeed())
		vc = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartVolcano(context.Background(), peers.VolcanoOptions{Options: o})
		}, peers.VolcanoBinary)
		cs = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartCoscheduling(context.Background(), peers.CoschedulingOptions{Options: o})
		}, peers.CoschedulingBinary)
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=" + troupe.Name, "--enable-scheme=pytorchjob,tfjob"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
		s, err := testutil.StartScheduler(suite.Env.Config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)
	})
	AfterEach(func() {
		for _, p := range []*peer{kq, vc, cs} {
			p.check()
		}
	})

	// queue makes, for the spec's namespace, the ResourceFlavors of its
	// pools (cpu: node-pool=cpu; gpu: node-pool=gpu and the GPU taint
	// tolerated), a ClusterQueue with gpus GPUs of quota, preempting
	// lower priorities within it, and the LocalQueue "team" in ns.
	queue := func(ctx context.Context, ns string, gpus int) {
		cpu := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: ns + "-cpu"}, Spec: kueue.ResourceFlavorSpec{
			NodeLabels: map[string]string{poolLabel: cpuPool},
		}}
		gpu := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: ns + "-gpu"}, Spec: kueue.ResourceFlavorSpec{
			NodeLabels:  map[string]string{poolLabel: gpuPool},
			Tolerations: []corev1.Toleration{{Key: gpuTaint.Key, Operator: corev1.TolerationOpExists, Effect: gpuTaint.Effect}},
		}}
		quota := func(name corev1.ResourceName, q string) kueue.ResourceQuota {
			return kueue.ResourceQuota{Name: name, NominalQuota: resource.MustParse(q)}
		}
		cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Preemption:        &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, testutil.GPU},
				Flavors: []kueue.FlavorQuotas{
					{Name: kueue.ResourceFlavorReference(cpu.Name), Resources: []kueue.ResourceQuota{quota(corev1.ResourceCPU, "8"), quota(testutil.GPU, "0")}},
					{Name: kueue.ResourceFlavorReference(gpu.Name), Resources: []kueue.ResourceQuota{quota(corev1.ResourceCPU, "64"), quota(testutil.GPU, fmt.Sprint(gpus))}},
				},
			}},
		}}
		lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns}, Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}}
		for _, obj := range []client.Object{cpu, gpu, cq, lq} {
			Expect(suite.Client.Create(ctx, obj)).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, obj := range []client.Object{lq, cq, gpu, cpu} {
				Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, obj))).To(Succeed())
			}
		})
	}
	// job is a PyTorchJob in the LocalQueue "team", created suspended: a
	// CPU master and workers of gpus GPUs, without node selectors or
	// tolerations (the flavors bring them).
	job := func(ctx context.Context, ns, name string, workers int32, gpus, class string, mutate ...func(*kubeflowv1.PyTorchJob)) {
		j := testutil.MakePyTorchJob(name, ns).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, testutil.MakeReplica(1, "pytorch").Request(corev1.ResourceCPU, "1").Obj()).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, testutil.MakeReplica(workers, "pytorch").Request(corev1.ResourceCPU, "2").Limit(testutil.GPU, gpus).Obj()).
			Suspend(true).Obj()
		j.Labels = map[string]string{kueueconstants.QueueLabel: "team"}
		if class != "" {
			j.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{PriorityClass: class}
		}
		for _, m := range mutate {
			m(j)
		}
		Expect(suite.Client.Create(ctx, j)).To(Succeed())
	}
	getJob := func(ctx context.Context, g Gomega, ns, name string) *kubeflowv1.PyTorchJob {
		j := &kubeflowv1.PyTorchJob{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j)).To(Succeed())
		return j
	}
	// workload is Kueue's Workload of the job.
	workload := func(ctx context.Context, g Gomega, ns, name string) *kueue.Workload {
		var list kueue.WorkloadList
		g.Expect(suite.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.Kind == kubeflowv1.PyTorchJobKind && ref.Name == name {
				return &list.Items[i]
			}
		}
		g.Expect(fmt.Errorf("no Workload of PyTorchJob %s/%s yet", ns, name)).NotTo(HaveOccurred())
		return nil
	}
	// waitsSuspended checks for a while that the job stays suspended with
	// no pod and no PodGroup: Kueue holds it, and Troupe makes nothing.
	waitsSuspended := func(ctx context.Context, ns, name string) {
		Consistently(func(g Gomega) {
			g.Expect(getJob(ctx, g, ns, name).Spec.RunPolicy.Suspend).To(HaveValue(BeTrue()))
			g.Expect(listPods(ctx, g, ns, jobPods(name), 0)).To(BeEmpty())
			err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &schedulingv1alpha1.PodGroup{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PodGroup of a suspended job: %v", err)
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	// confirmDeletions plays the kubelet: a bound pod that is deleted stays
	// Terminating until its kubelet confirms, and envtest has none.
	confirmDeletions := func(ctx context.Context, g Gomega, ns string) {
		var pods corev1.PodList
		g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp != nil {
				g.Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
			}
		}
	}
	// deleteJob deletes a job and, as the garbage collector would (envtest
	// runs none), its pods and PodGroup.
	deleteJob := func(ctx context.Context, ns, name string) {
		Expect(suite.Client.Delete(ctx, getJob(ctx, Default, ns, name))).To(Succeed())
		Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), jobPods(name), client.GracePeriodSeconds(0))).To(Succeed())
		pg := &schedulingv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, pg))).To(Succeed())
	}
	runAll := func(ctx context.Context, pods []corev1.Pod) {
		for i := range pods {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
		}
	}

	It("admits a job within quota, which Troupe places whole where the flavors say, and holds the next until quota frees", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "kueue-quota")
		pools(ctx, ns, 1, 2, 4)
		queue(ctx, ns, 8)

		job(ctx, ns, "first", 2, "4", "")
		pods := expectAllBound(ctx, ns, jobPods("first"), 3)
		// The master on the CPU pool, the workers on the tainted GPU pool:
		// only Kueue's flavors (node selector, toleration) put them there.
		expectPlaced(ctx, troupe.SchedulerName, pods)
		for _, p := range pods {
			Expect(p.Spec.NodeSelector).To(HaveKey(poolLabel), p.Name)
		}
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(workload(ctx, g, ns, "first").Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue())
		}).Should(Succeed())

		job(ctx, ns, "second", 2, "4", "")
		Eventually(func(g Gomega) { workload(ctx, g, ns, "second") }).Should(Succeed())
		waitsSuspended(ctx, ns, "second")
		Expect(meta.IsStatusConditionTrue(workload(ctx, Default, ns, "second").Status.Conditions, kueue.WorkloadQuotaReserved)).To(BeFalse())

		deleteJob(ctx, ns, "first")
		expectPlaced(ctx, troupe.SchedulerName, expectAllBound(ctx, ns, jobPods("second"), 3))
	})

	DescribeTable("with another gang backend, the flavors Kueue writes into the pod templates are honoured",
		func(ctx SpecContext, backend, scheduler string) {
			ns := suite.NewNamespace(ctx, "kueue-"+backend)
			pools(ctx, ns, 1, 2, 4)
			queue(ctx, ns, 8)
			job(ctx, ns, "other", 2, "4", "", func(j *kubeflowv1.PyTorchJob) {
				j.Annotations = map[string]string{integrations.GangSchedulerAnnotation: backend}
			})
			expectPlaced(ctx, scheduler, expectAllBound(ctx, ns, jobPods("other"), 3))
		},
		Entry("Volcano", volcano.Name, peers.VolcanoSchedulerName),
		Entry("Coscheduling", schedulerplugins.Name, peers.CoschedulingSchedulerName),
	)

	It("admits a TFJob too, through Kueue's TFJob integration, and Troupe places it whole", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "kueue-tfjob")
		pools(ctx, ns, 1, 2, 4)
		queue(ctx, ns, 8)
		tf := testutil.MakeTFJob("tf", ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeChief, testutil.MakeReplica(1, "tensorflow").Request(corev1.ResourceCPU, "1").Obj()).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, testutil.MakeReplica(2, "tensorflow").Request(corev1.ResourceCPU, "2").Limit(testutil.GPU, "4").Obj()).
			Suspend(true).Obj()
		tf.Labels = map[string]string{kueueconstants.QueueLabel: "team"}
		Expect(suite.Client.Create(ctx, tf)).To(Succeed())
		pods := expectAllBound(ctx, ns, jobPods("tf"), 3)
		for _, p := range pods {
			want := gpuPool
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "chief" {
				want = cpuPool
			}
			Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(poolLabel, want), p.Name)
		}
	})

	It("marks the workload's pods ready only once the whole gang runs", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "kueue-ready")
		pools(ctx, ns, 1, 1, 4)
		queue(ctx, ns, 8)

		// Kueue admits 8 GPUs; one node has 4: the gang cannot be placed.
		job(ctx, ns, "big", 2, "4", "")
		Eventually(func(g Gomega) {
			g.Expect(getJob(ctx, g, ns, "big").Spec.RunPolicy.Suspend).To(HaveValue(BeFalse()))
			listPods(ctx, g, ns, jobPods("big"), 3)
		}).Should(Succeed())
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, jobPods("big"), 3) }).WithTimeout(3 * time.Second).Should(Succeed())

		// Room for it: it is placed whole; with its master running and its
		// workers still starting, the job does not run yet, and Kueue does
		// not count its pods ready.
		more := testutil.MakeNode(ns+"-gpu-more").Capacity("32", "128Gi").GPU(4).Label(poolLabel, gpuPool).Obj()
		more.Spec.Taints = []corev1.Taint{gpuTaint}
		Expect(testutil.CreateReadyNode(ctx, suite.Client, more)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, more))).To(Succeed()) })
		pods := expectAllBound(ctx, ns, jobPods("big"), 3)
		master := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Labels[kubeflowv1.ReplicaTypeLabel] == "master" })
		runAll(ctx, pods[master:master+1])
		Consistently(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(workload(ctx, g, ns, "big").Status.Conditions, kueue.WorkloadPodsReady)).To(BeFalse())
		}).WithTimeout(3 * time.Second).Should(Succeed())

		runAll(ctx, pods)
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(workload(ctx, g, ns, "big").Status.Conditions, kueue.WorkloadPodsReady)).To(BeTrue())
		}).Should(Succeed())
	})

	It("tears a job Kueue preempts down to nothing bound, runs the preemptor, and resumes the preempted job", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "kueue-preempt")
		pools(ctx, ns, 1, 2, 4)
		queue(ctx, ns, 8)
		for name, value := range map[string]int32{"low": 10, "high": 1000} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Value: value}
			Expect(suite.Client.Create(ctx, pc)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(suite.Client.Delete(ctx, pc)).To(Succeed()) })
		}

		job(ctx, ns, "low", 2, "4", ns+"-low")
		runAll(ctx, expectAllBound(ctx, ns, jobPods("low"), 3))

		job(ctx, ns, "high", 2, "4", ns+"-high")
		Eventually(func(g Gomega) {
			confirmDeletions(ctx, g, ns)
			g.Expect(getJob(ctx, g, ns, "low").Spec.RunPolicy.Suspend).To(HaveValue(BeTrue()))
			g.Expect(listPods(ctx, g, ns, jobPods("low"), 0)).To(BeEmpty(), "nothing of the preempted gang is left")
			g.Expect(meta.IsStatusConditionTrue(workload(ctx, g, ns, "low").Status.Conditions, kueue.WorkloadPreempted)).To(BeTrue())
		}).WithTimeout(bindTimeout).Should(Succeed())
		waitsSuspended(ctx, ns, "low")
		expectPlaced(ctx, troupe.SchedulerName, expectAllBound(ctx, ns, jobPods("high"), 3))

		deleteJob(ctx, ns, "high")
		expectPlaced(ctx, troupe.SchedulerName, expectAllBound(ctx, ns, jobPods("low"), 3))
		Expect(ptr.Deref(getJob(ctx, Default, ns, "low").Spec.RunPolicy.Suspend, true)).To(BeFalse())
	})
})
