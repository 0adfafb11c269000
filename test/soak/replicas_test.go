package soak

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// processState reads a process's state letter from /proc (R, S, T...).
func processState(t *testing.T, pid int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatalf("read the state of pid %d: %v", pid, err)
	}
	// pid (comm) S ...: the state follows the command's closing paren.
	s := string(raw)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A replica the soak SIGKILLs is restarted as a new process, its exit
// reported as the soak's doing; one it SIGSTOPs is stopped until SIGCONT.
func TestReplicaKilledIsRestartedPausedIsContinued(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads process states from /proc")
	}
	exits := make(chan bool, 4)
	c := &component{name: "sleeper", binary: "/bin/sh", args: []string{"-c", "echo up; exec sleep 60"}, logDir: t.TempDir(),
		onExit: func(_ *replica, planned bool, _ string, _ error) { exits <- planned }}
	r := &replica{comp: c}
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		_ = r.proc.Stop(5 * time.Second)
	}()
	go r.supervise(ctx)
	first := r.proc.Pid()
	waitFor(t, "the first process to run", func() bool { return processState(t, first) != "" })

	if err := r.kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case planned := <-exits:
		if !planned {
			t.Error("the SIGKILL was reported as an exit the soak did not cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kill was not reported")
	}
	var second int
	waitFor(t, "a new process", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		second = r.proc.Pid()
		return second != first && r.starts == 2
	})
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(first))); err == nil {
		t.Errorf("pid %d still exists after SIGKILL", first)
	}

	if err := r.pause(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the process to stop", func() bool { return processState(t, second) == "T" })
	if !r.isStopped() {
		t.Error("the replica does not know it is paused")
	}
	if err := r.resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the process to continue", func() bool { return processState(t, second) != "T" })

	logRaw, err := os.ReadFile(r.logPath())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logRaw), "=== soak: start"); n != 2 {
		t.Errorf("the log shows %d starts, want 2:\n%s", n, logRaw)
	}
}

func TestLeadsIn(t *testing.T) {
	metrics := `# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="other.troupe.dev"} 1
leader_election_master_status{name="troupe-scheduler.troupe.dev"} 0
`
	cases := []struct {
		lease string
		want  bool
	}{{"other.troupe.dev", true}, {"troupe-scheduler.troupe.dev", false}, {"absent.troupe.dev", false}}
	for _, tc := range cases {
		got, err := leadsIn(strings.NewReader(metrics), tc.lease)
		if err != nil || got != tc.want {
			t.Errorf("leadsIn(%s) = %v, %v; want %v", tc.lease, got, err, tc.want)
		}
	}
}

func TestExitCause(t *testing.T) {
	cases := []struct {
		name, tail  string
		wantCrashed bool
		wantWhy     string
	}{
		{"a panic", "{\"msg\":\"x\"}\npanic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()", true, "panic: runtime error: index out of range"},
		{"the lease lost", `{"level":"error","msg":"problem running manager","error":"leader election lost"}` + "\noperator stopped: leader election lost", false, "lost its lease"},
		{"another error", "operator stopped: failed to wait for caches to sync", false, "operator stopped: failed to wait for caches to sync"},
	}
	for _, tc := range cases {
		crashed, why := exitCause(tc.tail)
		if crashed != tc.wantCrashed || !strings.HasPrefix(why, tc.wantWhy) {
			t.Errorf("%s: exitCause = %v, %q; want %v, %q", tc.name, crashed, why, tc.wantCrashed, tc.wantWhy)
		}
	}
}
