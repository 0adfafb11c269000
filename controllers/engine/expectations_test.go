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
