// Package threadcpu reads the CPU time of the calling OS thread. A
// goroutine locked to its thread (runtime.LockOSThread) can then time its
// own work in CPU time: on a busy machine its wall-clock time also counts
// the time it waited for a CPU, which says more about the neighbours than
// about the work.
package threadcpu

import "time"

// Now returns the CPU time the calling thread has used, and false where
// the platform does not tell it.
func Now() (time.Duration, bool) { return now() }
