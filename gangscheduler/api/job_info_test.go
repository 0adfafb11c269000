package api_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// A gang is nominated while a pending member carries the
// status.nominatedNodeName a preemption wrote; a bound member's does not
// count (an API server before 1.35 leaves it there).
func TestJobNominated(t *testing.T) {
	tests := []struct {
		name string
		pod  *st.PodWrapper
		want bool
	}{
		{"pending, nominated", st.MakePod("ns", "p").Job("j").Nominated("n"), true},
		{"pending, not nominated", st.MakePod("ns", "p").Job("j"), false},
		{"bound, the nomination left on it", st.MakePod("ns", "p").Job("j").Nominated("n").Node("n").Phase(corev1.PodRunning), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := st.MustSnapshot([]*corev1.Node{st.MakeNode("n").Capacity("8", "8Gi", 0).Obj()}, []*corev1.Pod{tt.pod.Obj()},
				[]*api.JobInfo{st.MakeJob("ns", "j").Obj()})
			job := snap.Jobs["ns/j"]
			if got := job.Nominated(); got != tt.want {
				t.Errorf("Nominated() = %t, want %t (task nominated to %q)", got, tt.want, job.Tasks[0].NominatedNode)
			}
		})
	}
}
