package topology_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// A random case: a tree of blocks, racks and hosts with GPUs, some in use
// by pods of another scheduler, and a gang of identical workers with one
// rule at the rack level (and, sometimes, a required pack at the block
// level above it).
type randomCase struct {
	nodes   []*corev1.Node
	busy    []*corev1.Pod
	free    map[string]int64 // free GPUs per node, as the test counts them
	rackOf  map[string]string
	blockOf map[string]string
	n       int
	gpus    int64
	rack    api.LevelRule
	block   *api.LevelRule
}

func (c *randomCase) String() string {
	return fmt.Sprintf("%d workers of %d GPUs, rack rule %+v, block rule %+v, free GPUs %v", c.n, c.gpus, c.rack, c.block, c.free)
}

func newRandomCase(r *rand.Rand) *randomCase {
	c := &randomCase{free: map[string]int64{}, rackOf: map[string]string{}, blockOf: map[string]string{}}
	blocks, racks, hosts := 1+r.IntN(3), 1+r.IntN(4), 1+r.IntN(4)
	perNode := []int64{4, 8}[r.IntN(2)]
	c.nodes = gpuNodes(blocks, racks, hosts, perNode)
	for _, n := range c.nodes {
		c.free[n.Name] = perNode
		c.rackOf[n.Name] = n.Labels[rackKey]
		c.blockOf[n.Name] = n.Labels[blockKey]
		if r.IntN(3) == 0 {
			use := 1 + r.Int64N(perNode)
			c.busy = append(c.busy, used(n.Name, use))
			c.free[n.Name] -= use
		}
	}
	c.gpus = []int64{1, 2, 4}[r.IntN(3)]
	c.n = 1 + r.IntN(16)
	c.rack = api.LevelRule{Level: "rack", Kind: []api.RuleKind{api.RulePack, api.RuleSpread, api.RulePartition}[r.IntN(3)], Required: r.IntN(2) == 0}
	if c.rack.Kind == api.RulePartition {
		c.rack.Partitions = 2 + r.IntN(3)
	}
	if r.IntN(4) == 0 {
		c.rack.Factor = []int{2, 4}[r.IntN(2)]
	}
	if r.IntN(4) == 0 {
		c.rack.Min = 1 + r.IntN(3)
		c.rack.Max = c.rack.Min + r.IntN(6)
	}
	if r.IntN(4) == 0 {
		c.block = &api.LevelRule{Level: "block", Kind: api.RulePack, Required: true}
	}
	return c
}

// room is how many workers fit in each domain of key, as the test
// counts it: free GPUs over the worker's, node by node.
func (c *randomCase) room(of map[string]string) map[string]int {
	out := map[string]int{}
	for node, free := range c.free {
		out[of[node]] += int(free / c.gpus)
	}
	return out
}

// greedyRacks is the baseline: the fewest racks that hold the gang,
// taking the roomiest first; 0 when all of them do not.
func (c *randomCase) greedyRacks() int {
	rooms := slices.Sorted(maps.Values(c.room(c.rackOf)))
	left := c.n
	for i := len(rooms) - 1; i >= 0; i-- {
		left -= rooms[i]
		if left <= 0 {
			return len(rooms) - i
		}
	}
	return 0
}

// check judges a placement of the case: every member on a node with the
// GPUs for it, and every required rule kept, counted from the nodes the
// members are on. It returns what is wrong.
func (c *randomCase) check(ssn *framework.Session, res topology.Result) []string {
	return c.checkNodes(placedNodes(ssn, res))
}

// placedNodes are the nodes a placement puts members on, one per member.
func placedNodes(ssn *framework.Session, res topology.Result) []string {
	var out []string
	for _, d := range res.Stmt.Placements() {
		out = append(out, ssn.Nodes[d.Node].Node.Name)
	}
	return out
}

// checkNodes judges the gang's members on nodes, one per member.
func (c *randomCase) checkNodes(nodes []string) []string {
	var bad []string
	placed := map[string]int64{}
	perRack, perBlock := map[string]int{}, map[string]int{}
	for _, node := range nodes {
		placed[node] += c.gpus
		perRack[c.rackOf[node]]++
		perBlock[c.blockOf[node]]++
	}
	for node, g := range placed {
		if g > c.free[node] {
			bad = append(bad, fmt.Sprintf("node %s: %d GPUs placed, %d free", node, g, c.free[node]))
		}
	}
	if total := len(nodes); total != c.n {
		bad = append(bad, fmt.Sprintf("%d of %d members placed", total, c.n))
	}
	if c.block != nil && len(perBlock) != 1 {
		bad = append(bad, fmt.Sprintf("required block pack: blocks %v", perBlock))
	}
	if !c.rack.Required {
		return bad
	}
	counts := make([]int, 0, len(perRack))
	for _, k := range perRack {
		counts = append(counts, k)
	}
	slices.Sort(counts)
	switch c.rack.Kind {
	case api.RulePack:
		if c.rack.Max == 0 && len(counts) != 1 {
			bad = append(bad, fmt.Sprintf("required pack: racks %v", perRack))
		}
	case api.RulePartition:
		if len(counts) != c.rack.Partitions || counts[len(counts)-1]-counts[0] > max(c.rack.Factor, 1) {
			bad = append(bad, fmt.Sprintf("required partition into %d: racks %v", c.rack.Partitions, perRack))
		}
	case api.RuleSpread:
		// Spread is among the racks of each block (the rule of a level
		// splits the members of each domain of the level above).
		byBlock := map[string][]int{}
		for rack, k := range perRack {
			b := rack[:len("b0")]
			byBlock[b] = append(byBlock[b], k)
		}
		// With a factor, counts are in its units: they differ by one unit.
		for b, ks := range byBlock {
			if slices.Max(ks)-slices.Min(ks) > max(c.rack.Factor, 1) {
				bad = append(bad, fmt.Sprintf("required spread: racks of %s hold %v", b, ks))
			}
		}
	}
	for rack, k := range perRack {
		if c.rack.Factor > 0 && k%c.rack.Factor != 0 {
			bad = append(bad, fmt.Sprintf("factor %d: rack %s holds %d", c.rack.Factor, rack, k))
		}
		if c.rack.Min > 0 && (k < c.rack.Min || k > c.rack.Max) {
			bad = append(bad, fmt.Sprintf("range [%d, %d]: rack %s holds %d", c.rack.Min, c.rack.Max, rack, k))
		}
	}
	return bad
}

