package topology_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// Which nodes a waiting gang holds, by its required rule: one block of
// three racks of four 8-GPU hosts, where rack r0 has 1 host free, r1 has
// 3 (h0 busy) and r2 has 2 (h0, h1 busy).
func TestNearest(t *testing.T) {
	nodes := gpuNodes(1, 3, 4, 8)
	busy := []*corev1.Pod{
		used("b0-r0-h0", 8), used("b0-r0-h1", 8), used("b0-r0-h2", 8),
		used("b0-r1-h0", 8),
		used("b0-r2-h0", 8), used("b0-r2-h1", 8),
	}
	maxPerRack := api.LevelRule{Level: "rack", Kind: api.RulePack, Max: 2, Required: true}
	partitions := api.LevelRule{Level: "rack", Kind: api.RulePartition, Partitions: 2, Required: true}
	tests := []struct {
		name    string
		members int
		rules   []api.LevelRule
		// heldByOther are nodes another gang holds first.
		heldByOther []string
		want        []string
		wantOK      bool
	}{{
		name:    "rack packed, 4 members: every host of the rack with the most free, the busy one too",
		members: 4, rules: []api.LevelRule{rule("rack", api.RulePack, true)},
		want: []string{"b0-r1-h0", "b0-r1-h1", "b0-r1-h2", "b0-r1-h3"}, wantOK: true,
	}, {
		name:    "rack packed, 2 members: the two free hosts of that rack, no more",
		members: 2, rules: []api.LevelRule{rule("rack", api.RulePack, true)},
		want: []string{"b0-r1-h1", "b0-r1-h2"}, wantOK: true,
	}, {
		name:    "the innermost required rule decides: block packed, rack packed",
		members: 2, rules: []api.LevelRule{rule("block", api.RulePack, true), rule("rack", api.RulePack, true)},
		want: []string{"b0-r1-h1", "b0-r1-h2"}, wantOK: true,
	}, {
		name:    "two partitions of 2: the two racks with the most free, 2 hosts each",
		members: 4, rules: []api.LevelRule{partitions},
		want: []string{"b0-r1-h1", "b0-r1-h2", "b0-r2-h2", "b0-r2-h3"}, wantOK: true,
	}, {
		name:    "at most 2 per rack: two racks, as two partitions",
		members: 4, rules: []api.LevelRule{maxPerRack},
		want: []string{"b0-r1-h1", "b0-r1-h2", "b0-r2-h2", "b0-r2-h3"}, wantOK: true,
	}, {
		name:    "a host another gang holds is not counted: r1 could then take 3 of 4, so r2",
		members: 4, rules: []api.LevelRule{rule("rack", api.RulePack, true)}, heldByOther: []string{"b0-r1-h1"},
		want: []string{"b0-r2-h0", "b0-r2-h1", "b0-r2-h2", "b0-r2-h3"}, wantOK: true,
	}, {
		name:    "no rack could ever take 5: nothing to hold",
		members: 5, rules: []api.LevelRule{rule("rack", api.RulePack, true)},
		wantOK: true,
	}, {
		name:    "preferred rules only: the caller holds by members",
		members: 4, rules: []api.LevelRule{rule("rack", api.RulePack, false)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := st.MakeJob("ns", "g").MinMember(int32(tt.members)).Obj()
			job.Topology = &api.TopologyPolicy{Topology: fabric.Name, Rules: tt.rules}
			snap := st.MustSnapshot(nodes, append(workers(tt.members, 8), busy...), []*api.JobInfo{job})
			snap.Topologies = map[string]*api.TopologyInfo{fabric.Name: fabric}
			ssn := framework.OpenSession(snap, plugins.Default()...)
			other := st.MakeJob("ns", "other").Obj()
			for _, name := range tt.heldByOther {
				ssn.Hold(other, []*api.NodeInfo{ssn.Nodes[name]})
			}
			g := ssn.Jobs["ns/g"]
			got, ok := topology.Nearest(ssn, g, g.PendingTasks())
			var names []string
			for _, n := range got {
				names = append(names, n.Name)
			}
			slices.Sort(names)
			if ok != tt.wantOK || !slices.Equal(names, tt.want) {
				t.Errorf("Nearest = %v, %v; want %v, %v", names, ok, tt.want, tt.wantOK)
			}
		})
	}
}
