package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Proc is a subprocess (kwok, kube-controller-manager, a Troupe binary)
// with its output appended to a log file.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts path with args, its output appended to logPath. The
// process gets its own process group, so that a Ctrl-C in the terminal
// reaches only the program that started it, which stops everything in
// order; on Linux it is also killed if that program dies without stopping
// it.
func Start(name, path string, args []string, logPath string) (*Proc, error) {
	return StartEnv(name, path, args, nil, logPath)
}

// StartEnv is Start with env added to this process's environment.
func StartEnv(name, path string, args, env []string, logPath string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Signal sends sig to the process. A process that has already exited is
// not an error: the caller raced its end.
func (p *Proc) Signal(sig syscall.Signal) error {
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s (pid %d) with %v: %w", p.Name, p.Pid(), sig, err)
	}
	return nil
}

// Kill sends SIGKILL and waits until the process is reaped, at most
// timeout.
func (p *Proc) Kill(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) still running %v after SIGKILL", p.Name, p.Pid(), timeout)
	}
}

// Stop sends SIGTERM and waits; after timeout it kills the process. A
// stopped (SIGSTOP) process is continued first, or it could not act on
// the SIGTERM.
func (p *Proc) Stop(timeout time.Duration) error {
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v after SIGTERM; killed it", p.Name, timeout)
	}
}

// ExitSignal is the signal that ended the process, or 0 if it exited on
// its own or still runs.
func (p *Proc) ExitSignal() syscall.Signal {
	var exit *exec.ExitError
	if done, err := p.Exited(); !done || !errors.As(err, &exit) {
		return 0
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// IsProcessOf reports whether argv is one of binaries (by base name)
// started with a path inside dir among its arguments: a process a
// program started for its state folder dir.
func IsProcessOf(argv []string, dir string, binaries []string) bool {
	if len(argv) == 0 {
		return false
	}
	base := filepath.Base(argv[0])
	known := false
	for _, b := range binaries {
		known = known || base == b
	}
	if !known {
		return false
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	for _, a := range argv[1:] {
		if containsPath(a, prefix) {
			return true
		}
	}
	return false
}

// containsPath reports whether arg is a path under prefix or has one after
// an = or a comma (--flag=/dir/x, --flags=/a,/dir/x).
func containsPath(arg, prefix string) bool {
	for i := 0; i+len(prefix) <= len(arg); i++ {
		if strings.HasPrefix(arg[i:], prefix) && (i == 0 || arg[i-1] == '=' || arg[i-1] == ',') {
			return true
		}
	}
	return false
}

// KillLeftovers kills the processes of binaries that run on the state
// folder dir (IsProcessOf), left by a run that was killed before it could
// stop them, and waits a moment for them to go; it returns how many.
func KillLeftovers(dir string, binaries []string) int {
	procs := Leftovers(dir, binaries)
	for pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(procs) > 0 {
		// Give the kernel a moment to reap them, so that their ports and
		// files are free.
		deadline := time.Now().Add(5 * time.Second)
		for len(Leftovers(dir, binaries)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return len(procs)
}
