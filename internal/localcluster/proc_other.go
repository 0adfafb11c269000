//go:build !linux

package localcluster

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Leftovers finds nothing where there is no /proc.
func Leftovers(string, []string) map[int]string { return map[int]string{} }

// ProcessAlive cannot tell without /proc; a caller then trusts its pid
// file less and starts anyway.
func ProcessAlive(int, string) bool { return false }
