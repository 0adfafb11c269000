package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Leftovers lists the running processes of binaries whose command line
// names a path in dir (IsProcessOf), by pid.
func Leftovers(dir string, binaries []string) map[int]string {
	found := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := []string{}
		for _, a := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
			argv = append(argv, string(a))
		}
		if IsProcessOf(argv, dir, binaries) {
			found[pid] = filepath.Base(argv[0])
		}
	}
	return found
}

// ProcessAlive reports whether pid runs and its command line contains
// want.
func ProcessAlive(pid int, want string) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && bytes.Contains(raw, []byte(want))
}
