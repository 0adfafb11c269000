package topology_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

const (
	blockKey = "example.com/block"
	rackKey  = "example.com/rack"
)

// fabric is a Topology of blocks, racks and hosts.
var fabric = &api.TopologyInfo{Name: "fabric", Levels: []api.TopologyLevel{
	{Name: "block", NodeLabel: blockKey}, {Name: "rack", NodeLabel: rackKey}, {Name: "host", NodeLabel: corev1.LabelHostname},
}}

// gpuNodes are blocks x racks x hosts nodes with gpus GPUs each, named
// b<block>-r<rack>-h<host>; racks are named b<block>-r<rack>.
func gpuNodes(blocks, racks, hosts int, gpus int64) []*corev1.Node {
	var out []*corev1.Node
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				out = append(out, st.MakeNode(fmt.Sprintf("b%d-r%d-h%d", b, r, h)).Capacity("64", "512Gi", gpus).
					Label(blockKey, fmt.Sprintf("b%d", b)).Label(rackKey, fmt.Sprintf("b%d-r%d", b, r)).Obj())
			}
		}
	}
	return out
}

// workers are n pending pods of gang g with gpus GPUs each, replica
// indexes 0..n-1.
func workers(n int, gpus int64) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, st.MakePod("ns", fmt.Sprintf("g-worker-%d", i)).Job("g").Role("worker").Req("1", "1Gi").GPU(gpus).
			Labels(topology.ReplicaIndexLabel, fmt.Sprint(i)).Obj())
	}
	return out
}

// used is a running pod of another scheduler taking gpus GPUs of node.
func used(node string, gpus int64) *corev1.Pod {
	return st.MakePod("other", "used-"+node).Req("1", "1Gi").GPU(gpus).Node(node).Phase(corev1.PodRunning).Obj()
}

func rule(level string, kind api.RuleKind, required bool) api.LevelRule {
	return api.LevelRule{Level: level, Kind: kind, Required: required}
}

// place runs topology.Place for gang g's pending workers under policy.
func place(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, pol *api.TopologyPolicy) (topology.Result, *framework.Session) {
	t.Helper()
	job := st.MakeJob("ns", "g").MinMember(1).Obj()
	job.Topology = pol
	snap := st.MustSnapshot(nodes, pods, []*api.JobInfo{job})
	snap.Topologies = map[string]*api.TopologyInfo{fabric.Name: fabric}
	ssn := framework.OpenSession(snap, plugins.Default()...)
	return topology.Place(ssn, ssn.Jobs["ns/g"], ssn.Jobs["ns/g"].PendingTasks(), nil), ssn
}

// where maps each placed pod to the value of key on its node.
func where(ssn *framework.Session, res topology.Result, key string) map[string]string {
	out := map[string]string{}
	for _, d := range res.Stmt.Placements() {
		out[d.Task.Name] = ssn.Nodes[d.Node].Node.Labels[key]
	}
	return out
}

// perDomain counts the placed pods per value of key.
func perDomain(ssn *framework.Session, res topology.Result, key string) map[string]int {
	out := map[string]int{}
	for _, v := range where(ssn, res, key) {
		out[v]++
	}
	return out
}

func counts(m map[string]int) []int {
	return slices.Sorted(maps.Values(m))
}

// Sakkara's first user story: 8 pods in two partitions, each in its own
// rack, packed on nodes within the rack.
func TestPartitionOverRacksPackedWithin(t *testing.T) {
	nodes := gpuNodes(1, 4, 2, 4) // 4 racks of 2 hosts with 4 GPUs
	res, ssn := place(t, nodes, workers(8, 1), &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{
		{Level: "rack", Kind: api.RulePartition, Partitions: 2, Required: true},
		rule("host", api.RulePack, false),
	}})
	if res.Stmt == nil {
		t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
	}
	if got := counts(perDomain(ssn, res, rackKey)); !slices.Equal(got, []int{4, 4}) {
		t.Errorf("per rack %v, want two racks of 4", perDomain(ssn, res, rackKey))
	}
	if got := counts(perDomain(ssn, res, corev1.LabelHostname)); !slices.Equal(got, []int{4, 4}) {
		t.Errorf("per host %v, want each partition packed on one host", perDomain(ssn, res, corev1.LabelHostname))
	}
	if len(res.Outcome.Unmet) != 0 {
		t.Errorf("unmet %v, want every rule kept", res.Outcome.Unmet)
	}
}

