package demo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a subprocess of the demo (kwok, kube-controller-manager) with its
// output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// startProc starts path with args, its output appended to logPath. The
// process gets its own process group, so that a Ctrl-C in the terminal
// reaches only the demo, which stops everything in order; on Linux it is
// also killed if the demo dies without stopping it.
func startProc(name, path string, args []string, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM and waits; after timeout it kills the process.
func (p *proc) stop(timeout time.Duration) error {
	if done, _ := p.exited(); done {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v after SIGTERM; killed it", p.name, timeout)
	}
}

// demoBinaries are the programs the demo starts; a leftover one is found by
// its name and the state folder on its command line.
var demoBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}

// isDemoProcess reports whether argv is one of demoBinaries started for the
// state folder dir.
func isDemoProcess(argv []string, dir string) bool {
	if len(argv) == 0 {
		return false
	}
	base := filepath.Base(argv[0])
	known := false
	for _, b := range demoBinaries {
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

func containsPath(arg, prefix string) bool {
	for i := 0; i+len(prefix) <= len(arg); i++ {
		if arg[i:i+len(prefix)] == prefix && (i == 0 || arg[i-1] == '=' || arg[i-1] == ',') {
			return true
		}
	}
	return false
}
