package actions_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// fullCluster is two GPU nodes whose GPUs other pods all use, and a
// backlog of gangs of 3 one-GPU pods: none fits anywhere.
func fullCluster(gangs int, pending bool) cluster {
	var c cluster
	for _, name := range []string{"n1", "n2"} {
		n, used := gpuNode(name, 8, 8)
		c.nodes, c.pods = append(c.nodes, n), append(c.pods, used)
	}
	for g := range gangs {
		name := fmt.Sprintf("g%03d", g)
		j := st.MakeJob("ns", name).MinMember(3).Obj()
		if pending {
			j = withPhase(j, api.JobPending)
		}
		c.jobs = append(c.jobs, j)
		c.pods = append(c.pods, gpuGang(name, 3, 1)...)
	}
	return c
}

// A backlog of gangs whose pods fit no node costs one search per pod
// shape, whatever its length; every gang is still refused with a reason
// that names its own pod.
func TestBacklogIsSearchedOncePerGangShape(t *testing.T) {
	tests := []struct {
		name    string
		pending bool
		plugins []framework.Plugin
		acts    []framework.Action
		want    string // in every gang's message
	}{
		{name: "allocate", plugins: plugins.Default(), acts: []framework.Action{actions.NewAllocate()}, want: "no pod could be placed"},
		{name: "enqueue and allocate", pending: true, plugins: plugins.Default(),
			acts: []framework.Action{actions.NewEnqueue(), actions.NewAllocate()}, want: "the gang's 3 pods do not fit node by node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var work [2]framework.Stats
			for i, gangs := range []int{3, 30} {
				c := fullCluster(gangs, tc.pending)
				ssn := run(t, c, tc.plugins, tc.acts...)
				if b := ssn.Bindings(); len(b) != 0 {
					t.Fatalf("%d gangs: bound %v on a full cluster", gangs, b)
				}
				found := ssn.Unschedulable()
				for _, j := range c.jobs {
					f := found[j.UID]
					pod := fmt.Sprintf("pod ns/%s-", j.Name)
					if f.Reason != actions.ReasonNotEnoughResources || !strings.Contains(f.Message, tc.want) ||
						!strings.Contains(f.Message, pod) || !strings.Contains(f.Message, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu") {
						t.Errorf("%d gangs: %s: %+v", gangs, j.UID, f)
					}
				}
				work[i] = ssn.Stats()
			}
			if work[0].PredicateEvaluations != work[1].PredicateEvaluations || work[0].DynamicChecks != work[1].DynamicChecks {
				t.Errorf("work grew with the backlog: 3 gangs %+v, 30 gangs %+v", work[0], work[1])
			}
		})
	}
}

// A gang of another shape is not refused for looking like a refused one:
// here its pod is the refused gang's second pod, which found no room only
// because the first had taken it.
func TestBacklogRefusesOnlyTheSameShape(t *testing.T) {
	// One node of 4 CPUs. Gang a's two pods of 3 CPUs fit one at a time,
	// never together; gang b's one pod of 3 CPUs fits.
	c := cluster{nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()}}
	c.jobs = []*api.JobInfo{st.MakeJob("ns", "a").MinMember(2).Obj(), st.MakeJob("ns", "b").MinMember(1).Obj()}
	c.pods = append(makeGang("a", 2, cpu("3")), makeGang("b", 1, cpu("3"))...)
	ssn := schedule(t, c)
	got := placed(ssn)
	if len(got["ns/a"]) != 0 || got["ns/b"]["b-0"] != "n1" {
		t.Errorf("placed %v; want b-0 on n1 and nothing of a (%v)", got, ssn.Unschedulable())
	}
	checkInvariants(t, c, ssn.Bindings())
}

// A refusal by a queue holds for gangs of that queue: a gang of the same
// shape in another queue is placed.
func TestBacklogRefusalsArePerQueue(t *testing.T) {
	nodes, _ := gpuCluster(2, 0)
	capped := st.MakeQueue("a")
	capped.Capability = api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: 1}}
	c := cluster{nodes: nodes, queues: []*api.QueueInfo{capped, st.MakeQueue("b")}}
	for _, q := range []api.QueueID{"a", "b"} {
		name := "gang-" + string(q)
		c.jobs = append(c.jobs, st.MakeJob("ns", name).MinMember(2).Queue(q).Obj())
		c.pods = append(c.pods, gpuGang(name, 2, 1)...)
	}
	ssn := run(t, c, plugins.WithQueueShare(), actions.NewAllocate())
	got := placed(ssn)
	if len(got["ns/gang-a"]) != 0 || len(got["ns/gang-b"]) != 2 {
		t.Errorf("placed %v; want gang-b whole and nothing of gang-a (%v)", got, ssn.Unschedulable())
	}
	if f := ssn.Unschedulable()["ns/gang-a"]; !strings.Contains(f.Message, `queue "a"`) {
		t.Errorf("gang-a: %+v", f)
	}
}
