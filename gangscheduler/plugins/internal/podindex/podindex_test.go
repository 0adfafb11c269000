package podindex_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/internal/podindex"
)

func names(ps []podindex.Placed) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Task.Name)
	}
	slices.Sort(out)
	return out
}

func selector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// Candidates narrows to the pods with the value an equality requirement
// asks for, and follows placements made after the index was built.
func TestCandidates(t *testing.T) {
	snap := st.MustSnapshot([]*corev1.Node{st.MakeNode("n1").Capacity("8", "8Gi", 0).Obj()}, []*corev1.Pod{
		st.MakePod("ns", "a0").Labels("job", "a", "role", "w").Node("n1").Obj(),
		st.MakePod("ns", "a1").Labels("job", "a").Node("n1").Obj(),
		st.MakePod("ns", "b0").Labels("job", "b", "role", "w").Node("n1").Obj(),
		st.MakePod("ns", "nolabels").Node("n1").Obj(),
	}, nil)
	x := podindex.New(snap.NodesTaken)
	tests := []struct {
		name string
		sel  labels.Selector
		want []string
	}{
		{"matchLabels", selector(t, &metav1.LabelSelector{MatchLabels: map[string]string{"job": "a"}}), []string{"a0", "a1"}},
		{"In with one value", selector(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "job", Operator: metav1.LabelSelectorOpIn, Values: []string{"b"}}}}), []string{"b0"}},
		{"In with two values: every pod", selector(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "job", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}), []string{"a0", "a1", "b0", "nolabels"}},
		{"Exists: every pod", selector(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpExists}}}), []string{"a0", "a1", "b0", "nolabels"}},
		{"nil selector selects nothing", selector(t, nil), nil},
	}
	for _, tt := range tests {
		if got := names(x.Candidates(tt.sel)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}

	jobA := selector(t, &metav1.LabelSelector{MatchLabels: map[string]string{"job": "a"}})
	placed := api.NewTaskInfo("", st.MakePod("ns", "a2").Labels("job", "a").Obj())
	x.Add(placed, snap.Nodes["n1"])
	if got := names(x.Candidates(jobA)); !slices.Equal(got, []string{"a0", "a1", "a2"}) {
		t.Errorf("after Add: %v", got)
	}
	x.Remove(placed)
	if got := names(x.Candidates(jobA)); !slices.Equal(got, []string{"a0", "a1"}) {
		t.Errorf("after Remove: %v", got)
	}
}

// An index built after a node's room was reserved for a task lists the
// task's stand-in there (api.NodeInfo.AddStandIn), as it lists the node's
// pods: the rules between pods count it as on the node.
func TestCandidatesCountNominatedPods(t *testing.T) {
	snap := st.MustSnapshot([]*corev1.Node{st.MakeNode("n1").Capacity("8", "8Gi", 0).Obj()}, []*corev1.Pod{
		st.MakePod("ns", "a0").Labels("job", "a").Node("n1").Obj(),
	}, nil)
	n1 := snap.Nodes["n1"]
	waiting := api.NewTaskInfo("", st.MakePod("ns", "a1").Labels("job", "a").Obj())
	n1.AddStandIn(waiting.StandInOn(n1.Name, api.Resource{}))

	x := podindex.New(snap.NodesTaken)
	got := x.Candidates(selector(t, &metav1.LabelSelector{MatchLabels: map[string]string{"job": "a"}}))
	if !slices.Equal(names(got), []string{"a0", "a1"}) {
		t.Fatalf("candidates %v, want a0 and a1's stand-in", names(got))
	}
	for _, p := range got {
		if p.Node != n1 {
			t.Errorf("%s on %s, want n1", p.Task.Name, p.Node.Name)
		}
	}
}
