package measure

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, which
// Linux fixes at 100 for that interface whatever the kernel's HZ.
const clockTick = 10 * time.Millisecond

// ProcStat is what the benchmark reads of /proc/<pid>/stat.
type ProcStat struct {
	Comm string
	PPID int
	// CPU is user plus system time.
	CPU time.Duration
}

// ReadProcStat reads a process's command name, parent and CPU time.
func ReadProcStat(pid int) (ProcStat, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, err
	}
	return parseProcStat(string(raw))
}

// parseProcStat parses one /proc/<pid>/stat line. The command name is in
// parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func parseProcStat(line string) (ProcStat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return ProcStat{}, fmt.Errorf("malformed stat line %q", line)
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(line[end+1:])
	if len(f) < 13 {
		return ProcStat{}, fmt.Errorf("short stat line %q", line)
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ProcStat{}, fmt.Errorf("malformed stat line %q", line)
	}
	return ProcStat{Comm: line[open+1 : end], PPID: ppid, CPU: time.Duration(utime+stime) * clockTick}, nil
}

// ChildrenNamed returns the pids of this process's children whose command
// name is one of names, by name. The harness finds the kube-apiserver and
// etcd that envtest started for it this way, and never anybody else's.
func ChildrenNamed(names ...string) map[string][]int {
	found := map[string][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadProcStat(pid)
		if err != nil || st.PPID != self {
			continue
		}
		for _, n := range names {
			if st.Comm == n {
				found[n] = append(found[n], pid)
			}
		}
	}
	return found
}

// CPUOf sums the CPU time of pids; processes that are gone count 0.
func CPUOf(pids ...int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if st, err := ReadProcStat(pid); err == nil {
			total += st.CPU
		}
	}
	return total
}

// CPUPoint is a process's CPU time at one moment of a run.
type CPUPoint struct {
	At, CPU time.Duration
}

// CPUSeries are CPU points in time order.
type CPUSeries []CPUPoint

// Between is the CPU time spent from the last point at or before from to
// the first point at or after to: the interval, widened to the samples.
// With no point after to it runs to the last point.
func (s CPUSeries) Between(from, to time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	start, end := s[0], s[len(s)-1]
	for _, p := range s {
		if p.At <= from {
			start = p
		}
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].At >= to {
			end = s[i]
		}
	}
	return max(end.CPU-start.CPU, 0)
}

// TickResolution is how coarse a CPU time read from /proc is, as a share
// of it: one tick over the time. A figure per pod is as coarse as the
// total it divides.
func TickResolution(cpu time.Duration) float64 {
	if cpu <= 0 {
		return 1
	}
	return float64(clockTick) / float64(cpu)
}

// PeakRSS is a process's peak resident memory (VmHWM in
// /proc/<pid>/status): all its threads share one address space, so this
// is the whole process's. It must be read before the process exits.
func PeakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(string(raw))
}

// parseVmHWM reads the "VmHWM:  1234 kB" line of a /proc/<pid>/status,
// in bytes.
func parseVmHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("malformed VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed VmHWM line %q", line)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmHWM line (a kernel thread, or not Linux)")
}
