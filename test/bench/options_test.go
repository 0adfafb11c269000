package bench

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/report"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	o.ControlPlaneDir = "/cp" // KUBEBUILDER_ASSETS may or may not be set
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

var binaries = []string{"--troupe-scheduler=/t", "--volcano-scheduler=/v", "--coscheduling-scheduler=/c"}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "defaults with every binary", args: binaries},
		{name: "null binder alone needs no binary", args: []string{"--placers=null"}},
		{name: "smoke settings", args: append([]string{"--scale=0.02", "--hold=2s", "--check", "--out=", "--settle=20s", "--run-timeout=1m"}, binaries...)},
		{
			name:    "missing binaries, each flag once",
			args:    []string{"--placers=volcano,volcano-200ms,troupe,coscheduling"},
			wantErr: []string{"--troupe-scheduler: must name the binary", "--volcano-scheduler: must name the binary", "--coscheduling-scheduler: must name the binary"},
		},
		{
			name:    "unknown names",
			args:    append([]string{"--scenarios=S1,S9", "--placers=null,kube"}, binaries...),
			wantErr: []string{`--scenarios: unknown "S9"; known: S1, S2, S3, S4, S4x4, Q, S5, T0, T`, `--placers: unknown "kube"; known: null, troupe, troupe-gang-events, volcano, volcano-200ms, coscheduling`},
		},
		{
			name:    "empty lists",
			args:    append([]string{"--scenarios=", "--placers= , "}, binaries...),
			wantErr: []string{"--scenarios: must name at least one of S1", "--placers: must name at least one of null"},
		},
		{
			name: "numbers out of range, all reported",
			args: append([]string{"--scale=0", "--hold=0s", "--kube-api-qps=0", "--kube-api-burst=0", "--bind-workers=-1", "--run-timeout=0s", "--settle=0s", "--trailing=-1s", "--repeat=0",
				"--partial-grace=0s"}, binaries...),
			wantErr: []string{"--scale: must be greater than 0 and at most 10, got 0", "--hold: must be greater than 0", "--kube-api-qps: must not be 0",
				"--kube-api-burst: must be at least 1", "--bind-workers: must not be negative", "--run-timeout: must be greater than 0", "--settle: must be greater than 0",
				"--trailing: must not be negative, got -1s", "--repeat: must be from 1 to 9, got 0", "--partial-grace: must be greater than 0, got 0s"},
		},
		{
			name:    "a null binder sweep that is not one",
			args:    append([]string{"--null-bind-workers=16,0"}, binaries...),
			wantErr: []string{`--null-bind-workers: "0" is not a whole number of at least 1`},
		},
		{
			name:    "an empty null binder sweep",
			args:    append([]string{"--null-bind-workers=,"}, binaries...),
			wantErr: []string{"--null-bind-workers: must name at least one"},
		},
		{
			name:    "troupe-scheduler at a bad number of binds in flight",
			args:    append([]string{"--troupe-bind-workers=64,x"}, binaries...),
			wantErr: []string{`--troupe-bind-workers: "x" is not a whole number of at least 1`},
		},
		{
			name:    "settle longer than the run",
			args:    append([]string{"--settle=2m", "--run-timeout=1m"}, binaries...),
			wantErr: []string{"--settle: must be greater than 0 and at most --run-timeout (1m0s), got 2m0s"},
		},
		{
			name:    "no control plane",
			args:    append([]string{"--control-plane-dir=", "--crds=,", "--work-dir="}, binaries...),
			wantErr: []string{"--control-plane-dir: must name the folder", "--crds: must name at least one file or folder", "--work-dir: must not be empty"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if n := strings.Count(err.Error(), "--volcano-scheduler"); n > 1 {
				t.Errorf("--volcano-scheduler reported %d times: %v", n, err)
			}
		})
	}
}

