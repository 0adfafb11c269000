//go:build linux

package peers

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A stand-in scheduler: a shell script that forks a child, as a scheduler
// may, records both pids next to its configuration (its working folder),
// and waits. Stop must leave neither behind.
const standIn = `#!/bin/sh
%TRAP%
sleep 300 &
echo $$ $! > pids
echo "stand-in running with $*"
wait
`

func startStandIn(t *testing.T, ctx context.Context, trap string) (*Process, []int) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "scheduler")
	if err := os.WriteFile(bin, []byte(strings.Replace(standIn, "%TRAP%", trap, 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := StartVolcano(ctx, VolcanoOptions{Options: Options{Binary: bin, Kubeconfig: kubeconfig, LogFile: filepath.Join(dir, "log"), Args: []string{"--extra=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	var pids []int
	waitFor(t, "the stand-in's pids", func() bool {
		raw, err := os.ReadFile(filepath.Join(p.dir, "pids"))
		if err != nil || !strings.HasSuffix(string(raw), "\n") {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(raw)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		return true
	})
	if pids[0] != p.Pid() {
		t.Fatalf("the stand-in runs as pid %d, Process says %d", pids[0], p.Pid())
	}
	return p, pids
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gone reports whether pid has exited: no such process, or a zombie
// waiting for init to reap it.
func gone(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func TestStopEndsTheProcessGroup(t *testing.T) {
	cases := []struct {
		name string
		trap string
	}{
		{name: "it obeys SIGTERM"},
		// Stop kills what ignores SIGTERM once its wait is over.
		{name: "it ignores SIGTERM", trap: "trap '' TERM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func(d time.Duration) { stopTimeout = d }(stopTimeout)
			stopTimeout = 500 * time.Millisecond
			p, pids := startStandIn(t, context.Background(), tc.trap)
			dir := p.dir
			for _, pid := range pids {
				if gone(pid) {
					t.Fatalf("pid %d is not running before Stop", pid)
				}
			}
			if err := p.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			for _, pid := range pids {
				waitFor(t, "pid "+strconv.Itoa(pid)+" to end", func() bool { return gone(pid) })
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the configuration folder %s is still there: %v", dir, err)
			}
			if err := p.Stop(); err != nil {
				t.Errorf("a second Stop: %v", err)
			}
			log, err := os.ReadFile(p.LogFile())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"=== volcano-scheduler.conf\nactions: enqueue, allocate, backfill\n", "stand-in running with --kubeconfig=", "--cache-dumper=false --extra=1\n"} {
				if !strings.Contains(string(log), want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

func TestCancelledContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, pids := startStandIn(t, ctx, "")
	cancel()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the scheduler still runs 20s after its context was cancelled")
	}
	for _, pid := range pids {
		waitFor(t, "pid "+strconv.Itoa(pid)+" to end", func() bool { return gone(pid) })
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after cancel: %v", err)
	}
}

func TestStopReportsACrash(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "scheduler")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho bad config >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "log")
	p, err := StartCoscheduling(context.Background(), CoschedulingOptions{Options: Options{Binary: bin, Kubeconfig: kubeconfig, LogFile: logFile}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	err = p.Stop()
	if err == nil || !strings.Contains(err.Error(), "exited before Stop: exit status 3; see "+logFile) {
		t.Fatalf("Stop: %v, want the crash reported", err)
	}
	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "=== kube-scheduler.yaml\n") || !strings.Contains(string(log), "bad config") {
		t.Errorf("log lacks the configuration or the output:\n%s", log)
	}
}
