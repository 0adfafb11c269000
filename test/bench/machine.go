package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machineFacts describes the machine the results come from: cores, CPU
// model, memory, kernel, Go, and the load while the harness ran (the
// machine may be shared).
func machineFacts() []string {
	facts := []string{fmt.Sprintf("Machine: %d cores, %s, %s of memory, %s.", runtime.NumCPU(), cpuModel(), memTotal(), kernel())}
	facts = append(facts, fmt.Sprintf("Go: %s (harness).", runtime.Version()))
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(load))
		if len(f) >= 3 {
			facts = append(facts, fmt.Sprintf("Load average at the end: %s (1 min), %s (5 min), %s (15 min) on %d cores.", f[0], f[1], f[2], runtime.NumCPU()))
		}
	}
	return facts
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	var kb int64
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			_, _ = fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
		}
	}
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}

func kernel() string {
	out, err := exec.Command("uname", "-sr").Output()
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(out))
}
