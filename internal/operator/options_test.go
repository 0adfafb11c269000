package operator

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name        string
		args        []string
		wantErr     []string // each must appear in the error
		wantSchemes []string
		check       func(t *testing.T, o *Options)
	}{
		{
			name:        "defaults run every kind",
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.GangSchedulerName != "" || o.Namespace != "" || o.LeaderElect || !o.WaitForPodGroupAdmission || o.LeaderElection.LeaseDuration != 15*time.Second || o.VolcanoHyperNodeTopology != "" {
					t.Errorf("unexpected defaults: %+v", o)
				}
			},
		},
		{
			name:        "comma-separated schemes replace the default",
			args:        []string{"--enable-scheme", "tfjob,mpijob"},
			wantSchemes: []string{"tfjob", "mpijob"},
		},
		{
			name:        "repeated schemes accumulate",
			args:        []string{"--enable-scheme=tfjob", "--enable-scheme=pytorchjob"},
			wantSchemes: []string{"tfjob", "pytorchjob"},
		},
		{
			name:        "the in-repo gang scheduler, one namespace, leader election",
			args:        []string{"--gang-scheduler-name=troupe", "--namespace=team-a", "--leader-elect"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.GangSchedulerName != "troupe" || o.Namespace != "team-a" || !o.LeaderElect {
					t.Errorf("flags not applied: %+v", o)
				}
			},
		},
		{
			name:        "volcano, without waiting for admission",
			args:        []string{"--gang-scheduler-name=volcano", "--wait-for-podgroup-admission=false"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.GangSchedulerName != "volcano" || o.WaitForPodGroupAdmission {
					t.Errorf("flags not applied: %+v", o)
				}
			},
		},
		{
			name:        "scheduler-plugins waits for admission by default",
			args:        []string{"--gang-scheduler-name=scheduler-plugins"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.GangSchedulerName != "scheduler-plugins" || !o.WaitForPodGroupAdmission {
					t.Errorf("flags not applied: %+v", o)
				}
			},
		},
		{
			name:        "any other scheduler name is a coscheduling-compatible scheduler",
			args:        []string{"--gang-scheduler-name=my-coscheduler"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.GangSchedulerName != "my-coscheduler" {
					t.Errorf("flags not applied: %+v", o)
				}
			},
		},
		{
			name:    "unknown job kind",
			args:    []string{"--enable-scheme=tfjob,xgboostjob"},
			wantErr: []string{"--enable-scheme", `"xgboostjob"`, "allowed: mpijob, pytorchjob, tfjob"},
		},
		{
			name:    "empty scheme list",
			args:    []string{"--enable-scheme=,"},
			wantErr: []string{"--enable-scheme: at least one of"},
		},
		{
			name:    "invalid gang scheduler name",
			args:    []string{"--gang-scheduler-name=Volcano_Scheduler"},
			wantErr: []string{`--gang-scheduler-name: "Volcano_Scheduler" is neither one of none, volcano, scheduler-plugins, troupe, kube-scheduler nor a valid scheduler name`},
		},
		{
			name:    "invalid namespace",
			args:    []string{"--namespace=Team_A"},
			wantErr: []string{"--namespace", "not a valid namespace name"},
		},
		{
			name:    "non-positive client limits",
			args:    []string{"--kube-api-qps=0", "--kube-api-burst=0"},
			wantErr: []string{"--kube-api-qps: must be greater than 0, or negative for no client-side limit", "--kube-api-burst: must be at least 1"},
		},
		{
			name:        "no client-side limit",
			args:        []string{"--kube-api-qps=-1"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.QPS != -1 {
					t.Errorf("--kube-api-qps=-1 not applied: %v", o.QPS)
				}
			},
		},
		{
			name:    "leader election without an ID",
			args:    []string{"--leader-elect", "--leader-election-id="},
			wantErr: []string{"--leader-election-id: must not be empty"},
		},
		{
			name:        "leader election timing",
			args:        []string{"--leader-elect", "--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if le := o.LeaderElection; le.LeaseDuration != 8*time.Second || le.RenewDeadline != 5*time.Second || le.RetryPeriod != time.Second {
					t.Errorf("flags not applied: %+v", le)
				}
			},
		},
		{
			name:    "leader election timing client-go refuses",
			args:    []string{"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=0s"},
			wantErr: []string{"--leader-elect-retry-period: must be greater than 0", "--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline (5s), got 5s"},
		},
		{
			name:    "empty kubectl delivery image",
			args:    []string{"--mpi-kubectl-delivery-image="},
			wantErr: []string{"--mpi-kubectl-delivery-image: must not be empty"},
		},
		{
			name:        "Volcano HyperNodes from a Topology",
			args:        []string{"--gang-scheduler-name=volcano", "--volcano-hypernode-topology=fabric.example.com"},
			wantSchemes: []string{"mpijob", "pytorchjob", "tfjob"},
			check: func(t *testing.T, o *Options) {
				if o.VolcanoHyperNodeTopology != "fabric.example.com" {
					t.Errorf("flags not applied: %+v", o)
				}
			},
		},
		{
			name:    "a Volcano HyperNode Topology that is no object name",
			args:    []string{"--volcano-hypernode-topology=Rack_Topology"},
			wantErr: []string{`--volcano-hypernode-topology: "Rack_Topology" is not a Topology name (a DNS subdomain`, "empty generates no HyperNodes"},
		},
		{
			name:    "unknown flag",
			args:    []string{"--gang-scheduler=volcano"},
			wantErr: []string{"flag provided but not defined: -gang-scheduler"},
		},
		{
			name:    "stray argument",
			args:    []string{"tfjob"},
			wantErr: []string{"unexpected arguments"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseFlags(tc.args, io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseFlags(%v) succeeded, want an error", tc.args)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFlags(%v): %v", tc.args, err)
			}
			if got := strings.Join(o.Schemes(), ","); got != strings.Join(tc.wantSchemes, ",") {
				t.Errorf("schemes = %s, want %s", got, strings.Join(tc.wantSchemes, ","))
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

// Main exits 2 with the message on stderr before it touches a cluster.
func TestMainRejectsBadFlags(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"--enable-scheme=caffe", "--kubeconfig=/nonexistent"}, &stderr)
	if code != 2 {
		t.Errorf("exit code = %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `--enable-scheme: unknown job kind "caffe"`) {
		t.Errorf("stderr = %q, want it to name the flag and the value", stderr.String())
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
