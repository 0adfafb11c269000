package framework_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
)

// The candidates of a pod are the nodes carrying its nodeSelector's rarest
// label, in NodeList order; a node outside them never fits it.
func TestCandidateNodes(t *testing.T) {
	// n00..n05, pool a/b alternating; n01 and n04 also zone=z1.
	nodes := cpuNodes(6, "8")
	nodes[1].Labels["zone"], nodes[4].Labels["zone"] = "z1", "z1"
	pod := func(name string) *st.PodWrapper { return st.MakePod("ns", name).Job("j").Req("1", "1Gi") }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{name: "no selector: every node", pod: pod("all").Obj(), want: []string{"n00", "n01", "n02", "n03", "n04", "n05"}},
		{name: "one label", pod: pod("b").NodeSelector("pool", "b").Obj(), want: []string{"n01", "n03", "n05"}},
		{name: "the rarest of two labels", pod: pod("bz").NodeSelector("pool", "b").NodeSelector("zone", "z1").Obj(), want: []string{"n01", "n04"}},
		{name: "a label no node has", pod: pod("none").NodeSelector("pool", "c").Obj(), want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.MustSnapshot(nodes, []*corev1.Pod{tc.pod}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
			ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
			task := snap.Jobs["ns/j"].PendingTasks()[0]
			cls := ssn.ClassOf(task)
			got := []string{}
			for _, n := range ssn.CandidateNodes(cls, task) {
				got = append(got, n.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("candidates %v, want %v", got, tc.want)
			}
			// No node outside the candidates fits.
			for _, n := range snap.NodeList {
				if ssn.Predicate(task, n).Fit && !slices.Contains(got, n.Name) {
					t.Errorf("%s fits but is no candidate", n.Name)
				}
			}
		})
	}
}
