package integration

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Topology-aware placement through the public surface: a PyTorchJob
// manifest with runPolicy.gangPolicy.topology in, its workers bound by
// the rule, ranked along the tree and labelled with their domains, its
// PodGroup saying where they went, or why they wait.
//
// Each spec's GPU nodes form two blocks: b1 with racks r1 and r2, b2 with
// rack r3; every rack has two nodes of 4 GPUs. The master asks for no
// GPU, so the policy does not cover it: it goes to the CPU node, outside
// the tree.
var _ = Describe("Topology: PyTorchJobs placed on racks through the operator and troupe-scheduler", Ordered, ContinueOnFailure, func() {
	const (
		blockKey = "troupe.test/block"
		rackKey  = "troupe.test/rack"
	)
	ctx := context.Background()

	BeforeAll(func() {
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
		s, err := testutil.StartScheduler(suite.Env.Config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)
	})

	var f *fixture
	BeforeEach(func() {
		f = newFixture(ctx, "topology")
		topo := testutil.MakeTopology(f.ns).Level("block", blockKey).Level("rack", rackKey).Level("host", corev1.LabelHostname).Obj()
		Expect(suite.Client.Create(ctx, topo)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, topo))).To(Succeed()) })
		f.node("cpu", "cpu", 0)
		for _, rack := range []struct{ block, rack string }{{"b1", "r1"}, {"b1", "r2"}, {"b2", "r3"}} {
			for _, host := range []string{"a", "b"} {
				f.node(rack.rack+"-"+host, "gpu", 4, blockKey, rack.block, rackKey, rack.rack)
			}
		}
	})

	// withTopology gives a job a topology policy on the spec's Topology.
	withTopology := func(rules ...*testutil.TopologyRuleBuilder) func(*kubeflowv1.PyTorchJob) {
		return func(j *kubeflowv1.PyTorchJob) {
			j.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{Topology: testutil.JobTopology(f.ns, rules...)}
		}
	}
	// occupy binds a pod of gpus GPUs to node, outside any gang: load
	// that the gang must place around.
	loads := 0
	occupy := func(node string, gpus string) {
		loads++
		pod := testutil.MakePod(fmt.Sprintf("load-%d-%s", loads, node), f.ns).NodeName(f.ns+"-"+node).Limit(testutil.GPU, gpus).Obj()
		Expect(suite.Client.Create(ctx, pod)).To(Succeed())
	}
	// workers waits for the job's gang to be bound whole and returns its
	// workers by replica index.
	workers := func(name string, n int) []corev1.Pod {
		f.whole(name, n+1, "")
		out := make([]corev1.Pod, n)
		for _, p := range f.live(Default, name) {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] != "worker" {
				continue
			}
			var i int
			_, err := fmt.Sscan(p.Labels[kubeflowv1.ReplicaIndexLabel], &i)
			Expect(err).NotTo(HaveOccurred())
			out[i] = p
		}
		return out
	}
	rackOf := func(p corev1.Pod) string {
		n := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n)).To(Succeed())
		return n.Labels[rackKey]
	}
	racksOf := func(pods []corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, rackOf(p))
		}
		return out
	}
	condition := func(g Gomega, name, ctype string) *metav1.Condition {
		c := meta.FindStatusCondition(f.podGroup(g, name).Status.Conditions, ctype)
		g.ExpectWithOffset(1, c).NotTo(BeNil(), "no %s condition", ctype)
		return c
	}

	It("packs a required rack-level gang into the one rack with room, ranks in replica order along its nodes", func() {
		// r1 and r2 have 6 free GPUs each, r3 has 8: only r3 holds four
		// 2-GPU workers. Without the rule they would bin-pack onto the
		// busiest nodes, in r1 and r2.
		occupy("r1-a", "2")
		occupy("r2-a", "2")
		f.job("packed", 4, "2", nil, withTopology(testutil.Pack("rack").Required()))

		ws := workers("packed", 4)
		Expect(racksOf(ws)).To(Equal([]string{"r3", "r3", "r3", "r3"}))
		// Neighbouring ranks share a node: 0 and 1 on one, 2 and 3 on the other.
		Expect(ws[0].Spec.NodeName).To(Equal(ws[1].Spec.NodeName))
		Expect(ws[2].Spec.NodeName).To(Equal(ws[3].Spec.NodeName))
		Expect(ws[1].Spec.NodeName).NotTo(Equal(ws[2].Spec.NodeName))
		for i, w := range ws {
			// As labels (Kubernetes 1.35 and later) and annotations.
			for _, m := range []map[string]string{w.Labels, w.Annotations} {
				Expect(m).To(HaveKeyWithValue(topology.RankLabel, fmt.Sprint(i)), w.Name)
				Expect(m).To(HaveKeyWithValue(topology.LevelLabelPrefix+"block", "b2"), w.Name)
				Expect(m).To(HaveKeyWithValue(topology.LevelLabelPrefix+"rack", "r3"), w.Name)
				Expect(m).To(HaveKeyWithValue(topology.LevelLabelPrefix+"host", w.Spec.NodeName), w.Name)
			}
		}
		for _, p := range f.live(Default, "packed") {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "master" {
				Expect(p.Labels).NotTo(HaveKey(topology.RankLabel), "the master is not covered by the policy")
			}
		}

		// The status is written once the binds are seen, after them.
		Eventually(func(g Gomega) {
			pg := f.podGroup(g, "packed")
			g.Expect(pg.Status.Topology).NotTo(BeNil())
			g.Expect(pg.Status.Topology.Levels).To(Equal([]schedulingv1alpha1.LevelPlacement{
				{Level: "block", Domains: []schedulingv1alpha1.DomainMembers{{Name: "b2", Members: 4}}},
				{Level: "rack", Domains: []schedulingv1alpha1.DomainMembers{{Name: "r3", Members: 4}}},
				{Level: "host", Domains: []schedulingv1alpha1.DomainMembers{{Name: ws[0].Spec.NodeName, Members: 2}, {Name: ws[2].Spec.NodeName, Members: 2}}},
			}))
			c := condition(g, "packed", schedulingv1alpha1.PodGroupTopologySatisfied)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonRulesKept))
		}).Should(Succeed())
	})

	It("places a replacement of a lost worker in its gang's rack, though another rack fits it as tightly and comes first", func() {
		occupy("r1-a", "2")
		occupy("r2-a", "2")
		f.job("replaced", 4, "2", nil, withTopology(testutil.Pack("rack").Required()))
		lost := workers("replaced", 4)[1]
		Expect(rackOf(lost)).To(Equal("r3"))
		// Block b1 now has room for one worker, in rack r1, as b2 and r3
		// will once the lost one goes: b1 and r1 come first in the tree's
		// order, and fit as tightly.
		occupy("r1-b", "4")
		occupy("r2-a", "2")
		occupy("r2-b", "4")
		Expect(suite.Client.Delete(ctx, &lost)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, p := range f.live(g, "replaced") {
				if p.Name == lost.Name {
					g.Expect(p.UID).NotTo(Equal(lost.UID))
					g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
				}
			}
		}, 30*time.Second).Should(Succeed())
		ws := workers("replaced", 4)
		Expect(racksOf(ws)).To(Equal([]string{"r3", "r3", "r3", "r3"}))
		Expect(ws[1].Labels).To(HaveKeyWithValue(topology.RankLabel, "1"))
	})

	It("partitions a gang into two racks, each packed onto one node, ranks 0-3 in one and 4-7 in the other", func() {
		f.job("halves", 8, "1", nil, withTopology(testutil.Partition("rack", 2).Required()))

		ws := workers("halves", 8)
		racks := racksOf(ws)
		Expect(racks[0:4]).To(HaveEach(racks[0]))
		Expect(racks[4:8]).To(HaveEach(racks[4]))
		Expect(racks[0]).NotTo(Equal(racks[4]))
		for _, half := range [][]corev1.Pod{ws[0:4], ws[4:8]} {
			for _, w := range half {
				Expect(w.Spec.NodeName).To(Equal(half[0].Spec.NodeName), "host is packed by default within each partition")
			}
		}
		Eventually(func(g Gomega) {
			c := condition(g, "halves", schedulingv1alpha1.PodGroupTopologySatisfied)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())
	})

	It("leaves a gang whose required rule no rack can keep pending, nothing bound, with the level's reason on the PodGroup and the job", func() {
		// Ten GPUs in one rack: no rack has more than eight.
		f.job("toolarge", 5, "2", nil, withTopology(testutil.Pack("rack").Required()))

		var msg string
		Eventually(func(g Gomega) {
			c := condition(g, "toolarge", schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonTopologyNotSatisfied))
			g.Expect(c.Message).To(HavePrefix("rack: "))
			g.Expect(c.Message).To(ContainSubstring("the most is r"))
			msg = c.Message
		}, 30*time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			job := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "toolarge"}, job)).To(Succeed())
			c := testutil.Condition(&job.Status, engine.ConditionGangScheduled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(engine.ReasonGangUnschedulable))
			g.Expect(c.Message).To(Equal(msg))
		}).Should(Succeed())
		f.nothingBound("toolarge", 3*time.Second)
	})

	It("places a gang whose preferred rule cannot be kept across racks, saying how far it is from the rule", func() {
		f.job("spills", 5, "2", nil, withTopology(testutil.Pack("rack")))

		racks := map[string]bool{}
		for _, w := range workers("spills", 5) {
			racks[rackOf(w)] = true
		}
		Expect(len(racks)).To(BeNumerically(">", 1))
		Eventually(func(g Gomega) {
			c := condition(g, "spills", schedulingv1alpha1.PodGroupTopologySatisfied)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonPreferenceNotMet))
			g.Expect(c.Message).To(ContainSubstring("rack: pack: 2 domains"))
		}).Should(Succeed())
	})

	It("holds a gang whose policy names a level its Topology lacks, naming the levels there are", func() {
		f.job("nolevel", 2, "1", nil, withTopology(testutil.Pack("row").Required()))
		Eventually(func(g Gomega) {
			c := condition(g, "nolevel", schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonTopologyNotFound))
			g.Expect(c.Message).To(Equal(fmt.Sprintf("topology %q has no level \"row\"; its levels are block, rack, host", f.ns)))
		}, 30*time.Second).Should(Succeed())
		f.nothingBound("nolevel", time.Second)
	})
})
