package peers

import (
	"os/exec"
	"syscall"
)

const (
	sigterm = syscall.SIGTERM
	sigkill = syscall.SIGKILL
)

// groupProcAttr starts the scheduler in a process group of its own, so that
// Stop reaches whatever it forks and a Ctrl-C in a terminal reaches only the
// test or harness, and has the kernel kill it if its parent dies without
// stopping it.
func groupProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group the scheduler leads. A group
// already gone is what Stop wants.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
