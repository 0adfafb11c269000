package operatorbench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestWholeAgain(t *testing.T) {
	before := map[string]podState{
		"j-master-0": {uid: "m", running: true},
		"j-worker-0": {uid: "w0", running: true},
		"j-worker-1": {uid: "w1", running: true},
	}
	const failed = types.UID("w1")
	tests := []struct {
		name     string
		now      map[string]podState
		back     bool
		replaced int
	}{{
		name: "the failed pod is still there",
		now:  before,
	}, {
		name: "the failed pod is gone, its replacement not there yet",
		now:  map[string]podState{"j-master-0": before["j-master-0"], "j-worker-0": before["j-worker-0"]},
	}, {
		name: "its replacement is not Running yet",
		now: map[string]podState{"j-master-0": before["j-master-0"], "j-worker-0": before["j-worker-0"],
			"j-worker-1": {uid: "w1b"}},
	}, {
		name: "the failed pod alone replaced and Running",
		now: map[string]podState{"j-master-0": before["j-master-0"], "j-worker-0": before["j-worker-0"],
			"j-worker-1": {uid: "w1b", running: true}},
		back: true, replaced: 1,
	}, {
		name: "the whole gang replaced and Running",
		now: map[string]podState{"j-master-0": {uid: "mb", running: true}, "j-worker-0": {uid: "w0b", running: true},
			"j-worker-1": {uid: "w1b", running: true}},
		back: true, replaced: 3,
	}, {
		name: "the gang half torn down: fewer pods",
		now:  map[string]podState{"j-master-0": {uid: "mb", running: true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back, replaced := wholeAgain(before, tt.now, failed)
			if back != tt.back || replaced != tt.replaced {
				t.Errorf("wholeAgain = %v, %d; want %v, %d", back, replaced, tt.back, tt.replaced)
			}
		})
	}
}

func TestCountWrites(t *testing.T) {
	// Lines as kube-apiserver's JSON audit backend writes them, cut to
	// the fields read.
	lines := []string{
		`{"stage":"ResponseComplete","verb":"create","userAgent":"operator/v0.0.0 (linux/amd64) kubernetes/$Format","requestReceivedTimestamp":"2026-11-26T10:00:01.000000Z","objectRef":{"resource":"pods","namespace":"bench"}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"operator/v0.0.0 (linux/amd64) kubernetes/$Format","requestReceivedTimestamp":"2026-11-26T10:00:02.000000Z","objectRef":{"resource":"pytorchjobs","subresource":"status"}}`,
		// Another client whose name starts alike is not the operator.
		`{"stage":"ResponseComplete","verb":"create","userAgent":"training-operator/v0.0.0","requestReceivedTimestamp":"2026-11-26T10:00:02.000000Z","objectRef":{"resource":"pods"}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"kwok/v0.8.0","requestReceivedTimestamp":"2026-11-26T10:00:03.000000Z","objectRef":{"resource":"pods","subresource":"binding"}}`,
		// Outside the span.
		`{"stage":"ResponseComplete","verb":"create","userAgent":"operator/v0.0.0","requestReceivedTimestamp":"2026-11-26T09:59:59.000000Z","objectRef":{"resource":"pods"}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"operator/v0.0.0","requestReceivedTimestamp":"2026-11-26T10:00:11.000000Z","objectRef":{"resource":"pods"}}`,
		// A long-running request's start, and the last line cut short by a
		// stop (without its newline).
		`{"stage":"ResponseStarted","verb":"create","userAgent":"operator/v0.0.0","requestReceivedTimestamp":"2026-11-26T10:00:04.000000Z","objectRef":{"resource":"pods"}}`,
		`{"stage":"ResponseComplete","verb":"cre`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	got, err := countWrites(path, "operator/", from, from.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := auditWrites{All: 4, Agent: 2, ByKind: map[string]int{"create pods": 1, "patch pytorchjobs/status": 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("countWrites = %+v, want %+v", got, want)
	}
}

func TestOperatorAgent(t *testing.T) {
	o := &Options{TroupeOperator: "bin/operator", TrainingOperator: "/cache/training-operator-v1.9.4/training-operator"}
	renamed := &Options{TroupeOperator: "/tmp/ab/operator-4681d88", TrainingOperator: "./manager"}
	for _, tc := range []struct {
		name string
		o    *Options
		op   string
		want string
	}{
		{"Troupe's operator", o, OperatorTroupe, "operator/"},
		{"training-operator", o, OperatorTraining, "training-operator/"},
		{"Troupe's operator under another name", renamed, OperatorTroupe, "operator-4681d88/"},
		{"training-operator under another name", renamed, OperatorTraining, "manager/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := operatorAgent(tc.o, Combination{Operator: tc.op}); got != tc.want {
				t.Errorf("operatorAgent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUpdateFile(t *testing.T) {
	sec := LimitedSection
	block := func(s string) string { return sec.Begin + "\n\n" + s + "\n\n" + sec.End }
	other := UnlimitedSection.Begin + "\n\nunlimited\n\n" + UnlimitedSection.End
	tests := []struct {
		name, doc, want string
		wantErr         bool
	}{
		{name: "no file", doc: "", want: "\n\n" + block("new") + "\n"},
		{name: "no markers: appended", doc: "# Benchmarks\n\nprose\n", want: "# Benchmarks\n\nprose\n\n" + block("new") + "\n"},
		{name: "replaced, the rest kept", doc: "a\n" + block("old") + "\nb\n", want: "a\n" + block("new") + "\nb\n"},
		{name: "the bench harness's markers are not ours", doc: "<!-- BEGIN GENERATED by `make bench`: do not edit by hand -->\nx\n<!-- END GENERATED -->\n",
			want: "<!-- BEGIN GENERATED by `make bench`: do not edit by hand -->\nx\n<!-- END GENERATED -->\n\n" + block("new") + "\n"},
		{name: "the section without a client limit is another one, kept", doc: "a\n" + block("old") + "\n" + other + "\n",
			want: "a\n" + block("new") + "\n" + other + "\n"},
		{name: "one marker missing", doc: "a\n" + sec.Begin + "\nb\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "benchmarks.md")
			if tt.doc != "" {
				if err := os.WriteFile(path, []byte(tt.doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := UpdateFile(path, sec, "new\n")
			if (err != nil) != tt.wantErr {
				t.Fatalf("UpdateFile: %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			raw, _ := os.ReadFile(path)
			if string(raw) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", raw, tt.want)
			}
		})
	}
}

func TestRestartDid(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want string
	}{
		{name: "Troupe, every pod", s: Summary{Combination: "troupe+volcano", RestartPods: 4, Replaced: FigureOf([]float64{4, 4, 4})},
			want: "replaced the whole gang (gangPolicy restartPolicy Gang)"},
		{name: "training-operator, one pod", s: Summary{Combination: "training-operator+volcano", RestartPods: 4, Replaced: FigureOf([]float64{1, 1})},
			want: "replaced the failed pod alone; the others kept running (restartPolicy ExitCode)"},
		{name: "runs that differ say so", s: Summary{Combination: "troupe+volcano", RestartPods: 4, Replaced: FigureOf([]float64{1, 4, 4})},
			want: "replaced 4 (1–4) pods (gangPolicy restartPolicy Gang)"},
		{name: "a job that did not come back", s: Summary{Combination: "troupe+volcano", RestartPods: 4, RestartErrors: []string{"timed out"}},
			want: "did not run whole again: timed out (gangPolicy restartPolicy Gang)"},
		{name: "no probe", s: Summary{Combination: "training-operator+coscheduling"}, want: "– (restartPolicy ExitCode)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restartDid(tt.s); got != tt.want {
				t.Errorf("restartDid = %q, want %q", got, tt.want)
			}
		})
	}
}
