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

// A class caches answers for its candidates, but a caller that asks about
// every node (a diagnosis) gets the same answers, each evaluated once,
// for the nodes outside them; a node of another snapshot is evaluated
// afresh and cached nowhere.
func TestPredicateCacheOutsideCandidates(t *testing.T) {
	nodes := cpuNodes(6, "8") // pool a/b alternating: candidates n01, n03, n05
	snap := st.MustSnapshot(nodes, []*corev1.Pod{st.MakePod("ns", "p").Job("j").Req("1", "1Gi").NodeSelector("pool", "b").Obj()},
		[]*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
	task := snap.Jobs["ns/j"].PendingTasks()[0]
	if got := len(ssn.CandidateNodes(ssn.ClassOf(task), task)); got != 3 {
		t.Fatalf("%d candidates, want 3", got)
	}
	for pass := range 2 { // the second pass reads the cache
		for _, n := range snap.NodeList {
			fresh := framework.OpenSession(snap, predicates.New(predicates.Config{})).Predicate(task, n)
			if got := ssn.Predicate(task, n); got != fresh || got.Fit != (n.Node.Labels["pool"] == "b") {
				t.Errorf("pass %d, %s: %v, fresh %v", pass, n.Name, got, fresh)
			}
		}
	}
	if s := ssn.Stats(); s.PredicateEvaluations != 6 || s.CacheHits != 6 {
		t.Errorf("evaluations %d, cache hits %d; want one evaluation per node (6), then 6 hits", s.PredicateEvaluations, s.CacheHits)
	}

	// Index 0 like n00 (pool a), but in pool b and of no snapshot.
	foreign := api.NewNodeInfo(st.MakeNode("n00").Capacity("8", "64Gi", 0).Label("pool", "b").Obj())
	for range 2 {
		if !ssn.Predicate(task, foreign).Fit {
			t.Error("a fitting node of another snapshot does not fit")
		}
	}
	if ssn.Predicate(task, snap.NodeList[0]).Fit {
		t.Error("the foreign node's answer leaked to n00")
	}
	if got := ssn.Stats().PredicateEvaluations; got != 8 {
		t.Errorf("evaluations = %d, want 6 + 2 uncached", got)
	}
}
