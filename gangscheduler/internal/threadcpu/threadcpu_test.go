package threadcpu_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/internal/threadcpu"
)

// Busy work shows as CPU time; sleeping does not.
func TestNow(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadcpu.Now()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no thread CPU time on linux")
		}
		return
	}
	time.Sleep(50 * time.Millisecond)
	slept, _ := threadcpu.Now()
	if d := slept - start; d > 20*time.Millisecond {
		t.Errorf("sleeping 50ms used %v of CPU", d)
	}
	for i := range 1 << 22 {
		sink ^= uint64(i) * 2654435761
	}
	worked, _ := threadcpu.Now()
	if worked <= slept {
		t.Errorf("work used no CPU (%v, then %v)", slept, worked)
	}
}

var sink uint64