func TestOptionsLists(t *testing.T) {
	o, err := parse(t, append([]string{"--scenarios=Q, S1", "--placers=coscheduling,null", "--scale=0.02", "--hold=3s"}, binaries...)...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range o.ScenarioList() {
		names = append(names, s.Name)
		if s.Name == "S3" && s.Hold != 3*time.Second {
			t.Errorf("hold not applied")
		}
	}
	if strings.Join(names, ",") != "S1,Q" {
		t.Errorf("scenarios %v, want the catalog's order S1,Q", names)
	}
	if got := strings.Join(o.PlacerList(), ","); got != "null,coscheduling" {
		t.Errorf("placers %s, want the harness's order null,coscheduling", got)
	}
	if s := o.ScenarioList()[0]; s.Nodes() != 20 {
		t.Errorf("scale not applied: S1 has %d nodes", s.Nodes())
	}
}

func TestMainExitCodes(t *testing.T) {
	var stderr strings.Builder
	if code := Main(t.Context(), []string{"--scale=-1", "--placers=null"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--scale") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := Main(t.Context(), []string{NullBinderCommand, "--bind-workers=0"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--bind-workers: must be at least 1") {
		t.Errorf("null binder with a bad flag: exit %d, stderr %q", code, stderr.String())
	}
}

// partlyBound is r with a gang partly bound for 3s during the run.
func partlyBound(r report.Result) report.Result {
	r.PartialDuring = []measure.PartialEpisode{{Gang: "s1-0004", From: time.Second, To: 4 * time.Second}}
	return r
}

func TestVerdict(t *testing.T) {
	s1 := NewOptions().ScenarioList()[0]
	q := NewOptions().ScenarioList()[5]
	res := func(placer string, gangs int, partial, neverUp []string) report.Result {
		return report.Result{Scenario: s1, Placer: placer, Throughput: measure.Throughput{Gangs: gangs}, Partial: partial, NeverUp: neverUp}
	}
	tests := []struct {
		name    string
		check   bool
		result  report.Result
		wantErr string
		wantLog string
	}{
		{name: "all bound", check: true, result: res(PlacerTroupe, 500, nil, nil)},
		{name: "a failed run fails without --check", result: report.Result{Scenario: s1, Placer: PlacerNull, Err: errors.New("boom")}, wantErr: "S1/null: boom"},
		{name: "troupe leaving a gang unbound fails without --check", result: res(PlacerTroupe, 499, nil, []string{"s1-0002"}), wantErr: "S1/troupe: 1 of 500 gangs never bound whole: s1-0002"},
		{name: "a peer stopped with gangs unbound, without --check", result: res(PlacerVolcano, 499, nil, []string{"s1-0002"})},
		{name: "partial at the end fails without --check", result: res(PlacerTroupe, 499, []string{"s1-0001"}, []string{"s1-0001"}), wantErr: "S1/troupe: 1 gangs partially bound at the end: s1-0001"},
		{name: "partial fails any placer", check: true, result: res(PlacerVolcano, 499, []string{"s1-0001"}, nil), wantErr: "S1/volcano: 1 gangs partially bound at the end: s1-0001"},
		{name: "partial during the run fails with --check", check: true, result: partlyBound(res(PlacerVolcano, 500, nil, nil)),
			wantErr: "S1/volcano: 1 gangs partly bound for longer than 2s during the run, the longest s1-0004 for 3s"},
		{name: "the null binder binds pods, not gangs: its partial gangs are reported", check: true, result: partlyBound(res("null-16", 500, nil, nil))},
		{name: "the null binder's sweep leaving a gang unbound fails", check: true, result: res("null-256", 499, nil, []string{"s1-0002"}), wantErr: "S1/null-256: 1 of 500 gangs never bound whole"},
		{name: "troupe leaving a gang unbound fails", check: true, result: res(PlacerTroupe, 499, nil, []string{"s1-0002"}), wantErr: "S1/troupe: 1 of 500 gangs never bound whole: s1-0002"},
		{name: "a peer that bound nothing fails", check: true, result: res(PlacerCoscheduling, 0, nil, []string{"s1-0000"}), wantErr: "S1/coscheduling: 1 of 500 gangs never bound whole"},
		{name: "a peer that stalled is noted", check: true, result: res(PlacerCoscheduling, 499, nil, []string{"s1-0003"}), wantLog: "note: S1/coscheduling left 1 of 500 gangs unbound after binding 499"},
		{name: "unbound gangs in Q are a result", check: true, result: report.Result{Scenario: q, Placer: PlacerTroupe, NeverUp: []string{"q-0001"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			err := verdict(&Options{Check: tc.check, PartialGrace: 2 * time.Second}, []report.Result{tc.result}, &log)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("verdict = %v, want %q", err, tc.wantErr)
			}
			if !strings.Contains(log.String(), tc.wantLog) || tc.wantLog == "" && log.Len() > 0 {
				t.Errorf("log %q, want %q", log.String(), tc.wantLog)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o, err := parse(t, binaries...)
	if err != nil {
		t.Fatal(err)
	}
	if o.Scale != 1 || o.Hold != 5*time.Second || o.QPS != -1 || o.Burst != 1000 || o.BindWorkers != 0 || o.NullBindWorkers != "16,64,256" || o.PartialGrace != 2*time.Second ||
		o.Settle != 15*time.Second || o.Trailing != 60*time.Second || o.RunTimeout != 5*time.Minute || o.Check || o.Profile {
		t.Errorf("defaults: %+v", o)
	}
	if len(o.ScenarioList()) != len(scenario.Names) || len(o.PlacerList()) != len(PlacerNames) {
		t.Errorf("default scenarios %v, placers %v", o.Scenarios, o.Placers)
	}
}

func TestNullWidths(t *testing.T) {
	o, err := parse(t, append([]string{"--null-bind-workers=256, 16,64,16"}, binaries...)...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.NullWidths()
	if err != nil || !slices.Equal(got, []int{16, 64, 256}) {
		t.Errorf("NullWidths = %v, %v; want 16, 64, 256 in order, once each", got, err)
	}
	placers, err := placersFor(o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range placers {
		names = append(names, p.Name())
	}
	if want := "null-16,null-64,null-256,troupe,troupe-gang-events,volcano,volcano-200ms,coscheduling,kube-native"; strings.Join(names, ",") != want {
		t.Errorf("placers %v, want %s", names, want)
	}
	if family(placers[1]) != PlacerNull || family(placers[3]) != PlacerTroupe {
		t.Errorf("families %s, %s", family(placers[1]), family(placers[3]))
	}
}

func TestTroupeWidths(t *testing.T) {
	o, err := parse(t, append([]string{"--placers=null,troupe,volcano", "--null-bind-workers=16", "--troupe-bind-workers=256,64,64"}, binaries...)...)
	if err != nil {
		t.Fatal(err)
	}
	placers, err := placersFor(o)
	if err != nil {
		t.Fatal(err)
	}
	var names, families []string
	for _, p := range placers {
		names, families = append(names, p.Name()), append(families, family(p))
	}
	if want := "null-16,troupe,troupe-64,troupe-256,volcano"; strings.Join(names, ",") != want {
		t.Errorf("placers %v, want %s", names, want)
	}
	// A variant runs wherever troupe does.
	if want := "null,troupe,troupe,troupe,volcano"; strings.Join(families, ",") != want {
		t.Errorf("families %v, want %s", families, want)
	}
	if bw := placers[2].(placer.Troupe).BindWorkers; bw != 64 {
		t.Errorf("troupe-64 runs at %d binds in flight", bw)
	}
	// Without the flag, troupe alone.
	o, err = parse(t, append([]string{"--placers=troupe"}, binaries...)...)
	if err != nil {
		t.Fatal(err)
	}
	if placers, _ := placersFor(o); len(placers) != 1 || placers[0].Name() != "troupe" {
		t.Errorf("placers without --troupe-bind-workers: %v", placers)
	}
}

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    measure.Progress
		want bool
	}{
		{name: "nothing bound yet, long after the start", p: measure.Progress{SinceLastBind: time.Minute}},
		{name: "bound, then quiet for less than settle", p: measure.Progress{Bound: 10, SinceLastBind: 14 * time.Second}},
		{name: "bound, then quiet for longer than settle", p: measure.Progress{Bound: 10, SinceLastBind: 16 * time.Second}, want: true},
	} {
		if got := settled(tc.p, 15*time.Second); got != tc.want {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A stream may not settle before every gang has arrived, and waits out a
// gang's hold beyond --settle: a gang's end makes room for those waiting.
func TestSettleAfter(t *testing.T) {
	var s3, ts scenario.Scenario
	for _, s := range NewOptions().ScenarioList() {
		switch s.Name {
		case "S3":
			s3 = s
		case "TS":
			ts = s
		}
	}
	for _, tc := range []struct {
		name       string
		s          scenario.Scenario
		allArrived bool
		want       time.Duration
		wantMay    bool
	}{
		{name: "gangs that exist at the start", s: s3, want: 15 * time.Second, wantMay: true},
		{name: "a stream still arriving", s: ts, want: 35 * time.Second},
		{name: "a stream arrived", s: ts, allArrived: true, want: 35 * time.Second, wantMay: true},
	} {
		if got, may := settleAfter(tc.s, 15*time.Second, tc.allArrived); got != tc.want || may != tc.wantMay {
			t.Errorf("%s: settle after %v, may end %v; want %v, %v", tc.name, got, may, tc.want, tc.wantMay)
		}
	}
}