// Sakkara's second user story: 6 pods on one server (here a rack), spread
// over its nodes with 2 to 4 on each.
func TestPackedServerSpreadOverNodesInRange(t *testing.T) {
	nodes := gpuNodes(1, 2, 3, 8)
	res, ssn := place(t, nodes, workers(6, 1), &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{
		rule("rack", api.RulePack, true),
		{Level: "host", Kind: api.RuleSpread, Min: 2, Max: 4},
	}})
	if res.Stmt == nil {
		t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
	}
	if racks := perDomain(ssn, res, rackKey); len(racks) != 1 {
		t.Errorf("racks %v, want one", racks)
	}
	for host, n := range perDomain(ssn, res, corev1.LabelHostname) {
		if n < 2 || n > 4 {
			t.Errorf("host %s holds %d, want 2 to 4", host, n)
		}
	}
	if got := counts(perDomain(ssn, res, corev1.LabelHostname)); !slices.Equal(got, []int{2, 2, 2}) {
		t.Errorf("per host %v, want spread 2, 2, 2", got)
	}
}

// Ranks follow the tree: workers with neighbouring indexes share a
// domain, and each member is labelled with its domains and rank.
func TestRanksFollowTheTree(t *testing.T) {
	nodes := gpuNodes(1, 2, 2, 2) // 2 racks of 2 hosts of 2 GPUs
	res, ssn := place(t, nodes, workers(8, 1), &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{
		rule("rack", api.RuleSpread, true),
	}})
	if res.Stmt == nil {
		t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
	}
	hosts := where(ssn, res, corev1.LabelHostname)
	for i := 0; i < 8; i += 2 {
		a, b := fmt.Sprintf("g-worker-%d", i), fmt.Sprintf("g-worker-%d", i+1)
		if hosts[a] != hosts[b] {
			t.Errorf("%s on %s, %s on %s: neighbouring ranks apart", a, hosts[a], b, hosts[b])
		}
	}
	racks := where(ssn, res, rackKey)
	if racks["g-worker-0"] != racks["g-worker-3"] || racks["g-worker-4"] != racks["g-worker-7"] || racks["g-worker-0"] == racks["g-worker-4"] {
		t.Errorf("racks %v: want workers 0-3 in one rack and 4-7 in the other", racks)
	}
	for _, d := range res.Stmt.Placements() {
		idx := strings.TrimPrefix(d.Task.Name, "g-worker-")
		node := ssn.Nodes[d.Node].Node
		if d.Labels[topology.RankLabel] != idx || d.Labels[topology.LevelLabelPrefix+"rack"] != node.Labels[rackKey] ||
			d.Labels[topology.LevelLabelPrefix+"host"] != node.Name || d.Labels[topology.LevelLabelPrefix+"block"] != "b0" {
			t.Errorf("%s on %s: labels %v", d.Task.Name, d.Node, d.Labels)
		}
	}
	want := []framework.LevelOutcome{
		{Level: "block", Domains: []framework.DomainCount{{Name: "b0", Members: 8}}},
		{Level: "rack", Domains: []framework.DomainCount{{Name: "b0-r0", Members: 4}, {Name: "b0-r1", Members: 4}}},
	}
	if got := res.Outcome.Levels[:2]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcome %v, want %v", got, want)
	}
}

