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
	const grace = "--partial-gang-grace-period=2s"
	ctx := context.Background()

	f := fixtures("partial")

	// startScheduler runs a troupe-scheduler with the short grace until
	// the spec ends.
	startScheduler := func() {
		s, err := testutil.StartScheduler(suite.Env.Config, grace)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)
	}

	It("binds nothing while workers wait for their scheduling gates, and the whole gang once they are removed", func() {
		f.node("cpu", "cpu", 0)
		f.node("gpu", "gpu", 8)
		startScheduler()

		f.job("gated", 2, "2", func(w *testutil.ReplicaBuilder) { w.Gate("example.com/hold") })
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(f.podGroup(g, "gated").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonSchedulingGated))
			g.Expect(c.Message).To(ContainSubstring("2 of 3 members are waiting for scheduling gates: example.com/hold"))
		}).Should(Succeed())
		f.nothingBound("gated", 2*time.Second)

		Eventually(func(g Gomega) {
			for _, p := range f.live(g, "gated") {
				if len(p.Spec.SchedulingGates) > 0 {
					p.Spec.SchedulingGates = nil
					g.Expect(suite.Client.Update(ctx, &p)).To(Succeed())
				}
			}
		}).Should(Succeed())
		f.whole("gated", 3, f.ns+"-gpu")
	})

	It("reclaims a gang whose binds a node refuses after the grace period, then places it whole on another node", func() {
		f.node("cpu", "cpu", 0)
		refusing := f.node("gpu-refusing", "gpu", 8)
		refuseBindsTo(ctx, refusing.Name)
		startScheduler()

		f.job("refused", 2, "4", nil)
		// The master binds, the workers are refused: partial, then
		// reclaimed once the workers find no other node in 2s.
		Eventually(func(g Gomega) {
			pg := f.podGroup(g, "refused")
			c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupPartial)
			g.Expect(c).NotTo(BeNil(), "PodGroup status: %+v", pg.Status)
		}).Should(Succeed())
		f.reclaimed("refused")
		// Its members come back (the master under a new UID) and wait whole:
		// the refusing node is avoided, and nothing else fits.
		Eventually(func(g Gomega) { g.Expect(f.live(g, "refused")).To(HaveLen(3)) }).Should(Succeed())
		f.nothingBound("refused", 3*time.Second)

		other := f.node("gpu-ok", "gpu", 8)
		f.whole("refused", 3, other.Name)
	})

	// Found by the chaos soak: a gang whose worker had finished could not
	// place its master recreated under restartPolicy OnFailure, as if the
	// finished member did not count.
	It("places a member recreated beside one that succeeded: the finished member counts toward the gang", func() {
		f.node("cpu", "cpu", 0)
		f.node("gpu", "gpu", 8)
		startScheduler()

		f.job("finished-worker", 1, "1", nil, func(j *kubeflowv1.PyTorchJob) {
			j.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].RestartPolicy = kubeflowv1.RestartPolicy("OnFailure")
		})
		f.whole("finished-worker", 2, f.ns+"-gpu")
		byRole := func(g Gomega) map[string]corev1.Pod {
			out := map[string]corev1.Pod{}
			for _, p := range f.live(g, "finished-worker") {
				out[p.Labels[kubeflowv1.ReplicaTypeLabel]] = p
			}
			return out
		}
		var master corev1.Pod
		Eventually(func(g Gomega) {
			pods := byRole(g)
			worker := pods["worker"]
			master = pods["master"]
			g.Expect(testutil.SetPodPhase(ctx, suite.Client, &worker, corev1.PodSucceeded)).To(Succeed())
		}).Should(Succeed())
		Expect(testutil.FailPod(ctx, suite.Client, &master, 1)).To(Succeed())

		Eventually(func(g Gomega) {
			m := byRole(g)["master"]
			g.Expect(m.UID).NotTo(Equal(master.UID), "the operator recreates the failed master")
			g.Expect(m.Spec.NodeName).To(Equal(f.ns+"-cpu"), "the recreated master is placed")
		}, 30*time.Second).Should(Succeed())
	})

	It("places workers with required anti-affinity among themselves one per node", func() {
		f.node("cpu", "cpu", 0)
		for i := range 3 {
			f.node(fmt.Sprintf("gpu-%d", i), "gpu", 8)
		}
		startScheduler()

		// Without the rule the three 2-GPU workers bin-pack onto one node.
		f.job("ddp", 3, "2", func(w *testutil.ReplicaBuilder) {
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
		f.whole("ddp", 4, "")
		hosts := map[string]bool{}
		for _, p := range f.live(Default, "ddp") {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
				Expect(hosts).NotTo(HaveKey(p.Spec.NodeName), "two workers on %s", p.Spec.NodeName)
				hosts[p.Spec.NodeName] = true
			}
		}
	})

	It("keeps a topology spread constraint's skew over the gang's own workers", func() {
		f.node("cpu", "cpu", 0)
		for i := range 2 {
			f.node(fmt.Sprintf("gpu-%d", i), "gpu", 8)
		}
		startScheduler()

		f.job("spread", 4, "1", func(w *testutil.ReplicaBuilder) {
			w.PodSpec(func(spec *corev1.PodSpec) {
				spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						kubeflowv1.JobNameLabel: "spread", kubeflowv1.ReplicaTypeLabel: "worker",
					}},
				}}
			})
		})
		f.whole("spread", 5, "")
		perNode := map[string]int{}
		for _, p := range f.live(Default, "spread") {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
				perNode[p.Spec.NodeName]++
			}
		}
		Expect(perNode).To(Equal(map[string]int{f.ns + "-gpu-0": 2, f.ns + "-gpu-1": 2}))
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
				g.Expect(f.bound(f.live(g, name))).NotTo(BeEmpty())
			}, 60*time.Second, 10*time.Millisecond).Should(Succeed())
			Expect(p.Kill()).To(Succeed())
			held := map[string]types.UID{}
			for _, pod := range f.live(Default, name) {
				if pod.Spec.NodeName != "" {
					held[pod.Name] = pod.UID
				}
			}
			Expect(len(held)).To(BeNumerically("<", members),
				"the kill came after the whole commit: nothing was left partial to recover from")
			return held
		}

		It("leaves a partial gang that the next scheduler completes", func() {
			f.node("cpu", "cpu", 0)
			f.node("gpu", "gpu", 8)
			f.job("killed", 4, "2", nil)
			held := killMidCommit("killed", 5)

			scheduler(grace)
			f.whole("killed", 5, f.ns+"-gpu")
			// Completed, not reclaimed: the members bound before the kill
			// are the same pods.
			for _, pod := range f.live(Default, "killed") {
				if uid, ok := held[pod.Name]; ok {
					Expect(pod.UID).To(Equal(uid), "member %s was recreated: the gang was reclaimed instead of completed", pod.Name)
				}
			}
		})

		It("leaves a partial gang that cannot be completed: the next scheduler reclaims it after the grace period", func() {
			cpu := f.node("cpu", "cpu", 0)
			gpu := f.node("gpu", "gpu", 8)
			f.job("stranded", 4, "2", nil)
			killMidCommit("stranded", 5)
			// Nothing more can be placed: both nodes cordoned.
			for _, n := range []*corev1.Node{cpu, gpu} {
				Expect(suite.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)))).To(Succeed())
			}

			scheduler(grace)
			f.reclaimed("stranded")
			Eventually(func(g Gomega) { g.Expect(f.live(g, "stranded")).To(HaveLen(5)) }).Should(Succeed())
			f.nothingBound("stranded", 3*time.Second)

			for _, n := range []*corev1.Node{cpu, gpu} {
				Expect(suite.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`)))).To(Succeed())
			}
			f.whole("stranded", 5, gpu.Name)
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
