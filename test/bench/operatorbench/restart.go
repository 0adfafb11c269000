package operatorbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/localcluster"
)

// restartExitCode is the failed member's exit code: retryable under the
// replicas' restartPolicy ExitCode (128 and up: killed by a signal, as an
// OOM kill or a preemption is) for both operators.
const restartExitCode = 137

// String says what the probe saw.
func (r *Restart) String() string {
	if r.Err != "" {
		return r.Err
	}
	return fmt.Sprintf("%d of %d pods replaced; the job ran whole again %v after the failure", r.Replaced, r.Pods, r.Took.Round(time.Millisecond))
}

// probeRestart fails one worker of the running job through kwok's chaos
// stage and waits until every pod of the job is Running again and the
// failed pod is gone: under Troupe's gangPolicy restartPolicy Gang every
// member is replaced; training-operator replaces the failed pod alone.
func probeRestart(ctx context.Context, c client.Client, tr *tracker, job string) *Restart {
	before := tr.jobPods(job)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range before {
			if !yield(n) {
				return
			}
		}
	})
	victim := ""
	for _, n := range names {
		if strings.Contains(n, "worker") {
			victim = n
			break
		}
	}
	r := &Restart{Pods: len(before)}
	if victim == "" {
		r.Err = fmt.Sprintf("job %s has no worker pod among %v", job, names)
		return r
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: victim}}
	start := time.Now()
	if err := localcluster.FailPod(ctx, c, pod, restartExitCode); err != nil {
		r.Err = err.Error()
		return r
	}
	deadline := time.NewTimer(restartTimeout)
	defer deadline.Stop()
	for {
		now := tr.jobPods(job)
		if back, replaced := wholeAgain(before, now, before[victim].uid); back {
			r.Took, r.Replaced = time.Since(start), replaced
			return r
		}
		select {
		case <-tr.changed:
		case <-deadline.C:
			r.Err = fmt.Sprintf("the job did not run whole again within %v of its worker's failure", restartTimeout)
			return r
		case <-ctx.Done():
			r.Err = ctx.Err().Error()
			return r
		}
	}
}

// wholeAgain reports whether the job's pods now are as many as before,
// every one Running and none of them the failed pod (by uid), and how
// many are new.
func wholeAgain(before, now map[string]podState, failed types.UID) (bool, int) {
	if len(now) != len(before) {
		return false, 0
	}
	old := map[types.UID]bool{}
	for _, p := range before {
		old[p.uid] = true
	}
	replaced := 0
	for _, p := range now {
		if !p.running || p.uid == failed {
			return false, 0
		}
		if !old[p.uid] {
			replaced++
		}
	}
	return true, replaced
}
