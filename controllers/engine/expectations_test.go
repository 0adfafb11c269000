package engine

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		name   string
		setup  func(e *expectations)
		cached []observedObject
		at     time.Time
		want   bool
	}{
		{"nothing expected", func(*expectations) {}, nil, now, true},
		{
			"a creation the cache has not shown",
			func(e *expectations) { e.expectCreate("ns/job", "pod/job-worker-0", now) },
			nil, now, false,
		},
		{
			"a creation the cache shows",
			func(e *expectations) { e.expectCreate("ns/job", "pod/job-worker-0", now) },
			[]observedObject{{key: "pod/job-worker-0", uid: "a"}}, now, true,
		},
		{
			"a deletion the cache still shows live",
			func(e *expectations) { e.expectDelete("ns/job", "a", now) },
			[]observedObject{{key: "pod/job-worker-0", uid: "a"}}, now, false,
		},
		{
			"a deletion the cache shows terminating",
			func(e *expectations) { e.expectDelete("ns/job", "a", now) },
			[]observedObject{{key: "pod/job-worker-0", uid: "a", terminating: true}}, now, true,
		},
		{
			"a deletion whose replacement (same name, new UID) is cached",
			func(e *expectations) { e.expectDelete("ns/job", "a", now) },
			[]observedObject{{key: "pod/job-worker-0", uid: "b"}}, now, true,
		},
		{
			"another job's expectations do not block",
			func(e *expectations) { e.expectCreate("ns/other", "pod/other-worker-0", now) },
			nil, now, true,
		},
		{
			"an expectation past its TTL no longer blocks",
			func(e *expectations) { e.expectCreate("ns/job", "pod/job-worker-0", now) },
			nil, now.Add(expectationTTL + time.Second), true,
		},
		{
			"a refused creation no longer blocks",
			func(e *expectations) {
				e.expectCreate("ns/job", "pod/job-worker-0", now)
				e.createFailed("ns/job", "pod/job-worker-0")
			},
			nil, now, true,
		},
		{
			"a refused deletion no longer blocks",
			func(e *expectations) {
				e.expectDelete("ns/job", types.UID("a"), now)
				e.deleteFailed("ns/job", "a")
			},
			[]observedObject{{key: "pod/job-worker-0", uid: "a"}}, now, true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newExpectations()
			tc.setup(e)
			if got := e.satisfied("ns/job", tc.cached, tc.at); got != tc.want {
				t.Errorf("satisfied = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatusExpectation(t *testing.T) {
	now := time.Unix(1000, 0)
	wrote := func(rv string) func(*expectations) {
		return func(e *expectations) { e.expectStatus("ns/job", rv, now) }
	}
	refused := func(rv string) func(*expectations) {
		return func(e *expectations) { e.refusedStatus("ns/job", rv, now) }
	}
	cases := []struct {
		name   string
		setup  func(e *expectations)
		cached string // the cached job's resourceVersion
		at     time.Time
		want   bool
	}{
		{"no status written", func(*expectations) {}, "100", now, true},
		{"the cache shows an older version", wrote("120"), "100", now, false},
		// Compared as numbers, not strings: "99" sorts after "120".
		{"the cache shows an older version of fewer digits", wrote("120"), "99", now, false},
		{"the cache shows the write", wrote("120"), "120", now, true},
		{"the cache shows a newer version", wrote("120"), "135", now, true},
		{"another job's write does not block", func(e *expectations) { e.expectStatus("ns/other", "120", now) }, "100", now, true},
		{"a write past its TTL no longer blocks", wrote("120"), "100", now.Add(expectationTTL + time.Second), true},
		{"a version that cannot be compared does not block", wrote("120"), "not-a-version", now, true},
		{"a write refused over the version the cache still shows", refused("120"), "120", now, false},
		{"a write refused over an older version than the cache shows", refused("120"), "121", now, true},
		{"a refused write past its TTL no longer blocks", refused("120"), "120", now.Add(expectationTTL + time.Second), true},
		{"a write of its own after a refused one is seen at its version", func(e *expectations) {
			e.refusedStatus("ns/job", "120", now)
			e.expectStatus("ns/job", "130", now)
		}, "130", now, true},
		{"a creation the cache has not shown does not hold the status back", func(e *expectations) {
			e.expectCreate("ns/job", "pod/job-worker-0", now)
		}, "100", now, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newExpectations()
			tc.setup(e)
			if got := e.statusSeen("ns/job", tc.cached, tc.at); got != tc.want {
				t.Errorf("statusSeen = %v, want %v", got, tc.want)
			}
		})
	}
}

// A status write and a creation of the same job are waited for apart:
// each is dropped once the cache shows it, and the job is forgotten only
// once it expects neither.
func TestStatusAndCreationExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	e := newExpectations()
	e.expectCreate("ns/job", "pod/job-worker-0", now)
	e.expectStatus("ns/job", "120", now)
	if !e.statusSeen("ns/job", "120", now) {
		t.Fatal("statusSeen = false once the cache shows the write")
	}
	if e.satisfied("ns/job", nil, now) {
		t.Fatal("satisfied = true while the creation is not shown")
	}
	if !e.satisfied("ns/job", []observedObject{{key: "pod/job-worker-0", uid: "a"}}, now) {
		t.Fatal("satisfied = false once the creation is shown")
	}
	if _, kept := e.byJob["ns/job"]; kept {
		t.Error("the job is still remembered though it expects nothing")
	}
	e.expectStatus("ns/job", "130", now)
	if e.statusSeen("ns/job", "120", now) {
		t.Error("statusSeen = true for a version older than the second write")
	}
}
