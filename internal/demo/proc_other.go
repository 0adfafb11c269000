//go:build !linux

package demo

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// leftoverProcesses finds nothing where there is no /proc.
func leftoverProcesses(string) map[int]string { return map[int]string{} }

// processAlive cannot tell without /proc; the demo then trusts the pid
// file less and starts anyway.
func processAlive(int, string) bool { return false }
