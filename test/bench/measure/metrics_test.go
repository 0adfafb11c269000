package measure

import (
	"maps"
	"os"
	"strings"
	"testing"
	"time"
)

const exposition = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2000
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="scheduling.troupe.dev",resource="podgroups",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 500
apiserver_request_total{code="409",component="apiserver",dry_run="",group="scheduling.troupe.dev",resource="podgroups",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="authentication.k8s.io",resource="tokenreviews",scope="cluster",subresource="",verb="POST",version="v1"} 9
troupe_scheduler_cycles_total 12
troupe_scheduler_cycle_duration_seconds_sum 1.5e-01
weird_label{msg="a \"quoted\", {braced} value\n"} 1 1700000000
`

func TestParseText(t *testing.T) {
	samples, err := ParseText(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 9 {
		t.Fatalf("%d samples, want 9", len(samples))
	}
	if got := Sum(samples, "apiserver_request_total", map[string]string{"verb": "PATCH", "subresource": "status"}); got != 502 {
		t.Errorf("PATCH status = %v, want 502", got)
	}
	if got := Sum(samples, "troupe_scheduler_cycle_duration_seconds_sum", nil); got != 0.15 {
		t.Errorf("cycle seconds = %v, want 0.15", got)
	}
	if got := samples[8].Labels["msg"]; got != "a \"quoted\", {braced} value\n" {
		t.Errorf("escaped label = %q", got)
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, in := range []string{
		"no_value\n",
		`bad{a="1"} x` + "\n",
		`open{a="1` + "\n",
		`nolabelvalue{a} 1` + "\n",
	} {
		if _, err := ParseText(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseText(%q) error = %v, want one naming line 1", in, err)
		}
	}
}

func TestWrites(t *testing.T) {
	samples, err := ParseText(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	w := WritesFrom(samples)
	want := Writes{"POST pods/binding": 2000, "POST pods": 2000, "PATCH podgroups/status": 502}
	if !maps.Equal(w, want) {
		t.Errorf("WritesFrom = %v, want %v (reads and token reviews are not writes)", w, want)
	}
	delta := w.Minus(Writes{"POST pods": 2000, "POST pods/binding": 1000, "DELETE pods": 4})
	if !maps.Equal(delta, Writes{"POST pods/binding": 1000, "PATCH podgroups/status": 502}) {
		t.Errorf("Minus = %v", delta)
	}
	if delta.Total() != 1502 {
		t.Errorf("Total = %v, want 1502", delta.Total())
	}
	if got, want := delta.String(), "POST pods/binding 1000, PATCH podgroups/status 502"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		line    string
		want    ProcStat
		wantErr bool
	}{{
		line: "4242 (kube-apiserver) S 100 4242 100 0 -1 4194560 500 0 0 0 1234 566 0 0 20 0 12 0 1000 0 0",
		want: ProcStat{Comm: "kube-apiserver", PPID: 100, CPU: 18 * time.Second},
	}, {
		// A command name may hold spaces and parentheses.
		line: "7 (a (b) c) R 1 7 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0",
		want: ProcStat{Comm: "a (b) c", PPID: 1, CPU: 70 * time.Millisecond},
	}, {
		line:    "7 (short) R 1",
		wantErr: true,
	}, {
		line:    "no parentheses at all",
		wantErr: true,
	}}
	for _, tc := range tests {
		got, err := parseProcStat(tc.line)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %+v, error %v", tc.line, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestReadProcStatOfSelf(t *testing.T) {
	st, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID <= 0 || st.Comm == "" {
		t.Errorf("own stat = %+v", st)
	}
}

func TestCPUSeriesBetween(t *testing.T) {
	s := CPUSeries{
		{At: 0, CPU: 0},
		{At: 100 * time.Millisecond, CPU: 50 * time.Millisecond},
		{At: 200 * time.Millisecond, CPU: 60 * time.Millisecond},
		{At: 300 * time.Millisecond, CPU: 90 * time.Millisecond},
		{At: 400 * time.Millisecond, CPU: 95 * time.Millisecond},
	}
	tests := []struct {
		from, to, want time.Duration
	}{
		{from: 100 * time.Millisecond, to: 300 * time.Millisecond, want: 40 * time.Millisecond},
		// Widened to the samples around the interval.
		{from: 150 * time.Millisecond, to: 250 * time.Millisecond, want: 40 * time.Millisecond},
		// Past the last sample: up to it.
		{from: 350 * time.Millisecond, to: time.Second, want: 5 * time.Millisecond},
		{from: 0, to: 0, want: 0},
	}
	for _, tc := range tests {
		if got := s.Between(tc.from, tc.to); got != tc.want {
			t.Errorf("Between(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	if got := (CPUSeries{}).Between(0, time.Second); got != 0 {
		t.Errorf("empty series: %v", got)
	}
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name, status string
		want         int64
		wantErr      bool
	}{
		{name: "a process", status: "Name:\tkube-scheduler\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n", want: 51200 * 1024},
		{name: "no such line", status: "Name:\tkthreadd\nState:\tS (sleeping)\n", wantErr: true},
		{name: "another unit", status: "VmHWM:\t 50 MB\n", wantErr: true},
		{name: "not a number", status: "VmHWM:\t lots kB\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVmHWM(tc.status)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("parseVmHWM = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if rss, err := PeakRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("own peak RSS = %d, %v", rss, err)
	}
}

func TestTickResolution(t *testing.T) {
	tests := []struct {
		cpu  time.Duration
		want float64
	}{
		{cpu: 200 * time.Millisecond, want: 0.05},
		{cpu: 2 * time.Second, want: 0.005},
		{cpu: 0, want: 1},
	}
	for _, tc := range tests {
		if got := TickResolution(tc.cpu); got != tc.want {
			t.Errorf("TickResolution(%v) = %v, want %v", tc.cpu, got, tc.want)
		}
	}
}
