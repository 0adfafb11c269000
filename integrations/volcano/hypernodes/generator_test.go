package hypernodes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/integrations/volcano/hypernodes"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	blockLabel = "example.com/block"
	rackLabel  = "example.com/rack"
)

// hyperNode is what a spec checks of a HyperNode: its domain, tier and
// members, each "Node:<name>" or "HyperNode:<domain>".
type hyperNode struct {
	Domain   string
	Level    string
	Tier     int
	Members  []string
	Topology string
}

var _ = Describe("The Volcano HyperNode generator", Serial, func() {
	var (
		ctx   context.Context
		nodes []string
		topo  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		nodes = nil
		topo = fmt.Sprintf("fabric-%d", GinkgoParallelProcess()*1000+int(CurrentSpecReport().LeafNodeLocation.LineNumber))
	})
	AfterEach(func() {
		for _, n := range nodes {
			Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		}
		// envtest runs no garbage collector: what a spec leaves goes here.
		Expect(suite.Client.DeleteAllOf(ctx, &topologyv1alpha1.HyperNode{})).To(Succeed())
		Expect(suite.Client.DeleteAllOf(ctx, &schedulingv1alpha1.Topology{})).To(Succeed())
	})

	node := func(name string, labels ...string) {
		b := testutil.MakeNode(name).Capacity("8", "32Gi")
		for i := 0; i+1 < len(labels); i += 2 {
			b.Label(labels[i], labels[i+1])
		}
		Expect(testutil.CreateReadyNode(ctx, suite.Client, b.Obj())).To(Succeed())
		nodes = append(nodes, name)
	}
	relabel := func(name string, mutate func(map[string]string)) {
		Eventually(func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
			mutate(n.Labels)
			g.Expect(suite.Client.Update(ctx, n)).To(Succeed())
		}).Should(Succeed())
	}
	blockRackHost := func() *schedulingv1alpha1.Topology {
		return testutil.MakeTopology(topo).Level("block", blockLabel).Level("rack", rackLabel).Level("host", corev1.LabelHostname).Obj()
	}
	// generated lists the HyperNodes labelled as Troupe's, by domain.
	generated := func(g Gomega) map[string]hyperNode {
		var list topologyv1alpha1.HyperNodeList
		g.ExpectWithOffset(1, suite.Client.List(ctx, &list, client.HasLabels{hypernodes.TopologyLabel})).To(Succeed())
		domainOf := map[string]string{}
		for _, hn := range list.Items {
			domainOf[hn.Name] = hn.Annotations[hypernodes.DomainAnnotation]
		}
		out := map[string]hyperNode{}
		for _, hn := range list.Items {
			h := hyperNode{
				Domain: domainOf[hn.Name], Level: hn.Spec.TierName, Tier: hn.Spec.Tier,
				Topology: hn.Labels[hypernodes.TopologyLabel],
			}
			g.ExpectWithOffset(1, hn.Labels).To(HaveKeyWithValue(hypernodes.LevelLabel, hn.Spec.TierName))
			for _, m := range hn.Spec.Members {
				g.ExpectWithOffset(1, m.Selector.ExactMatch).NotTo(BeNil(), "HyperNode %s lists its members by name", hn.Name)
				name := m.Selector.ExactMatch.Name
				if m.Type == topologyv1alpha1.MemberTypeHyperNode {
					g.ExpectWithOffset(1, domainOf).To(HaveKey(name), "HyperNode %s has a member that is not generated", hn.Name)
					name = domainOf[name]
				}
				h.Members = append(h.Members, string(m.Type)+":"+name)
			}
			slices.Sort(h.Members)
			out[h.Domain+"@"+h.Level] = h
		}
		return out
	}
	startOperator := func() {
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=volcano", "--volcano-hypernode-topology=" + topo})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	}

	It("makes a HyperNode of every domain above the nodes, and follows the nodes as they come, move and go", func() {
		// Two racks named r1, in two blocks: two domains. A node without a
		// rack label, and one without any, are outside the tree.
		node(topo+"-a", blockLabel, "b1", rackLabel, "r1")
		node(topo+"-b", blockLabel, "b1", rackLabel, "r1")
		node(topo+"-c", blockLabel, "b1", rackLabel, "r2")
		node(topo+"-d", blockLabel, "b2", rackLabel, "r1")
		node(topo+"-e", blockLabel, "b2")
		node(topo + "-f")
		Expect(suite.Client.Create(ctx, blockRackHost())).To(Succeed())
		startOperator()

		Eventually(generated).Should(Equal(map[string]hyperNode{
			"b1@block":   {Domain: "b1", Level: "block", Tier: 2, Topology: topo, Members: []string{"HyperNode:b1/r1", "HyperNode:b1/r2"}},
			"b2@block":   {Domain: "b2", Level: "block", Tier: 2, Topology: topo, Members: []string{"HyperNode:b2/r1"}},
			"b1/r1@rack": {Domain: "b1/r1", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-a", "Node:" + topo + "-b"}},
			"b1/r2@rack": {Domain: "b1/r2", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-c"}},
			"b2/r1@rack": {Domain: "b2/r1", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-d"}},
		}))
		var hn topologyv1alpha1.HyperNode
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: hypernodes.Name(topo, "rack", []string{"b1", "r1"})}, &hn)).To(Succeed())
		t := &schedulingv1alpha1.Topology{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: topo}, t)).To(Succeed())
		Expect(hn.OwnerReferences).To(ConsistOf(And(
			HaveField("Kind", "Topology"), HaveField("Name", topo), HaveField("UID", t.UID), HaveField("Controller", HaveValue(BeTrue())))))

		// A node joins a rack; one moves to another block's rack; the
		// last node of a rack goes, and with it the rack.
		node(topo+"-g", blockLabel, "b1", rackLabel, "r2")
		relabel(topo+"-b", func(l map[string]string) { l[blockLabel] = "b2" })
		Expect(suite.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: topo + "-c"}})).To(Succeed())
		// The node without a rack gets one.
		relabel(topo+"-e", func(l map[string]string) { l[rackLabel] = "r9" })
		Eventually(generated).Should(Equal(map[string]hyperNode{
			"b1@block":   {Domain: "b1", Level: "block", Tier: 2, Topology: topo, Members: []string{"HyperNode:b1/r1", "HyperNode:b1/r2"}},
			"b2@block":   {Domain: "b2", Level: "block", Tier: 2, Topology: topo, Members: []string{"HyperNode:b2/r1", "HyperNode:b2/r9"}},
			"b1/r1@rack": {Domain: "b1/r1", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-a"}},
			"b1/r2@rack": {Domain: "b1/r2", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-g"}},
			"b2/r1@rack": {Domain: "b2/r1", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-b", "Node:" + topo + "-d"}},
			"b2/r9@rack": {Domain: "b2/r9", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-e"}},
		}))
		relabel(topo+"-a", func(l map[string]string) { delete(l, rackLabel) })
		Eventually(generated).Should(And(Not(HaveKey("b1/r1@rack")), HaveKeyWithValue("b1@block",
			hyperNode{Domain: "b1", Level: "block", Tier: 2, Topology: topo, Members: []string{"HyperNode:b1/r2"}})))
	})

	It("renumbers the tiers when the Topology's levels change, and deletes what it no longer wants", func() {
		node(topo+"-a", blockLabel, "b1", rackLabel, "r1")
		node(topo+"-b", blockLabel, "b2", rackLabel, "r1")
		// A HyperNode someone else made is left alone; one labelled as
		// Troupe's for another Topology is stale.
		mine := &topologyv1alpha1.HyperNode{
			ObjectMeta: metav1.ObjectMeta{Name: topo + "-by-hand"},
			Spec: topologyv1alpha1.HyperNodeSpec{Tier: 1, Members: []topologyv1alpha1.MemberSpec{{
				Type: topologyv1alpha1.MemberTypeNode, Selector: topologyv1alpha1.MemberSelector{ExactMatch: &topologyv1alpha1.ExactMatch{Name: topo + "-a"}},
			}}},
		}
		stale := mine.DeepCopy()
		stale.Name = topo + "-stale"
		stale.Labels = map[string]string{hypernodes.TopologyLabel: "another"}
		Expect(suite.Client.Create(ctx, mine)).To(Succeed())
		Expect(suite.Client.Create(ctx, stale)).To(Succeed())
		Expect(suite.Client.Create(ctx, blockRackHost())).To(Succeed())
		startOperator()
		Eventually(generated).Should(HaveLen(4))

		// Without the block level, rack r1 is one domain of two nodes.
		Eventually(func(g Gomega) {
			t := &schedulingv1alpha1.Topology{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: topo}, t)).To(Succeed())
			t.Spec.Levels = t.Spec.Levels[1:]
			g.Expect(suite.Client.Update(ctx, t)).To(Succeed())
		}).Should(Succeed())
		Eventually(generated).Should(Equal(map[string]hyperNode{
			"r1@rack": {Domain: "r1", Level: "rack", Tier: 1, Topology: topo, Members: []string{"Node:" + topo + "-a", "Node:" + topo + "-b"}},
		}))
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())

		// The Topology goes: so do its HyperNodes.
		Expect(suite.Client.Delete(ctx, &schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: topo}})).To(Succeed())
		Eventually(generated).Should(BeEmpty())
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
	})

	It("makes none of a Topology whose node level is not the last, nor of one with only a node level", func() {
		node(topo+"-a", blockLabel, "b1", rackLabel, "r1")
		bad := testutil.MakeTopology(topo).Level("host", corev1.LabelHostname).Level("rack", rackLabel).Obj()
		Expect(suite.Client.Create(ctx, bad)).To(Succeed())
		gen := hypernodes.New(suite.Client, topo)
		_, err := gen.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: topo}})
		Expect(err).NotTo(HaveOccurred())
		Expect(generated(Default)).To(BeEmpty())
		_, _, _, err = gen.Tiers(ctx)
		Expect(err).To(MatchError(ContainSubstring("spec.levels[0] (host) has nodeLabel kubernetes.io/hostname, which only the last level may have")))

		Expect(suite.Client.Delete(ctx, bad)).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeTopology(topo).Level("host", corev1.LabelHostname).Obj())).To(Succeed())
		_, err = gen.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: topo}})
		Expect(err).NotTo(HaveOccurred())
		Expect(generated(Default)).To(BeEmpty())
	})

	It("tells the Volcano backend the tiers, and whether the HyperNodes of the Topology as it is are written", func() {
		gen := hypernodes.New(suite.Client, topo)
		Expect(gen.Topology()).To(Equal(topo))
		_, _, _, err := gen.Tiers(ctx)
		Expect(err).To(MatchError(volcano.ErrNoTopology))

		node(topo+"-a", blockLabel, "b1", rackLabel, "r1")
		Expect(suite.Client.Create(ctx, blockRackHost())).To(Succeed())
		tiers, nodeLevel, written, err := gen.Tiers(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(tiers).To(Equal(map[string]int{"block": 2, "rack": 1}))
		Expect(nodeLevel).To(Equal("host"))
		Expect(written).To(BeFalse(), "nothing is written yet")

		_, err = gen.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: topo}})
		Expect(err).NotTo(HaveOccurred())
		Expect(generated(Default)).To(HaveLen(2))
		_, _, written, err = gen.Tiers(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(written).To(BeTrue())

		// A new generation of the Topology is not written until the
		// generator has run again.
		t := &schedulingv1alpha1.Topology{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: topo}, t)).To(Succeed())
		t.Spec.Levels = append([]schedulingv1alpha1.TopologyLevel{{Name: "zone", NodeLabel: "example.com/zone"}}, t.Spec.Levels...)
		Expect(suite.Client.Update(ctx, t)).To(Succeed())
		tiers, _, written, err = gen.Tiers(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(tiers).To(Equal(map[string]int{"zone": 3, "block": 2, "rack": 1}))
		Expect(written).To(BeFalse())
	})
})

var _ = Describe("HyperNode names", func() {
	It("are valid, deterministic, and tell apart domains whose values read alike", func() {
		names := map[string]bool{}
		for _, path := range [][]string{{"b-1", "r"}, {"b", "1-r"}, {"B_1", "r"}, {"b.1", "r"}, {strings.Repeat("x", 63), strings.Repeat("y", 63)}} {
			n := hypernodes.Name("default", "rack", path)
			Expect(n).To(MatchRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`))
			Expect(len(n)).To(BeNumerically("<=", 63))
			Expect(hypernodes.Name("default", "rack", path)).To(Equal(n))
			Expect(names).NotTo(HaveKey(n), "path %v", path)
			names[n] = true
		}
		Expect(hypernodes.Name("default", "rack", []string{"b1", "r1"})).To(HavePrefix("default-rack-b1-r1-"))
	})
})
