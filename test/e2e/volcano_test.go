//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/integrations/volcano/hypernodes"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// stuckWatch is how long a gang must stay unbound to count as stuck: ten
// of Volcano's one-second cycles after it first reported the gang
// unschedulable.
const stuckWatch = 10 * time.Second

// gangLabel marks the pods of a gang made by hand.
const gangLabel = "e2e.troupe.dev/gang"

var _ = Describe("Volcano's scheduler", Ordered, func() {
	var sched *peer

	BeforeAll(func(ctx SpecContext) {
		Expect(peers.InstallVolcano(ctx, suite.Env.Config)).To(Succeed())
		// The Topology the operator generates HyperNodes from: racks of
		// hosts. Only the GPU nodes of the topology specs have racks.
		Expect(suite.Client.Create(ctx, testutil.MakeTopology(racksTopology).
			Level("rack", rackLabel).Level("host", corev1.LabelHostname).Obj())).To(Succeed())
		sched = startPeer(func(o peers.Options) (*peers.Process, error) {
			return peers.StartVolcano(context.Background(), peers.VolcanoOptions{
				Options: o,
				Plugins: append(peers.DefaultVolcanoPlugins(), "network-topology-aware"),
			})
		}, peers.VolcanoBinary)
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{
			"--gang-scheduler-name=" + volcano.Name, "--volcano-hypernode-topology=" + racksTopology,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})
	AfterEach(func() { sched.check() })

	// A CPU-only Master that asks for the CPU pool, and three Workers of
	// 2 GPUs that tolerate the GPU pool's taint: 6 GPUs a gang.
	tfJob := func(name, ns string) *kubeflowv1.TFJob {
		return testutil.MakeTFJob(name, ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeMaster, cpuMaster("tensorflow")).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, gpuWorker(3, "tensorflow", "2")).
			Obj()
	}

	It("places a TFJob's CPU-only Master on a CPU node and its GPU Workers on GPU nodes", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-pools")
		pools(ctx, ns, 2, 2, 4)
		Expect(suite.Client.Create(ctx, tfJob("mixed", ns))).To(Succeed())

		expectPlaced(ctx, peers.VolcanoSchedulerName, expectAllBound(ctx, ns, jobPods("mixed"), 4))
	})

	It("restarts a TFJob whose worker failed as a whole gang, which Volcano admits afresh and binds whole", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-regang")
		pools(ctx, ns, 2, 2, 4)
		job := tfJob("regang", ns)
		for _, spec := range job.Spec.TFReplicaSpecs {
			spec.RestartPolicy = "ExitCode"
		}
		job.Spec.RunPolicy.GangPolicy = gangRestart()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		first := expectAllBound(ctx, ns, jobPods("regang"), 4)
		expectGangRestarted(ctx, ns, "regang", peers.VolcanoSchedulerName, first, 2)
	})

	// Volcano caches predicate failures per job and task-spec for the rest
	// of a cycle (util.predicateHelper in volcano.sh/volcano v1.14.1's
	// pkg/scheduler/util/predicate_helper.go, keyed "<job>/<task-spec>"):
	// once one pod of a key fails on a node, its siblings skip that node
	// with the same error. allocate also skips a key's remaining pods once
	// one of them found no node (JobInfo.TaskHasFitErrors). Both are right
	// only if a key's pods ask for the same things. With one key for the
	// whole gang, the Master's failures on the tainted GPU nodes are the
	// Workers' too, or the Workers' on the GPU-less CPU nodes are the
	// Master's, whichever Volcano tries first: one role never finds a node,
	// and the gang is never whole. Volcano turns the cache off for pods with
	// no key at all (since v1.10, volcano-sh/volcano#3527), so the contrast that shows
	// what the operator's per-replica keys buy is distinct keys against one
	// shared key, on the same nodes, at the same time.
	It("binds gangs whose roles have their own task-spec, and never one whose pods share a task-spec", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-task-spec")
		// Room for all three gangs at once: the shared-key one waits for no
		// capacity.
		pools(ctx, ns, 2, 3, 8)
		Expect(suite.Client.Create(ctx, tfJob("per-role", ns))).To(Succeed())
		perRole := handMadeGang(ctx, tfJob("by-hand-per-role", ns), func(role string) string { return role })
		shared := handMadeGang(ctx, tfJob("by-hand-shared", ns), func(string) string { return "tensorflow" })

		expectPlaced(ctx, peers.VolcanoSchedulerName, expectAllBound(ctx, ns, jobPods("per-role"), 4))
		expectPlaced(ctx, peers.VolcanoSchedulerName, expectAllBound(ctx, ns, perRole, 4))
		// Volcano has tried the shared-key gang and given up on it, for a
		// reason that only the shared cache can give: the CPU-only Master
		// "lacks" GPUs (a Worker's failure on the CPU nodes), or a Worker
		// "does not match" a node selector it does not have (the Master's
		// failure on the GPU nodes), whichever role Volcano tried first.
		var verdict string
		Eventually(func(g Gomega) {
			pg := &volcanov1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "by-hand-shared"}, pg)).To(Succeed())
			var unschedulable *volcanov1beta1.PodGroupCondition
			for i, c := range pg.Status.Conditions {
				if c.Type == volcanov1beta1.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue {
					unschedulable = &pg.Status.Conditions[i]
				}
			}
			g.Expect(unschedulable).NotTo(BeNil(), "PodGroup conditions: %v", pg.Status.Conditions)
			verdict = unschedulable.Message
			g.Expect(verdict).To(Or(
				MatchRegexp(`by-hand-shared-master-0: .*Insufficient nvidia.com/gpu`),
				MatchRegexp(`by-hand-shared-worker-\d: .*didn't match Pod's node affinity/selector`),
			))
		}).WithTimeout(bindTimeout).Should(Succeed())
		AddReportEntry("Volcano on the shared-key gang", verdict)
		// ...and keeps failing it, cycle after cycle, with room to spare.
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, shared, 4) }).
			WithTimeout(stuckWatch).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	// racks makes two racks of two GPU nodes of 4 GPUs each, and a CPU
	// node outside them, and waits until the operator has made the racks'
	// HyperNodes. It returns the rack of each GPU node.
	racks := func(ctx context.Context, ns string) map[string]string {
		rackOf := map[string]string{}
		poolsWith(ctx, ns, 1, 4, 4, func(i int, b *testutil.NodeBuilder) {
			rack := fmt.Sprintf("%s-rack-%d", ns, i/2)
			b.Label(rackLabel, rack)
			rackOf[b.Obj().Name] = rack
		})
		Eventually(func(g Gomega) {
			var list topologyv1alpha1.HyperNodeList
			g.Expect(suite.Client.List(ctx, &list, client.MatchingLabels{hypernodes.TopologyLabel: racksTopology})).To(Succeed())
			members := 0
			for _, hn := range list.Items {
				if strings.HasPrefix(hn.Annotations[hypernodes.DomainAnnotation], ns) {
					members += len(hn.Spec.Members)
				}
			}
			g.Expect(members).To(Equal(4))
		}).WithTimeout(bindTimeout).Should(Succeed())
		return rackOf
	}
	// rackPacked is the CPU Master and n Workers of 2 GPUs, the Workers
	// packed in one rack, required.
	rackPacked := func(name, ns string, n int32) *kubeflowv1.TFJob {
		return testutil.MakeTFJob(name, ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeMaster, cpuMaster("tensorflow")).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, gpuWorker(n, "tensorflow", "2")).
			GangPolicy(kubeflowv1.GangPolicy{Topology: &kubeflowv1.JobTopologyPolicy{TopologyPolicy: schedulingv1alpha1.TopologyPolicy{
				TopologyName: racksTopology,
				Levels:       []schedulingv1alpha1.TopologyLevelPolicy{{Level: "rack", Policy: schedulingv1alpha1.TopologyPack, Required: true}},
			}}}).
			Obj()
	}

	// Three Workers of 2 GPUs fit in one rack of 8 GPUs; Volcano's node
	// order (least requested first) would spread them over three nodes,
	// and so over both racks, without the rule.
	It("binds a TFJob's Workers, with a required rack Pack, all in one rack, and its CPU Master outside the racks", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-rack")
		rackOf := racks(ctx, ns)
		Expect(suite.Client.Create(ctx, rackPacked("packed", ns, 3))).To(Succeed())

		pods := expectAllBound(ctx, ns, jobPods("packed"), 4)
		expectPlaced(ctx, peers.VolcanoSchedulerName, pods)
		used := map[string]bool{}
		for _, p := range pods {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
				used[rackOf[p.Spec.NodeName]] = true
			}
		}
		Expect(used).To(HaveLen(1), "the Workers' racks")
	})

	// Five Workers of 2 GPUs: 10 GPUs, more than a rack has, fewer than
	// the two racks have.
	It("binds nothing of a TFJob whose Workers fit in no one rack", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-rack-full")
		racks(ctx, ns)
		Expect(suite.Client.Create(ctx, rackPacked("too-big", ns, 5))).To(Succeed())

		Eventually(func(g Gomega) {
			pg := &volcanov1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "too-big"}, pg)).To(Succeed())
			g.Expect(pg.Spec.SubGroupPolicy).To(HaveLen(1))
			listPods(ctx, g, ns, jobPods("too-big"), 6)
		}).WithTimeout(bindTimeout).Should(Succeed())
		Consistently(func(g Gomega) { noneBound(ctx, g, ns, jobPods("too-big"), 6) }).
			WithTimeout(stuckWatch).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	// An elastic PyTorchJob of 4 Workers of 2 GPUs, 2 to 4 of them: the
	// PodGroup asks for the Master and 2 Workers, and Volcano binds them
	// on 4 GPUs; the other 2 are bound once a node with room joins.
	It("binds an elastic PyTorchJob's minimum as the gang, and its other Workers once room appears", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, "volcano-elastic")
		pools(ctx, ns, 1, 1, 4)
		job := testutil.MakePyTorchJob("elastic", ns).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, cpuMaster("pytorch")).
			ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, gpuWorker(4, "pytorch", "2")).
			ElasticPolicy(kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)}).
			Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		Eventually(func(g Gomega) {
			pg := &volcanov1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "elastic"}, pg)).To(Succeed())
			g.Expect(pg.Spec.MinMember).To(Equal(int32(3)))
			g.Expect(pg.Spec.MinTaskMember).To(Equal(map[string]int32{"master": 1, "worker": 2}))
			bound := 0
			for _, p := range listPods(ctx, g, ns, jobPods("elastic"), 5) {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			g.Expect(bound).To(Equal(3), "the Master and 2 Workers")
		}).WithTimeout(bindTimeout).Should(Succeed())

		more := testutil.MakeNode(ns+"-gpu-more").Capacity("32", "128Gi").GPU(4).Label(poolLabel, gpuPool).Obj()
		more.Spec.Taints = []corev1.Taint{gpuTaint}
		Expect(testutil.CreateReadyNode(ctx, suite.Client, more)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, more))).To(Succeed()) })
		expectPlaced(ctx, peers.VolcanoSchedulerName, expectAllBound(ctx, ns, jobPods("elastic"), 5))
	})
})

