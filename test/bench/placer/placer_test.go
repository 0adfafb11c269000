package placer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/test/bench/nullbinder"
)

// standIn writes a script that records its arguments, one per line, and
// then waits to be stopped, or exits at once with exitNow.
func standIn(t *testing.T, exitNow bool) (binary, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	// Written aside and moved into place, so that readArgs never reads a
	// file the stand-in is still writing (it read "--kubeconfig=/kc"
	// alone once, under load).
	script := "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > " + argsFile + ".tmp && mv " + argsFile + ".tmp " + argsFile + "\n"
	if exitNow {
		script += "exit 3\n"
	} else {
		script += "exec sleep 60\n"
	}
	binary = filepath.Join(dir, "placer")
	if err := os.WriteFile(binary, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return binary, argsFile
}

func readArgs(t *testing.T, file string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if raw, err := os.ReadFile(file); err == nil && len(raw) > 0 {
			return strings.Split(strings.TrimSpace(string(raw)), "\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the stand-in never wrote %s", file)
	return nil
}

// Every placer gets the same client settings, in its own flags.
func TestStartArgs(t *testing.T) {
	env := Env{Kubeconfig: "/kc", Client: nullbinder.Client{QPS: 1000, Burst: 900, BindWorkers: 16}}
	tests := []struct {
		name    string
		placer  func(binary string) Placer
		want    []string
		notWant []string
	}{{
		name:   "null binder",
		placer: func(b string) Placer { return Null{Exe: b, Subcommand: "null-binder"} },
		want:   []string{"null-binder", "--kubeconfig=/kc", "--kube-api-qps=1000", "--kube-api-burst=900", "--bind-workers=16"},
	}, {
		name:   "null binder of a sweep, its own binds in flight",
		placer: func(b string) Placer { return Null{Exe: b, Subcommand: "null-binder", BindWorkers: 256} },
		want:   []string{"null-binder", "--bind-workers=256"},
	}, {
		name:    "troupe",
		placer:  func(b string) Placer { return Troupe{Binary: b} },
		want:    []string{"--kubeconfig=/kc", "--kube-api-qps=1000", "--kube-api-burst=900", "--bind-workers=16", "--health-probe-bind-address=0"},
		notWant: []string{"--pod-scheduled-events=false", "--pprof-bind-address", "--min-cycle-period"},
	}, {
		name: "troupe at its own binds in flight",
		placer: func(b string) Placer {
			return withBindWorkers{Troupe{Binary: b}, 0}
		},
		want:    []string{"--kube-api-qps=1000"},
		notWant: []string{"--bind-workers"},
	}, {
		name: "troupe without pod events, profiled, at another period",
		placer: func(b string) Placer {
			return Troupe{Binary: b, Label: "troupe-gang-events", NoPodEvents: true, Pprof: true, MinCyclePeriod: 50 * time.Millisecond}
		},
		want: []string{"--pod-scheduled-events=false", "--pprof-bind-address=127.0.0.1:", "--min-cycle-period=50ms"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			binary, argsFile := standIn(t, false)
			env := env
			env.LogFile = filepath.Join(t.TempDir(), "log")
			p, err := tc.placer(binary).Start(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(readArgs(t, argsFile), " ")
			for _, w := range tc.want {
				if !strings.Contains(args, w) {
					t.Errorf("args %q lack %q", args, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(args, w) {
					t.Errorf("args %q have %q", args, w)
				}
			}
			if m, ok := p.(Metered); ok && !strings.HasPrefix(m.MetricsURL(), "http://127.0.0.1:") {
				t.Errorf("metrics at %q", m.MetricsURL())
			}
			if err := p.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
}

// A placer that dies on its own is an error at Stop, not a clean end.
func TestStopReportsAnEarlyExit(t *testing.T) {
	binary, argsFile := standIn(t, true)
	p, err := Troupe{Binary: binary}.Start(context.Background(), Env{LogFile: filepath.Join(t.TempDir(), "log")})
	if err != nil {
		t.Fatal(err)
	}
	readArgs(t, argsFile)
	exited := p.(interface{ Exited() (bool, error) })
	deadline := time.Now().Add(10 * time.Second)
	for done, _ := exited.Exited(); !done && time.Now().Before(deadline); done, _ = exited.Exited() {
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "exited early") {
		t.Errorf("Stop = %v, want an early exit", err)
	}
}

// The null binder's gangs have no PodGroup and go to the null binder.
func TestNullDialect(t *testing.T) {
	d := Null{}.Dialect()
	if d.PodGroupType() != nil {
		t.Error("the null binder has a PodGroup type")
	}
	pod := &corev1.Pod{}
	d.DecoratePod(pod, "g", "worker")
	if pod.Spec.SchedulerName != nullbinder.SchedulerName || pod.Annotations["scheduling.k8s.io/group-name"] != "g" {
		t.Errorf("pod %+v", pod)
	}
}

// withBindWorkers starts a placer with other binds in flight than the
// test's Env.
type withBindWorkers struct {
	Placer
	n int
}

func (w withBindWorkers) Start(ctx context.Context, env Env) (Process, error) {
	env.BindWorkers = w.n
	return w.Placer.Start(ctx, env)
}

func TestNullName(t *testing.T) {
	if got := (Null{}).Name(); got != "null" {
		t.Errorf("Name() = %q", got)
	}
	if got := (Null{BindWorkers: 64}).Name(); got != "null-64" {
		t.Errorf("Name() = %q", got)
	}
}