func TestRequiredAndPreferred(t *testing.T) {
	// 3 racks of 2 hosts with 8 GPUs; rack b0-r0 has 4 GPUs in use, the
	// others 12: the roomiest rack holds 12 of 16 one-GPU workers.
	nodes := gpuNodes(1, 3, 2, 8)
	busy := []*corev1.Pod{used("b0-r0-h0", 4), used("b0-r1-h0", 4), used("b0-r2-h0", 4)}
	tests := []struct {
		name    string
		rules   []api.LevelRule
		n       int
		reason  string // "" wants it placed
		message string // in the reason's message, or in the unmet lines
		racks   []int  // per rack counts, sorted
	}{
		{name: "required pack that no rack holds: nothing placed, the roomiest rack named",
			rules: []api.LevelRule{rule("rack", api.RulePack, true)}, n: 16,
			reason: topology.ReasonTopologyNotSatisfied, message: "rack: pack: no domain has room for all 16 members; the most is b0-r0 with 12"},
		{name: "preferred pack that no rack holds: two racks, said so",
			rules: []api.LevelRule{rule("rack", api.RulePack, false)}, n: 16,
			message: "rack: pack: 2 domains in b0, not 1 (the room allowed no fewer)", racks: []int{4, 12}},
		{name: "required pack that fits: the tightest rack that holds them",
			rules: []api.LevelRule{rule("rack", api.RulePack, true)}, n: 10, racks: []int{10}},
		{name: "required partition into 2",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePartition, Partitions: 2, Required: true}}, n: 16, racks: []int{8, 8}},
		{name: "required partition into 4 with 3 racks",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePartition, Partitions: 4, Required: true}}, n: 8,
			reason: topology.ReasonTopologyNotSatisfied, message: "rack: partition into 4 in b0: 4 partitions of 8 members need 4 domains with room for 2; 0 more have it"},
		{name: "preferred partition into 4 with 3 racks: packed instead, said so",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePartition, Partitions: 4}}, n: 8,
			message: "rack: partition into 4 in b0", racks: []int{8}},
		{name: "required spread over 3 racks",
			rules: []api.LevelRule{rule("rack", api.RuleSpread, true)}, n: 9, racks: []int{3, 3, 3}},
		{name: "factor 8 per rack: 8 of the roomiest rack's 12 and 8 of another's",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Factor: 8, Required: false}}, n: 16, racks: []int{8, 8},
			message: "rack: pack: 2 domains in b0, not 1"},
		{name: "a required factor the gang is no multiple of",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Factor: 8, Required: true}}, n: 12,
			reason: topology.ReasonTopologyNotSatisfied, message: "12 members are not a multiple of factor 8"},
		{name: "at most 4 per rack, preferred pack: 3 racks of 4",
			rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Max: 4}}, n: 12, racks: []int{4, 4, 4}},
		{name: "a level the topology lacks",
			rules: []api.LevelRule{rule("row", api.RulePack, true)}, n: 2,
			reason: topology.ReasonTopologyNotFound, message: `topology "fabric" has no level "row"; its levels are block, rack, host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ssn := place(t, nodes, append(slices.Clone(busy), workers(tt.n, 1)...), &api.TopologyPolicy{Topology: "fabric", Rules: tt.rules})
			if tt.reason != "" {
				if res.Stmt != nil {
					t.Fatalf("placed %v, want %s", perDomain(ssn, res, rackKey), tt.reason)
				}
				if res.Reason != tt.reason || !strings.Contains(res.Message, tt.message) {
					t.Errorf("%s: %s; want %s: ...%s...", res.Reason, res.Message, tt.reason, tt.message)
				}
				return
			}
			if res.Stmt == nil {
				t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
			}
			if got := counts(perDomain(ssn, res, rackKey)); !slices.Equal(got, tt.racks) {
				t.Errorf("per rack %v, want %v", perDomain(ssn, res, rackKey), tt.racks)
			}
			if tt.message != "" && !strings.Contains(strings.Join(res.Outcome.Unmet, "\n"), tt.message) {
				t.Errorf("unmet %q, want %q", res.Outcome.Unmet, tt.message)
			}
			if tt.message == "" && len(res.Outcome.Unmet) > 0 {
				t.Errorf("unmet %q, want every rule kept", res.Outcome.Unmet)
			}
		})
	}
}

// One worker per host (anti-affinity of the gang's workers toward each
// other) limits every host's room to one: the gang goes to the rack with
// hosts enough, though the other has the GPUs.
func TestOneMemberPerHostCountsInTheRoom(t *testing.T) {
	nodes := append(gpuNodes(1, 1, 2, 8), gpuNodes(1, 1, 4, 2)...) // rack b0-r0: 2 hosts of 8; then 4 hosts of 2, named alike: rename
	for _, n := range nodes[2:] {
		n.Name = strings.Replace(n.Name, "b0-r0", "b0-r1", 1)
		n.Labels[corev1.LabelHostname] = n.Name
		n.Labels[rackKey] = "b0-r1"
	}
	pods := workers(4, 1)
	for _, p := range pods {
		w := st.PodWrapper{Pod: *p}
		w.Labels("job", "g").PodAntiAffinity(corev1.LabelHostname, "job", "g")
		*p = w.Pod
	}
	res, ssn := place(t, nodes, pods, &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{rule("rack", api.RulePack, true)}})
	if res.Stmt == nil {
		t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
	}
	// b0-r0 has room for 16 by resources but 2 by the rule; b0-r1 for 4.
	if racks := perDomain(ssn, res, rackKey); racks["b0-r1"] != 4 {
		t.Errorf("per rack %v, want all 4 in b0-r1", racks)
	}
}

// A rule the room does not count (one host port per node) is found out by
// the placement, and the search runs again with the room corrected: the
// gang goes to the rack that can hold it.
func TestSearchAgainWhenTheRoomWasWrong(t *testing.T) {
	wide := gpuNodes(1, 1, 1, 8)   // rack b0-r0: one host of 8 GPUs
	narrow := gpuNodes(1, 1, 4, 2) // then 4 hosts of 2,
	for _, n := range narrow {     // moved to rack b0-r1
		n.Name = strings.Replace(n.Name, "b0-r0", "b0-r1", 1)
		n.Labels[corev1.LabelHostname] = n.Name
		n.Labels[rackKey] = "b0-r1"
	}
	pods := workers(4, 1)
	for _, p := range pods {
		w := st.PodWrapper{Pod: *p}
		w.HostPort("", "", 2222)
		*p = w.Pod
	}
	res, ssn := place(t, append(wide, narrow...), pods, &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{rule("rack", api.RulePack, true)}})
	if res.Stmt == nil {
		t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
	}
	if racks := perDomain(ssn, res, rackKey); racks["b0-r1"] != 4 {
		t.Errorf("per rack %v, want all 4 in b0-r1", racks)
	}
	if hosts := perDomain(ssn, res, corev1.LabelHostname); len(hosts) != 4 {
		t.Errorf("per host %v, want one each", hosts)
	}
}

// A gang that one domain of its packed level holds goes to the tightest
// such domain of the whole tree, whatever the blocks (levels without a
// rule) around it hold: best fit at the level of the user's rule, so that
// the roomier racks stay whole for bigger gangs.
func TestPackedGangTakesTheTightestRackOfTheTree(t *testing.T) {
	// 2 blocks of 2 racks of one host with 8 GPUs; busy is the GPUs in use
	// per rack, in the order b0-r0, b0-r1, b1-r0, b1-r1.
	tests := []struct {
		name  string
		busy  []int64
		rules []api.LevelRule
		n     int
		want  string // the rack
	}{
		{name: "required: the tightest rack, in the block with more racks that hold the gang",
			// b0 holds 5 in one rack (b0-r0, 8 free), b1 in two (6 free each).
			busy: []int64{0, 6, 2, 2}, rules: []api.LevelRule{rule("rack", api.RulePack, true)}, n: 5, want: "b1-r0"},
		{name: "preferred: the same",
			busy: []int64{0, 6, 2, 2}, rules: []api.LevelRule{rule("rack", api.RulePack, false)}, n: 5, want: "b1-r0"},
		{name: "as tight in two blocks: the tighter block",
			// b0-r1 and b1-r0 have 6 free; b0 has 14 in all, b1 8.
			busy: []int64{2, 0, 2, 6}, rules: []api.LevelRule{rule("rack", api.RulePack, true)}, n: 6, want: "b1-r0"},
		{name: "an exact fit anywhere wins",
			busy: []int64{1, 3, 0, 0}, rules: []api.LevelRule{rule("rack", api.RulePack, true)}, n: 5, want: "b0-r1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := gpuNodes(2, 2, 1, 8)
			pods := workers(tt.n, 1)
			for i, g := range tt.busy {
				if g > 0 {
					pods = append(pods, used(nodes[i].Name, g))
				}
			}
			res, ssn := place(t, nodes, pods, &api.TopologyPolicy{Topology: "fabric", Rules: tt.rules})
			if res.Stmt == nil {
				t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
			}
			if got := perDomain(ssn, res, rackKey); !maps.Equal(got, map[string]int{tt.want: tt.n}) {
				t.Errorf("per rack %v, want all %d in %s", got, tt.n, tt.want)
			}
			if len(res.Outcome.Unmet) != 0 {
				t.Errorf("unmet %v, want every rule kept", res.Outcome.Unmet)
			}
		})
	}
}

// Members placed later (a replacement of a lost member, say) join the
// gang's placed members, so that the rules hold for all of them; when
// they cannot, a required rule keeps the newcomer pending and says why.
func TestPlacedMembersStay(t *testing.T) {
	// Racks b0-r0 and b0-r1 of 2 hosts with 4 GPUs, and b0-r2 with 2 hosts
	// of 8: a fresh gang of 8 one-GPU workers would go to the tightest
	// rack that holds it, b0-r0 or b0-r1.
	nodes := append(gpuNodes(1, 2, 2, 4), gpuNodes(1, 3, 2, 8)[4:]...)
	running := func(i int, node string) *corev1.Pod {
		return st.MakePod("ns", fmt.Sprintf("g-worker-%d", i)).Job("g").Role("worker").Req("1", "1Gi").GPU(1).
			Labels(topology.ReplicaIndexLabel, fmt.Sprint(i)).Node(node).Phase(corev1.PodRunning).Obj()
	}
	pending := func(i int) *corev1.Pod {
		return st.MakePod("ns", fmt.Sprintf("g-worker-%d", i)).Job("g").Role("worker").Req("1", "1Gi").GPU(1).
			Labels(topology.ReplicaIndexLabel, fmt.Sprint(i)).Obj()
	}
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		rules   []api.LevelRule
		want    map[string]string // pending pod -> rack
		rank    string
		message string // wants it refused with this in the message
	}{{
		name: "a replacement joins its packed gang's rack, not the best fit",
		pods: []*corev1.Pod{
			running(0, "b0-r2-h0"), running(1, "b0-r2-h0"), running(2, "b0-r2-h0"), running(3, "b0-r2-h0"),
			running(4, "b0-r2-h1"), running(5, "b0-r2-h1"), pending(6), running(7, "b0-r2-h1"),
		},
		rules: []api.LevelRule{rule("rack", api.RulePack, true)},
		want:  map[string]string{"g-worker-6": "b0-r2"},
		rank:  "6",
	}, {
		name: "a replacement joins the partition that lacks it",
		pods: []*corev1.Pod{
			running(0, "b0-r0-h0"), running(1, "b0-r0-h0"), running(2, "b0-r0-h1"), running(3, "b0-r0-h1"),
			pending(4), running(5, "b0-r2-h0"), running(6, "b0-r2-h0"), running(7, "b0-r2-h0"),
		},
		rules: []api.LevelRule{{Level: "rack", Kind: api.RulePartition, Partitions: 2, Required: true}},
		want:  map[string]string{"g-worker-4": "b0-r2"},
		rank:  "4",
	}, {
		name: "no room beside the placed members: the required rule keeps the replacement pending",
		pods: []*corev1.Pod{
			running(0, "b0-r0-h0"), running(1, "b0-r0-h0"), running(2, "b0-r0-h0"), running(3, "b0-r0-h0"),
			running(4, "b0-r0-h1"), running(5, "b0-r0-h1"), running(6, "b0-r0-h1"), pending(7),
			used("b0-r0-h1", 1),
		},
		rules:   []api.LevelRule{rule("rack", api.RulePack, true)},
		message: "rack: pack in b0: b0-r0, where the gang's 7 placed members are, has room for 7 of the 8 members",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ssn := place(t, nodes, tt.pods, &api.TopologyPolicy{Topology: "fabric", Rules: tt.rules})
			if tt.message != "" {
				if res.Stmt != nil || res.Reason != topology.ReasonTopologyNotSatisfied || !strings.Contains(res.Message, tt.message) {
					t.Fatalf("placed %v (%s: %s); want %s: ...%s...", res.Stmt != nil, res.Reason, res.Message, topology.ReasonTopologyNotSatisfied, tt.message)
				}
				return
			}
			if res.Stmt == nil {
				t.Fatalf("not placed: %s: %s", res.Reason, res.Message)
			}
			if got := where(ssn, res, rackKey); !maps.Equal(got, tt.want) {
				t.Errorf("placed %v, want %v", got, tt.want)
			}
			for _, d := range res.Stmt.Placements() {
				if d.Labels[topology.RankLabel] != tt.rank {
					t.Errorf("%s: rank %q, want %q", d.Task.Name, d.Labels[topology.RankLabel], tt.rank)
				}
			}
			racks := 0
			for _, l := range res.Outcome.Levels {
				if l.Level == "rack" {
					for _, d := range l.Domains {
						racks++
						_ = d
					}
				}
			}
			if tt.rules[0].Kind == api.RulePack && racks != 1 {
				t.Errorf("outcome %v: want the whole gang in one rack", res.Outcome.Levels)
			}
		})
	}
}
