package actions_test

import (
	"fmt"
	"testing"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// A gang whose pods select few nodes costs the same checks however many
// other nodes there are: the searches visit the candidates only.
func TestScarceFitCostsTheSameOnMoreNodes(t *testing.T) {
	cluster := func(others int) cluster {
		var c cluster
		for i := range 4 {
			c.nodes = append(c.nodes, st.MakeNode(fmt.Sprintf("cpu-%d", i)).Capacity("16", "64Gi", 0).Label("pool", "cpu").Obj())
		}
		for i := range 2 {
			c.nodes = append(c.nodes, st.MakeNode(fmt.Sprintf("h100-%d", i)).Capacity("32", "256Gi", 8).Label("model", "h100").Obj())
		}
		for i := range others {
			c.nodes = append(c.nodes, st.MakeNode(fmt.Sprintf("a100-%04d", i)).Capacity("32", "256Gi", 8).Label("model", "a100").Obj())
		}
		for g := range 5 {
			name := fmt.Sprintf("g%d", g)
			c.jobs = append(c.jobs, st.MakeJob("ns", name).MinMember(4).Obj())
			c.pods = append(c.pods, st.MakePod("ns", name+"-master").Job(name).Role("master").Req("1", "1Gi").NodeSelector("pool", "cpu").Obj())
			for w := range 3 {
				c.pods = append(c.pods, st.MakePod("ns", fmt.Sprintf("%s-worker-%d", name, w)).Job(name).Role("worker").
					Req("1", "1Gi").GPU(1).NodeSelector("model", "h100").Obj())
			}
		}
		return c
	}
	var work []framework.Stats
	for _, others := range []int{10, 1000} {
		c := cluster(others)
		ssn := run(t, c, plugins.Default(), actions.NewAllocate())
		if got := len(ssn.Bindings()); got != len(c.pods) {
			t.Fatalf("%d other nodes: bound %d of %d pods: %v", others, got, len(c.pods), ssn.Unschedulable())
		}
		checkInvariants(t, c, ssn.Bindings())
		work = append(work, ssn.Stats())
	}
	if work[0].PredicateEvaluations != work[1].PredicateEvaluations || work[0].DynamicChecks != work[1].DynamicChecks {
		t.Errorf("work grew with the other nodes: 10 others %+v, 1000 others %+v", work[0], work[1])
	}
}
