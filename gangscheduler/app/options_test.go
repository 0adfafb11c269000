package app

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    func(t *testing.T) []string
		wantErr []string // each must appear in the error
		check   func(t *testing.T, o *Options)
	}{
		{
			name: "defaults",
			args: func(*testing.T) []string { return nil },
			check: func(t *testing.T, o *Options) {
				if o.SchedulerName != "troupe-scheduler" || o.BindWorkers != 256 || o.StatusWriteWorkers != 16 || !o.PodScheduledEvents || o.MinCyclePeriod != 100*time.Millisecond ||
					o.MaxIdlePeriod != time.Second || o.LeaderElect || o.QPS != 5000 || o.Burst != 5000 || o.PartialGangGrace != 30*time.Second ||
					o.LeaderElection.LeaseDuration != 15*time.Second || o.WatchListClient || o.UnschedulableRefresh != 10*time.Second {
					t.Errorf("unexpected defaults: %+v", o)
				}
				if o.Config == nil || strings.Join(o.Config.Actions, ",") != "enqueue,allocate,backfill" || len(o.Config.Plugins) == 0 {
					t.Errorf("default configuration = %+v", o.Config)
				}
			},
		},
		{
			name: "every flag applied",
			args: func(t *testing.T) []string {
				return []string{"--scheduler-name=gang-b", "--leader-elect", "--leader-election-id=x", "--leader-election-namespace=troupe-system",
					"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--pprof-bind-address=127.0.0.1:6060", "--kube-api-qps=1000", "--kube-api-burst=2000",
					"--bind-workers=64", "--status-write-workers=8", "--pod-scheduled-events=false", "--min-cycle-period=20ms", "--max-idle-period=5s", "--partial-gang-grace-period=2m",
					"--unschedulable-refresh-period=30s", "--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s", "--watch-list-client",
					"--config=" + writeFile(t, "plugins:\n- name: gang\n- name: predicates\n")}
			},
			check: func(t *testing.T, o *Options) {
				if o.SchedulerName != "gang-b" || !o.LeaderElect || o.LeaderElectionID != "x" || o.LeaderElectionNamespace != "troupe-system" ||
					o.MetricsBindAddress != "0" || o.HealthProbeBindAddress != ":9000" || o.PprofBindAddress != "127.0.0.1:6060" || o.QPS != 1000 || o.Burst != 2000 ||
					o.BindWorkers != 64 || o.StatusWriteWorkers != 8 || o.PodScheduledEvents || o.MinCyclePeriod != 20*time.Millisecond || o.MaxIdlePeriod != 5*time.Second ||
					o.PartialGangGrace != 2*time.Minute || o.LeaderElection.LeaseDuration != 8*time.Second || o.LeaderElection.RenewDeadline != 5*time.Second ||
					o.LeaderElection.RetryPeriod != time.Second || !o.WatchListClient || o.UnschedulableRefresh != 30*time.Second {
					t.Errorf("flags not applied: %+v", o)
				}
				if len(o.Config.Plugins) != 2 || o.Config.Plugins[0].Name != "gang" {
					t.Errorf("config file not applied: %+v", o.Config)
				}
			},
		},
		{
			name:    "invalid scheduler name",
			args:    func(*testing.T) []string { return []string{"--scheduler-name=Troupe_Scheduler"} },
			wantErr: []string{`--scheduler-name: "Troupe_Scheduler" is not a valid scheduler name`},
		},
		{
			name: "non-positive numbers, all reported",
			args: func(*testing.T) []string {
				return []string{"--kube-api-qps=0", "--kube-api-burst=0", "--bind-workers=0", "--status-write-workers=0", "--min-cycle-period=-1s", "--max-idle-period=0s", "--partial-gang-grace-period=-1s",
					"--unschedulable-refresh-period=-1s"}
			},
			wantErr: []string{
				"--kube-api-qps: must not be 0", "--kube-api-burst: must be at least 1", "--bind-workers: must be at least 1",
				"--status-write-workers: must be at least 1, got 0", "--min-cycle-period: must not be negative", "--max-idle-period: must be greater than 0", "--partial-gang-grace-period: must not be negative, got -1s",
				"--unschedulable-refresh-period: must not be negative, got -1s",
			},
		},
		{
			name: "leader election timing client-go refuses",
			args: func(*testing.T) []string {
				return []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=12s", "--leader-elect-retry-period=10s"}
			},
			wantErr: []string{"--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline (12s), got 10s",
				"--leader-elect-renew-deadline: must be greater than 1.2 x --leader-elect-retry-period (10s), got 12s"},
		},
		{
			name:    "idle period shorter than the cycle period",
			args:    func(*testing.T) []string { return []string{"--min-cycle-period=2s", "--max-idle-period=1s"} },
			wantErr: []string{"--max-idle-period: must not be less than --min-cycle-period (2s), got 1s"},
		},
		{
			name:    "leader election without an ID",
			args:    func(*testing.T) []string { return []string{"--leader-elect", "--leader-election-id="} },
			wantErr: []string{"--leader-election-id: must not be empty"},
		},
		{
			name:    "invalid lease namespace",
			args:    func(*testing.T) []string { return []string{"--leader-election-namespace=Troupe"} },
			wantErr: []string{"--leader-election-namespace", "not a valid namespace name"},
		},
		{
			name: "bad configuration file: the flag, the file and the field",
			args: func(t *testing.T) []string {
				return []string{"--config=" + writeFile(t, "actions: [allocate, alocate]\n")}
			},
			wantErr: []string{"--config ", "scheduler-config.yaml: invalid configuration", `actions[1]: unknown action "alocate"; known: allocate`},
		},
		{
			name:    "missing configuration file",
			args:    func(*testing.T) []string { return []string{"--config=/nonexistent/scheduler.yaml"} },
			wantErr: []string{"--config /nonexistent/scheduler.yaml", "no such file"},
		},
		{
			name:    "unknown flag",
			args:    func(*testing.T) []string { return []string{"--scheduler=x"} },
			wantErr: []string{"flag provided but not defined: -scheduler"},
		},
		{
			name:    "stray argument",
			args:    func(*testing.T) []string { return []string{"allocate"} },
			wantErr: []string{"unexpected arguments"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseFlags(tc.args(t), io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseFlags succeeded; want an error containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFlags: %v", err)
			}
			tc.check(t, o)
		})
	}
}

// Main exits 2 with the message on stderr before it touches a cluster.
func TestMainRejectsBadFlagsAndConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bind-workers=0"}, "--bind-workers: must be at least 1"},
		{[]string{"--config=" + writeFile(t, "plugins:\n- name: nodeorder\n  arguments: {gpuResource: [nvidia.com/gpu]}\n")},
			`plugins[0].arguments (nodeorder): unknown field "gpuResource"`},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), append(tc.args, "--kubeconfig=/nonexistent"), &stderr)
		if code != 2 {
			t.Errorf("%v: exit code = %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// A kubeconfig that cannot be read is an error of its own, exit 1.
func TestMainReportsUnreadableKubeconfig(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"--kubeconfig=/nonexistent/kubeconfig"}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "load kubeconfig") {
		t.Errorf("exit code %d, stderr %q; want 1 and a kubeconfig error", code, stderr.String())
	}
}
