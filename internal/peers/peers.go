// Package peers runs the peer gang schedulers Troupe's backends speak to,
// Volcano's vc-scheduler and kube-scheduler with scheduler-plugins'
// Coscheduling, as real processes against an API server, for the e2e suite
// and the benchmark harness. hack/peer-schedulers.sh builds the binaries
// from the Go module proxy at the versions of hack/peers.env.
//
// It also runs Kueue's manager, the queue in front of a scheduler, for the
// e2e suite's Kueue + Troupe specs; and upstream kube-scheduler with its
// default profile, built by
// hack/controlplane.sh beside the test API server, as the reference that
// test/differential compares troupe-scheduler's decisions with.
package peers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options are what every peer scheduler process needs.
type Options struct {
	// Binary is the scheduler's path, as hack/peer-schedulers.sh prints it.
	Binary string
	// Kubeconfig is the kubeconfig file of the API server to schedule on.
	Kubeconfig string
	// QPS and Burst limit the scheduler's client; 0 leaves the scheduler's
	// own default, and a negative QPS sets no client-side limit (client-go's
	// meaning, which every scheduler here passes on to its client).
	QPS   float64
	Burst int
	// LogFile receives the process's stdout and stderr, appended, after a
	// header with its command line and configuration.
	LogFile string
	// Verbosity is klog's -v; 0 logs what the scheduler logs by default.
	Verbosity int
	// Args are more command-line flags for the scheduler, after the ones
	// Start sets, so that a flag given again here wins.
	Args []string
	// Env are more environment variables for the process, NAME=value.
	Env []string
}

func (o Options) validate() []error { return o.validateBuiltBy("hack/peer-schedulers.sh") }

// validateBuiltBy is validate for a binary that script builds, which the
// errors about a missing one name.
func (o Options) validateBuiltBy(script string) []error {
	var errs []error
	switch info, err := os.Stat(o.Binary); {
	case o.Binary == "":
		errs = append(errs, fieldError("Binary", "empty; give the path %s prints", script))
	case err != nil:
		errs = append(errs, fieldError("Binary", "%w (build it with %s)", err, script))
	case info.IsDir() || info.Mode()&0o111 == 0:
		errs = append(errs, fieldError("Binary", "%s is not an executable file", o.Binary))
	}
	if o.Kubeconfig == "" {
		errs = append(errs, fieldError("Kubeconfig", "empty; give the kubeconfig file of the API server"))
	} else if _, err := os.Stat(o.Kubeconfig); err != nil {
		errs = append(errs, fieldError("Kubeconfig", "%w", err))
	}
	if o.Burst < 0 {
		errs = append(errs, fieldError("Burst", "must be 0 (the scheduler's default) or more, got %d", o.Burst))
	}
	if o.LogFile == "" {
		errs = append(errs, fieldError("LogFile", "empty; name a file for the scheduler's output"))
	}
	if o.Verbosity < 0 {
		errs = append(errs, fieldError("Verbosity", "must be 0 or more, got %d", o.Verbosity))
	}
	return errs
}

// fieldError is the error of an invalid option, led by its field's name.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{field}, args...)...)
}

// stopTimeout is how long Stop waits after SIGTERM before it kills.
var stopTimeout = 10 * time.Second

// Process is a running peer scheduler.
type Process struct {
	name    string
	cmd     *exec.Cmd
	dir     string // holds the scheduler's configuration; removed by Stop
	logFile string
	done    chan struct{}
	err     error // Wait's result, once done is closed

	stopOnce sync.Once
	stopErr  error
}

// start runs binary with args in its own process group, its output
// appended to o.LogFile after a header showing the command and the
// configuration files in dir. dir belongs to the process from then on.
func start(name, dir string, o Options, args []string) (*Process, error) {
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fieldError("LogFile", "%w", err)
	}
	if err := writeHeader(logf, dir, o.Binary, args); err != nil {
		_ = logf.Close()
		_ = os.RemoveAll(dir)
		return nil, fieldError("LogFile", "%w", err)
	}
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	// Volcano serves a log-level socket under $DEBUG_SOCKET_DIR, by default
	// one fixed folder in /tmp that concurrent schedulers would fight over.
	cmd.Env = append(append(os.Environ(), "DEBUG_SOCKET_DIR="+dir), o.Env...)
	cmd.SysProcAttr = groupProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, dir: dir, logFile: o.LogFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func writeHeader(logf *os.File, dir, binary string, args []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "=== %s %s\n", binary, strings.Join(args, " "))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "=== %s\n%s", e.Name(), raw)
	}
	b.WriteString("===\n")
	_, err = logf.WriteString(b.String())
	return err
}

// killed reports whether the process died of SIGKILL (Kill), which Stop
// does not count as a crash.
func (p *Process) killed() bool {
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(interface {
		Signaled() bool
		Signal() syscall.Signal
	})
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// Pid is the scheduler's process id; on Linux also its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogFile is where the scheduler's output goes.
func (p *Process) LogFile() string { return p.logFile }

// Done is closed when the process has exited, for whatever reason.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill ends the scheduler at once with SIGKILL to its process group, as
// an OOM kill or a lost node would: no deferred function runs, no request
// under way is finished, no lease is released. It waits until the process
// is gone; Stop still removes its configuration afterwards.
func (p *Process) Kill() error {
	signalGroup(p.cmd, sigkill)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("%s (pid %d) still running %s after SIGKILL", p.name, p.Pid(), stopTimeout)
	}
}

// Stop ends the scheduler and everything it started: SIGTERM to its process
// group, SIGKILL after 10s, then it waits for the process and removes its
// configuration. It fails if the scheduler had already exited on its own,
// as a crash should not go unnoticed; the log file says why. Stop may be
// called more than once; later calls return the first one's result.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Process) stop() error {
	var crashed error
	select {
	case <-p.done:
		if !p.killed() {
			crashed = fmt.Errorf("%s (pid %d) exited before Stop: %v; see %s", p.name, p.Pid(), p.err, p.logFile)
		}
	default:
		signalGroup(p.cmd, sigterm)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			signalGroup(p.cmd, sigkill)
			<-p.done
		}
	}
	// Whatever the scheduler forked outlives it in the group; end it too.
	signalGroup(p.cmd, sigkill)
	return errors.Join(crashed, os.RemoveAll(p.dir))
}
