package peers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/troupe-ml/troupe/gangscheduler/app"
)

// StartTroupeScheduler runs Troupe's own scheduler (cmd/scheduler, or a
// test binary that runs it) as a process like the peers, so that a test
// can kill it for real (Process.Kill) in the middle of whatever it does.
// It sets --kubeconfig, the client limits when given, and turns the
// metrics and health endpoints off (several may run on one machine);
// o.Args come after.
func StartTroupeScheduler(o Options) (*Process, error) {
	if err := errors.Join(o.validate()...); err != nil {
		return nil, fmt.Errorf("troupe-scheduler options: %w", err)
	}
	args := []string{"--kubeconfig=" + o.Kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0"}
	if o.QPS != 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%v", o.QPS))
	}
	if o.Burst > 0 {
		args = append(args, fmt.Sprintf("--kube-api-burst=%d", o.Burst))
	}
	args = append(args, o.Args...)
	dir, err := os.MkdirTemp("", "troupe-scheduler-")
	if err != nil {
		return nil, err
	}
	return start("troupe-scheduler", dir, o, args)
}

// testProcessEnv marks a test binary started by StartTestScheduler:
// RunTestScheduler then runs the scheduler in it instead of the tests.
const testProcessEnv = "TROUPE_TEST_RUN_SCHEDULER"

// RunTestScheduler runs troupe-scheduler (app.Main with the process's
// arguments) and exits, if this process was started by
// StartTestScheduler; otherwise it returns at once. Call it first in the
// TestMain of a suite that uses StartTestScheduler: the test binary is
// then the scheduler binary, a process as real as cmd/scheduler's, and the
// suite needs no build step.
func RunTestScheduler() {
	if os.Getenv(testProcessEnv) == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := app.Main(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// StartTestScheduler starts troupe-scheduler as a process of its own, the
// running test binary again (see RunTestScheduler), as StartTroupeScheduler
// does with o.Binary ignored.
func StartTestScheduler(o Options) (*Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	o.Binary = self
	o.Env = append(o.Env, testProcessEnv+"=1")
	return StartTroupeScheduler(o)
}
