package scheduler

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

func TestIsRefusal(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"forbidden (a ValidatingAdmissionPolicy denial)", apierrors.NewForbidden(pods, "p", errors.New("denied")), true},
		{"invalid (a policy's 422)", apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, "p", nil), true},
		{"bad request (a webhook's denial)", apierrors.NewBadRequest("admission webhook denied the request"), true},
		{"conflict: the pod is bound already, or was recreated", apierrors.NewConflict(pods, "p", errors.New("already assigned")), false},
		{"not found: the pod is gone", apierrors.NewNotFound(pods, "p"), false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"throttled", apierrors.NewTooManyRequests("busy", 1), false},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"not an API error", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		if got := isRefusal(tt.err); got != tt.want {
			t.Errorf("%s: isRefusal = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A refusal keeps the gang off the node until it expires, survives the
// gang's pods being recreated (it is per gang, not per pod), and is
// forgotten with the gang.
func TestBindRefusals(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := newBindRefusals(time.Minute)
	r.record("ns/a", "n1", t0)
	r.record("ns/a", "n2", t0.Add(30*time.Second))
	r.record("ns/gone", "n1", t0)

	jobsAt := func(at time.Time) map[api.JobID]*api.JobInfo {
		jobs := map[api.JobID]*api.JobInfo{"ns/a": api.NewJobInfo("ns", "a"), "ns/b": api.NewJobInfo("ns", "b")}
		r.apply(jobs, at)
		return jobs
	}
	nodes := func(j *api.JobInfo) []string { return slices.Sorted(maps.Keys(j.RefusedNodes)) }

	jobs := jobsAt(t0.Add(10 * time.Second))
	if got := nodes(jobs["ns/a"]); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("at +10s, ns/a avoids %v, want [n1 n2]", got)
	}
	if jobs["ns/b"].RefusedNodes != nil {
		t.Errorf("ns/b avoids %v, want nothing", jobs["ns/b"].RefusedNodes)
	}
	if _, ok := r.nodes["ns/gone"]; ok {
		t.Errorf("the refusals of a gang that is gone are kept")
	}
	if got := nodes(jobsAt(t0.Add(time.Minute))["ns/a"]); !slices.Equal(got, []string{"n2"}) {
		t.Errorf("at +60s, ns/a avoids %v, want [n2] (n1's refusal expired)", got)
	}
	if got := jobsAt(t0.Add(2 * time.Minute))["ns/a"].RefusedNodes; got != nil {
		t.Errorf("at +120s, ns/a avoids %v, want nothing", got)
	}
	if len(r.nodes) != 0 {
		t.Errorf("expired refusals kept: %v", r.nodes)
	}
}
