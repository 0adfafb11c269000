//go:build !linux

package peers

import (
	"os"
	"os/exec"
	"syscall"
)

const (
	sigterm = os.Interrupt
	sigkill = os.Kill
)

// groupProcAttr: process groups are a Linux affair here; elsewhere Stop
// signals the scheduler alone.
func groupProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	_ = cmd.Process.Signal(sig)
}
