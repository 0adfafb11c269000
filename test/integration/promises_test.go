package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// The scheduler's promises kept through the public surface, a PyTorchJob
// manifest in: no gang partly on the cluster for longer than the
// partial-gang grace period, whatever happens after the decision, and
// every placement rule of the pods honoured among the gang's own members.
// Each spec has its own namespace and nodes, labelled with the namespace,
// and its jobs select those nodes alone.
var _ = Describe("The scheduler's promises: PyTorchJobs through the operator and troupe-scheduler", Ordered, ContinueOnFailure, func() {
	const (
		poolKey = "troupe.test/pool"
		grace   = "--partial-gang-grace-period=2s"
	)
	ctx := context.Background()

	BeforeAll(func() {
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})

	var ns string
	BeforeEach(func() {
		ns = suite.NewNamespace(ctx, "partial")
		// envtest runs no kubelet: a bound pod that is deleted stays
		// Terminating until something confirms its end. Play that part,
		// so that deleted members go and their controller recreates them.
		stop := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				var pods corev1.PodList
				if err := suite.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
					continue
				}
				for i := range pods.Items {
					if p := &pods.Items[i]; p.DeletionTimestamp != nil {
						_ = client.IgnoreNotFound(suite.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))
					}
				}
			}
		}()
		DeferCleanup(func() { close(stop) })
	})

	// node creates a Ready node of this spec's pool ("cpu" or "gpu").
	node := func(name, kind string, gpus int) *corev1.Node {
		b := testutil.MakeNode(ns+"-"+name).Capacity("16", "64Gi").Label(poolKey, ns+"-"+kind)
		if gpus > 0 {
			b.GPU(gpus)
		}
		n := b.Obj()
		Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, n))).To(Succeed()) })
		return n
	}
	// job is a PyTorchJob of a CPU-only master and workers of gpus GPUs
	// each, on this spec's nodes; worker changes the workers' replica.
	job := func(name string, workers int32, gpus string, worker func(*testutil.ReplicaBuilder)) *kubeflowv1.PyTorchJob {
		w := testutil.MakeReplica(workers, "pytorch").Request(corev1.ResourceCPU, "1").Limit(testutil.GPU, gpus).
			NodeSelector(poolKey, ns+"-gpu").TerminationGracePeriod(0)
		if worker != nil {
			worker(w)
		}
		j := testutil.MakePyTorchJob(name, ns).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, testutil.MakeReplica(1, "pytorch").
				Request(corev1.ResourceCPU, "1").NodeSelector(poolKey, ns+"-cpu").TerminationGracePeriod(0).Obj()).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, w.Obj()).
			Obj()
		Expect(suite.Client.Create(ctx, j)).To(Succeed())
		// Its pods and PodGroup would hold their share of the default
		// queue for the next specs: envtest runs no garbage collector.
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, j))).To(Succeed())
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
			Expect(suite.Client.DeleteAllOf(ctx, &schedulingv1alpha1.PodGroup{}, client.InNamespace(ns))).To(Succeed())
		})
		return j
	}
	// live returns the job's pods not being deleted.
	live := func(g Gomega, name string) []corev1.Pod {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		return testutil.Live(pods)
	}
	bound := func(pods []corev1.Pod) map[string]string {
		out := map[string]string{}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				out[p.Name] = p.Spec.NodeName
			}
		}
		return out
	}
	podGroup := func(g Gomega, name string) *schedulingv1alpha1.PodGroup {
		pg := &schedulingv1alpha1.PodGroup{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg)).To(Succeed())
		return pg
	}
	// whole waits until the job's members are all bound, the master on
	// the CPU pool and the workers on workerNode (any GPU node if "").
	whole := func(name string, members int, workerNode string) {
		EventuallyWithOffset(1, func(g Gomega) {
			pods := live(g, name)
			g.Expect(pods).To(HaveLen(members))
			got := bound(pods)
			g.Expect(got).To(HaveLen(members), "bound: %v", got)
			for _, p := range pods {
				if p.Labels[kubeflowv1.ReplicaTypeLabel] == "master" {
					g.Expect(p.Spec.NodeName).To(Equal(ns+"-cpu"), p.Name)
				} else if workerNode != "" {
					g.Expect(p.Spec.NodeName).To(Equal(workerNode), p.Name)
				}
			}
		}, 60*time.Second).Should(Succeed())
	}
	// neverPartial checks for a while that no member is bound: the gang
	// waits whole.
	nothingBound := func(name string, d time.Duration) {
		ConsistentlyWithOffset(1, func(g Gomega) {
			g.Expect(bound(live(g, name))).To(BeEmpty())
		}, d, 100*time.Millisecond).Should(Succeed())
	}
	podGroupEvents := func(g Gomega, name, reason string) []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(suite.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == "PodGroup" && e.Regarding.Name == name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
	reclaimed := func(name string) {
		EventuallyWithOffset(1, func(g Gomega) {
			c := meta.FindStatusCondition(podGroup(g, name).Status.Conditions, schedulingv1alpha1.PodGroupPartial)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonReclaimed))
			g.Expect(c.Message).To(ContainSubstring("could not be completed"))
			g.Expect(podGroupEvents(g, name, "Reclaimed")).NotTo(BeEmpty())
		}, 60*time.Second).Should(Succeed())
	}

	It("binds nothing while workers wait for their scheduling gates, and the whole gang once they are removed", func() {
		node("cpu", "cpu", 0)
		node("gpu", "gpu", 8)
		s, err := testutil.StartScheduler(suite.Env.Config, grace)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		job("gated", 2, "2", func(w *testutil.ReplicaBuilder) { w.Gate("example.com/hold") })
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(podGroup(g, "gated").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonSchedulingGated))
			g.Expect(c.Message).To(ContainSubstring("2 of 3 members are waiting for scheduling gates: example.com/hold"))
		}).Should(Succeed())
		nothingBound("gated", 2*time.Second)

		Eventually(func(g Gomega) {
			for _, p := range live(g, "gated") {
				if len(p.Spec.SchedulingGates) > 0 {
					p.Spec.SchedulingGates = nil
					g.Expect(suite.Client.Update(ctx, &p)).To(Succeed())
				}
			}
		}).Should(Succeed())
		whole("gated", 3, ns+"-gpu")
	})

	It("reclaims a gang whose binds a node refuses after the grace period, then places it whole on another node", func() {
		node("cpu", "cpu", 0)
		refusing := node("gpu-refusing", "gpu", 8)
		refuseBindsTo(ctx, refusing.Name)
		s, err := testutil.StartScheduler(suite.Env.Config, grace)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		job("refused", 2, "4", nil)
		// The master binds, the workers are refused: partial, then
		// reclaimed once the workers find no other node in 2s.
		Eventually(func(g Gomega) {
			pg := podGroup(g, "refused")
			c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupPartial)
			g.Expect(c).NotTo(BeNil(), "PodGroup status: %+v", pg.Status)
		}).Should(Succeed())
		reclaimed("refused")
		// Its members come back (the master under a new UID) and wait whole:
		// the refusing node is avoided, and nothing else fits.
		Eventually(func(g Gomega) { g.Expect(live(g, "refused")).To(HaveLen(3)) }).Should(Succeed())
		nothingBound("refused", 3*time.Second)

		other := node("gpu-ok", "gpu", 8)
		whole("refused", 3, other.Name)
	})

	It("places workers with required anti-affinity among themselves one per node", func() {
		node("cpu", "cpu", 0)
		for i := range 3 {
			node(fmt.Sprintf("gpu-%d", i), "gpu", 8)
		}
		s, err := testutil.StartScheduler(suite.Env.Config, grace)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		// Without the rule the three 2-GPU workers bin-pack onto one node.
		job("ddp", 3, "2", func(w *testutil.ReplicaBuilder) {
			w.PodSpec(func(spec *corev1.PodSpec) {
				spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						TopologyKey: corev1.LabelHostname,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
							kubeflowv1.JobNameLabel: "ddp", kubeflowv1.ReplicaTypeLabel: "worker",
						}},
					}},
				}}
			})
		})
		whole("ddp", 4, "")
		hosts := map[string]bool{}
		for _, p := range live(Default, "ddp") {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
				Expect(hosts).NotTo(HaveKey(p.Spec.NodeName), "two workers on %s", p.Spec.NodeName)
				hosts[p.Spec.NodeName] = true
			}
		}
	})

	It("keeps a topology spread constraint's skew over the gang's own workers", func() {
		node("cpu", "cpu", 0)
		for i := range 2 {
			node(fmt.Sprintf("gpu-%d", i), "gpu", 8)
		}
		s, err := testutil.StartScheduler(suite.Env.Config, grace)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		job("spread", 4, "1", func(w *testutil.ReplicaBuilder) {
			w.PodSpec(func(spec *corev1.PodSpec) {
				spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						kubeflowv1.JobNameLabel: "spread", kubeflowv1.ReplicaTypeLabel: "worker",
					}},
				}}
			})
		})
		whole("spread", 5, "")
		perNode := map[string]int{}
		for _, p := range live(Default, "spread") {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
				perNode[p.Spec.NodeName]++
			}
		}
		Expect(perNode).To(Equal(map[string]int{ns + "-gpu-0": 2, ns + "-gpu-1": 2}))
	})

	Context("with the scheduler as a process of its own, killed in the middle of a commit", func() {
		var kubeconfig string
		BeforeEach(func() {
			kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
			Expect(peers.WriteKubeconfig(suite.Env.Environment, kubeconfig)).To(Succeed())
		})
		scheduler := func(flags ...string) *peers.Process {
			p, err := peers.StartTestScheduler(peers.Options{
				Kubeconfig: kubeconfig, LogFile: filepath.Join(GinkgoT().TempDir(), "scheduler.log"), Args: flags,
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() {
				if err := p.Stop(); err != nil {
					AddReportEntry("scheduler log", p.LogFile())
					Fail(err.Error())
				}
			})
			return p
		}
		// killMidCommit starts a scheduler whose binds are spread out (one
		// at a time, a handful a second) and kills it with SIGKILL once
		// some but not all of the job's members are bound. It returns the
		// UIDs of the members bound by then.
		killMidCommit := func(name string, members int) map[string]types.UID {
			p := scheduler("--bind-workers=1", "--kube-api-qps=4", "--kube-api-burst=1")
			Eventually(func(g Gomega) {
				g.Expect(bound(live(g, name))).NotTo(BeEmpty())
			}, 60*time.Second, 10*time.Millisecond).Should(Succeed())
			Expect(p.Kill()).To(Succeed())
			held := map[string]types.UID{}
			for _, pod := range live(Default, name) {
				if pod.Spec.NodeName != "" {
					held[pod.Name] = pod.UID
				}
			}
			Expect(len(held)).To(BeNumerically("<", members),
				"the kill came after the whole commit: nothing was left partial to recover from")
			return held
		}

		It("leaves a partial gang that the next scheduler completes", func() {
			node("cpu", "cpu", 0)
			node("gpu", "gpu", 8)
			job("killed", 4, "2", nil)
			held := killMidCommit("killed", 5)

			scheduler(grace)
			whole("killed", 5, ns+"-gpu")
			// Completed, not reclaimed: the members bound before the kill
			// are the same pods.
			for _, pod := range live(Default, "killed") {
				if uid, ok := held[pod.Name]; ok {
					Expect(pod.UID).To(Equal(uid), "member %s was recreated: the gang was reclaimed instead of completed", pod.Name)
				}
			}
		})

		It("leaves a partial gang that cannot be completed: the next scheduler reclaims it after the grace period", func() {
			cpu := node("cpu", "cpu", 0)
			gpu := node("gpu", "gpu", 8)
			job("stranded", 4, "2", nil)
			killMidCommit("stranded", 5)
			// Nothing more can be placed: both nodes cordoned.
			for _, n := range []*corev1.Node{cpu, gpu} {
				Expect(suite.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)))).To(Succeed())
			}

			scheduler(grace)
			reclaimed("stranded")
			Eventually(func(g Gomega) { g.Expect(live(g, "stranded")).To(HaveLen(5)) }).Should(Succeed())
			nothingBound("stranded", 3*time.Second)

			for _, n := range []*corev1.Node{cpu, gpu} {
				Expect(suite.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`)))).To(Succeed())
			}
			whole("stranded", 5, gpu.Name)
		})
	})
})

// refuseBindsTo installs a ValidatingAdmissionPolicy that makes the API
// server refuse every bind to node, as a site's policy might (a node
// reserved, a team's quota of hosts): a failure that comes after the
// scheduler's decision, from a real API-server behaviour.
func refuseBindsTo(ctx context.Context, node string) {
	name := "refuse-binds-" + strings.ToLower(node)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.target.name != %q", node),
				Message:    fmt.Sprintf("node %s takes no binds", node),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(suite.Client.Create(ctx, policy)).To(Succeed())
	Expect(suite.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, policy))).To(Succeed())
	})
	// The policy takes effect once the API server has compiled it: probe
	// with a bind of a throwaway pod until it is refused.
	probeNS, err := testutil.CreateNamespace(ctx, suite.Client, "vap-probe")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: probeNS.Name},
			Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		g.Expect(suite.Client.Create(ctx, pod)).To(Succeed())
		err := testutil.BindPod(ctx, suite.Client, pod, node)
		_ = suite.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))
		g.Expect(err).To(MatchError(ContainSubstring("takes no binds")))
	}).Should(Succeed())
}
