package gang_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
)

const (
	P = api.Pending
	A = api.Allocated
	B = api.Bound
	R = api.Running
	S = api.Succeeded
	F = api.Failed
	X = api.Releasing
)

func jobWith(t *testing.T, min int32, minRole map[string]int32, tasks map[string][]api.TaskStatus) *api.JobInfo {
	t.Helper()
	job := api.NewJobInfo("ns", "j")
	job.MinMember, job.MinTaskMember = min, minRole
	for role, statuses := range tasks {
		for i, s := range statuses {
			task := api.NewTaskInfo(job.UID, st.MakePod("ns", fmt.Sprintf("%s-%d", role, i)).Role(role).Obj())
			task.Status = s
			if err := job.AddTask(task); err != nil {
				t.Fatal(err)
			}
		}
	}
	return job
}

func TestJobReadyAndValid(t *testing.T) {
	tests := []struct {
		name    string
		min     int32
		minRole map[string]int32
		tasks   map[string][]api.TaskStatus
		ready   bool
		valid   bool
	}{
		{"nothing placed", 2, nil, map[string][]api.TaskStatus{"worker": {P, P}}, false, true},
		{"allocated and running meet minMember", 2, nil, map[string][]api.TaskStatus{"worker": {A, R, P}}, true, true},
		{"bound counts", 2, nil, map[string][]api.TaskStatus{"worker": {B, A}}, true, true},
		{"one short of minMember", 3, nil, map[string][]api.TaskStatus{"worker": {B, A, P}}, false, true},
		{"failed and releasing do not count", 2, nil, map[string][]api.TaskStatus{"worker": {R, F, X}}, false, false},
		{"a succeeded member counts: its recreated peer is placed alone", 2, nil, map[string][]api.TaskStatus{"worker": {S, P}}, false, true},
		{"succeeded and running members make the gang whole", 2, nil, map[string][]api.TaskStatus{"worker": {R, S, F}}, true, true},
		{"a succeeded member counts toward its role's minimum", 2, map[string]int32{"master": 1, "worker": 1},
			map[string][]api.TaskStatus{"master": {P}, "worker": {S}}, false, true},
		{"too few pods to ever be ready", 3, nil, map[string][]api.TaskStatus{"worker": {P, P}}, false, false},
		{"role minimum unmet although minMember met", 2, map[string]int32{"master": 1},
			map[string][]api.TaskStatus{"master": {P}, "worker": {A, A}}, false, true},
		{"role minimum met", 2, map[string]int32{"master": 1, "worker": 1},
			map[string][]api.TaskStatus{"master": {A}, "worker": {A, P}}, true, true},
		{"role without pods can never be ready", 1, map[string]int32{"master": 1},
			map[string][]api.TaskStatus{"worker": {A}}, false, false},
		{"role short of pods", 2, map[string]int32{"worker": 3},
			map[string][]api.TaskStatus{"master": {P}, "worker": {P, P}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := jobWith(t, tt.min, tt.minRole, tt.tasks)
			if got := gang.JobReady(job); got != tt.ready {
				t.Errorf("JobReady = %v, want %v", got, tt.ready)
			}
			r := gang.JobValid(job)
			if (r == nil) != tt.valid {
				t.Errorf("JobValid = %+v, want valid %v", r, tt.valid)
			}
			if r != nil && (r.Message == "" || r.Reason == "") {
				t.Errorf("invalid job without reason or message: %+v", r)
			}
		})
	}
}

// A gated pod never counts toward its gang, and a gang short because of
// gated pods says so, with the gates named.
func TestJobValidWithGatedPods(t *testing.T) {
	const G = api.Gated
	tests := []struct {
		name    string
		min     int32
		minRole map[string]int32
		tasks   map[string][]api.TaskStatus
		reason  string // "" means valid
		message string
	}{
		{"gated workers short of minMember", 3, nil, map[string][]api.TaskStatus{"master": {P}, "worker": {G, G}},
			gang.ReasonSchedulingGated, "2 of 3 members are waiting for scheduling gates: example.com/hold"},
		{"gated role short of minTaskMember", 2, map[string]int32{"worker": 2}, map[string][]api.TaskStatus{"master": {P}, "worker": {P, G}},
			gang.ReasonSchedulingGated, "1 of 3 members are waiting for scheduling gates: example.com/hold"},
		{"gated extras beyond the minimum leave the gang valid", 2, nil, map[string][]api.TaskStatus{"worker": {P, P, G}}, "", ""},
		{"too few pods, none gated", 3, nil, map[string][]api.TaskStatus{"worker": {P, P}}, gang.ReasonNotEnoughPods, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := jobWith(t, tt.min, tt.minRole, tt.tasks)
			for _, task := range job.Tasks {
				if task.Status == G {
					task.Pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
				}
			}
			if gang.JobReady(job) && tt.reason != "" {
				t.Errorf("JobReady = true for a gang short of members")
			}
			r := gang.JobValid(job)
			switch {
			case tt.reason == "" && r != nil:
				t.Fatalf("JobValid = %+v, want valid", r)
			case tt.reason == "":
				return
			case r == nil:
				t.Fatalf("JobValid = nil, want %s", tt.reason)
			}
			if r.Reason != tt.reason {
				t.Errorf("reason = %q, want %q (%s)", r.Reason, tt.reason, r.Message)
			}
			if !strings.Contains(r.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", r.Message, tt.message)
			}
		})
	}
}