// runRandomCase places a random case and judges it: required rules are
// never broken; a pack (required or preferred, no range or factor) uses
// no more racks than the greedy baseline, and a gang that one rack (or
// the whole cluster, for a preferred pack) has room for is placed.
func runRandomCase(t *testing.T, seed uint64) {
	t.Helper()
	c := newRandomCase(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	rules := []api.LevelRule{c.rack}
	if c.block != nil {
		rules = append(rules, *c.block)
	}
	res, ssn := place(t, c.nodes, append(slices.Clone(c.busy), workers(c.n, c.gpus)...), &api.TopologyPolicy{Topology: "fabric", Rules: rules})

	plainPack := c.rack.Kind == api.RulePack && c.rack.Factor == 0 && c.rack.Min == 0 && c.block == nil
	fitsOneRack := slices.ContainsFunc(slices.Collect(maps.Values(c.room(c.rackOf))), func(r int) bool { return r >= c.n })
	if res.Stmt == nil {
		switch {
		case plainPack && fitsOneRack:
			t.Fatalf("seed %d: %v: not placed (%s: %s), though a rack has room", seed, c, res.Reason, res.Message)
		case plainPack && !c.rack.Required && c.greedyRacks() > 0:
			t.Fatalf("seed %d: %v: not placed (%s: %s), though the cluster has room and the rule is preferred", seed, c, res.Reason, res.Message)
		case res.Reason == topology.ReasonTopologyNotFound:
			t.Fatalf("seed %d: %v: %s", seed, c, res.Message)
		}
		return
	}
	if bad := c.check(ssn, res); len(bad) > 0 {
		t.Fatalf("seed %d: %v:\n%v", seed, c, bad)
	}
	if plainPack {
		racks := map[string]bool{}
		for _, d := range res.Stmt.Placements() {
			racks[c.rackOf[ssn.Nodes[d.Node].Node.Name]] = true
		}
		if greedy := c.greedyRacks(); len(racks) > greedy {
			t.Fatalf("seed %d: %v: %d racks used, the greedy baseline needs %d", seed, c, len(racks), greedy)
		}
	}
	c.checkReplacements(t, seed, placedNodes(ssn, res), rules)
}

// checkReplacements keeps some members of a placed gang where they went,
// running, takes the others back to pending (lost members to replace),
// and places the gang again: it must be placed, since the first
// placement still is one, and the rules must hold for the whole gang.
func (c *randomCase) checkReplacements(t *testing.T, seed uint64, nodes []string, rules []api.LevelRule) {
	t.Helper()
	if c.n < 2 {
		return
	}
	r := rand.New(rand.NewPCG(seed, 7))
	pods := slices.Clone(c.busy)
	var kept []string
	// Members are placed in rank order: worker i went to nodes[i].
	keep := 1 + r.IntN(c.n-1)
	for i, w := range workers(c.n, c.gpus) {
		if i < len(nodes) && r.IntN(c.n) < keep {
			w.Spec.NodeName = nodes[i]
			w.Status.Phase = corev1.PodRunning
			kept = append(kept, nodes[i])
		}
		pods = append(pods, w)
	}
	if len(kept) == 0 || len(kept) == c.n {
		return
	}
	res, ssn := place(t, c.nodes, pods, &api.TopologyPolicy{Topology: "fabric", Rules: rules})
	if res.Stmt == nil {
		t.Fatalf("seed %d: %v: with %d members kept on %v, the rest not placed: %s: %s", seed, c, len(kept), kept, res.Reason, res.Message)
	}
	if bad := c.checkNodes(append(kept, placedNodes(ssn, res)...)); len(bad) > 0 {
		t.Fatalf("seed %d: %v: with %d members kept on %v:\n%v", seed, c, len(kept), kept, bad)
	}
}

func TestPlaceRandomized(t *testing.T) {
	for seed := range uint64(5000) {
		runRandomCase(t, seed)
	}
}

func FuzzPlace(f *testing.F) {
	for seed := range uint64(16) {
		f.Add(seed)
	}
	f.Fuzz(runRandomCase)
}
