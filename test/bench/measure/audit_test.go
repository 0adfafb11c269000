package measure

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditLine is one audit event, as the API server writes it under
// BindAuditPolicy, of a request on pod ns/name completed at at.
func auditLine(t *testing.T, verb, subresource, name string, code int, at time.Time) string {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": "ResponseComplete",
		"verb": verb, "userAgent": "scheduler/v0.0.0",
		"objectRef":      map[string]string{"resource": "pods", "subresource": subresource, "namespace": "ns", "name": name, "apiVersion": "v1"},
		"responseStatus": map[string]any{"metadata": map[string]any{}, "code": code},
		// The API server writes microseconds.
		"requestReceivedTimestamp": at.Add(-time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00"),
		"stageTimestamp":           at.Format("2006-01-02T15:04:05.000000Z07:00"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestReplayAudit(t *testing.T) {
	start := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	end := at(10_000)
	// Gangs a and b of 2 pods; c of 1. Pod x is of no gang tracked.
	gangOf := map[string]string{"ns/a-0": "a", "ns/a-1": "a", "ns/b-0": "b", "ns/b-1": "b", "ns/c-0": "c"}
	sizes := map[string]int{"a": 2, "b": 2, "c": 1}
	bind := func(name string, ms int) func(*testing.T) string {
		return func(t *testing.T) string { return auditLine(t, "create", "binding", name, 201, at(ms)) }
	}
	line := func(verb, sub, name string, code, ms int) func(*testing.T) string {
		return func(t *testing.T) string { return auditLine(t, verb, sub, name, code, at(ms)) }
	}
	type want struct {
		pods, gangs int
		makespan    time.Duration
		partial     []PartialEpisode // longer than 2 s
	}
	cases := []struct {
		name  string
		lines []func(*testing.T) string
		want  want
	}{
		{"gangs bound whole, in the order they completed, not the order written",
			[]func(*testing.T) string{bind("a-1", 300), bind("b-1", 2500), bind("a-0", 100), bind("b-0", 200), bind("c-0", 50)},
			want{pods: 5, gangs: 3, makespan: 2500 * time.Millisecond, partial: []PartialEpisode{{Gang: "b", From: 200 * time.Millisecond, To: 2500 * time.Millisecond}}}},
		{"a refused bind does not bind; a repeated one binds once",
			[]func(*testing.T) string{bind("a-0", 100), line("create", "binding", "a-1", 409, 200), bind("a-0", 300)},
			want{pods: 1, partial: []PartialEpisode{{Gang: "a", From: 100 * time.Millisecond, To: 10 * time.Second}}}},
		{"a gang's only bound member deleted ends its episode; an eviction likewise",
			[]func(*testing.T) string{bind("a-0", 100), line("delete", "", "a-0", 200, 3000), bind("b-0", 100), line("create", "eviction", "b-0", 201, 2200)},
			want{pods: 2, partial: []PartialEpisode{{Gang: "a", From: 100 * time.Millisecond, To: 3 * time.Second}, {Gang: "b", From: 100 * time.Millisecond, To: 2200 * time.Millisecond}}}},
		{"a pod deleted and made anew under its name binds again",
			[]func(*testing.T) string{bind("a-0", 100), line("delete", "", "a-0", 200, 200), bind("a-0", 400), bind("a-1", 500)},
			want{pods: 3, gangs: 1, makespan: 500 * time.Millisecond}},
		{"a deletion the API server refused takes nothing away",
			[]func(*testing.T) string{bind("a-0", 100), line("delete", "", "a-0", 404, 200), bind("a-1", 2600)},
			want{pods: 2, gangs: 1, makespan: 2600 * time.Millisecond, partial: []PartialEpisode{{Gang: "a", From: 100 * time.Millisecond, To: 2600 * time.Millisecond}}}},
		{"binds before the start, after the end, or of pods of no gang are left out",
			[]func(*testing.T) string{bind("c-0", -5), bind("x", 100), bind("a-0", 11_000)},
			want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, l := range tc.lines {
				lines = append(lines, l(t))
			}
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tr, err := ReplayAudit(path, start, end, gangOf, sizes)
			if err != nil {
				t.Fatal(err)
			}
			th := tr.Throughput()
			if th.Pods != tc.want.pods || th.Gangs != tc.want.gangs || th.Makespan != tc.want.makespan {
				t.Errorf("pods, gangs, makespan = %d, %d, %v; want %d, %d, %v", th.Pods, th.Gangs, th.Makespan, tc.want.pods, tc.want.gangs, tc.want.makespan)
			}
			got := tr.PartialLongerThan(2 * time.Second)
			slices.SortFunc(got, func(a, b PartialEpisode) int { return strings.Compare(a.Gang, b.Gang) })
			if !slices.Equal(got, tc.want.partial) {
				t.Errorf("partial = %+v, want %+v", got, tc.want.partial)
			}
		})
	}
}

// A line that is not an event is an error, naming it; a last line without
// its newline is one the API server is still writing, left for later.
func TestReadAudit(t *testing.T) {
	bound := auditLine(t, "create", "binding", "a-0", 201, time.Now())
	for _, tc := range []struct {
		name, log string
		want      int // events read
		wantErr   string
	}{
		{"whole lines", bound + "\n" + bound + "\n", 2, ""},
		{"a last line still being written", bound + "\n" + bound[:40], 1, ""},
		{"a broken line", bound + "\n{\"stage\": \n" + bound + "\n", 0, "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			n := 0
			err := ReadAudit(path, func(*auditv1.Event) { n++ })
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one naming %s", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || n != tc.want):
				t.Errorf("read %d events, err %v; want %d, no error", n, err, tc.want)
			}
		})
	}
	if err := ReadAudit(filepath.Join(t.TempDir(), "none"), func(*auditv1.Event) {}); err == nil {
		t.Error("no error for a log that does not exist")
	}
}