// The Topology of the topology specs, and its rack label.
const (
	racksTopology = "e2e-racks"
	rackLabel     = "e2e.troupe.dev/rack"
)

// handMadeGang makes what the operator makes of job with the volcano
// backend, by the same code: the PodGroup from integrations.ComputeGangSpec
// through the backend's SyncPodGroup, created first and admitted by Volcano
// before any pod exists, and each replica's pods from its template marked
// by the backend's DecoratePod. The one difference is the task-spec: each
// role's pods get taskSpec(role), and the PodGroup's per-role minimums are
// keyed the same way. The operator always keys by role, overwriting a
// task-spec a template sets, so a shared key has to be made by hand. A
// ConfigMap of the job's name owns the gang in the job's place. It returns
// the labels that select the gang's pods.
func handMadeGang(ctx context.Context, job *kubeflowv1.TFJob, taskSpec func(role string) string) client.MatchingLabels {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace}}
	Expect(suite.Client.Create(ctx, owner)).To(Succeed())
	ref := metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))

	rtypes := []kubeflowv1.ReplicaType{kubeflowv1.TFJobReplicaTypeMaster, kubeflowv1.TFJobReplicaTypeWorker}
	var replicas []integrations.Replica
	for _, rtype := range rtypes {
		spec := job.Spec.TFReplicaSpecs[rtype]
		replicas = append(replicas, integrations.Replica{Role: integrations.RoleOf(string(rtype)), Replicas: *spec.Replicas, Template: &spec.Template})
	}
	gang := integrations.ComputeGangSpec(replicas, integrations.SchedulingPolicy{})
	byRole := gang.MinTaskMember
	gang.MinTaskMember = map[string]int32{}
	for role, n := range byRole {
		gang.MinTaskMember[taskSpec(role)] += n
	}
	backend := volcano.Backend{}
	Eventually(func(g Gomega) {
		state, err := backend.SyncPodGroup(ctx, suite.Client, owner, *ref, gang)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(state.Admitted).To(BeTrue(), "PodGroup %s is %q", job.Name, state.Phase)
	}).WithTimeout(bindTimeout).Should(Succeed())

	labels := client.MatchingLabels{gangLabel: job.Name}
	for _, rtype := range rtypes {
		spec := job.Spec.TFReplicaSpecs[rtype]
		role := integrations.RoleOf(string(rtype))
		for i := range *spec.Replicas {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name:            fmt.Sprintf("%s-%s-%d", job.Name, role, i),
					Namespace:       job.Namespace,
					Labels:          map[string]string{gangLabel: job.Name, kubeflowv1.ReplicaTypeLabel: engine.ReplicaTypeLabelValue(rtype)},
					OwnerReferences: []metav1.OwnerReference{*ref},
				},
				Spec: *spec.Template.Spec.DeepCopy(),
			}
			backend.DecoratePod(pod, job.Name, taskSpec(role))
			Expect(suite.Client.Create(ctx, pod)).To(Succeed())
		}
	}
	return labels
}
