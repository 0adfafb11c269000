package demo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// verdict is how far the watched jobs are.
type verdict struct {
	// Done: every watched job has all its pods Running on the right kind
	// of node and its PodGroup Running.
	Done bool
	// Misplaced names pods on the wrong kind of node; a bound pod never
	// moves, so the run has failed.
	Misplaced []string
	// Waiting says, per job, what is still missing.
	Waiting []string
	// Failed names jobs that can no longer get there: failed for good, or
	// restarted other than the demo expects.
	Failed []string
}

// and is the verdict on both sets of jobs.
func (v verdict) and(o verdict) verdict {
	r := verdict{
		Misplaced: append(slices.Clone(v.Misplaced), o.Misplaced...),
		Waiting:   append(slices.Clone(v.Waiting), o.Waiting...),
		Failed:    append(slices.Clone(v.Failed), o.Failed...),
	}
	r.Done = v.Done && o.Done
	return r
}

// broken reports whether the run has failed: a pod on the wrong kind of
// node never moves, and a failed job stays failed.
func (v verdict) broken() bool { return len(v.Misplaced) > 0 || len(v.Failed) > 0 }

// wantNodeKind is where a pod belongs: on a GPU node if it asks for GPUs,
// on a CPU node otherwise. For the examples this means the TFJob chief
// and the MPI launcher on CPU nodes, and every worker (and the PyTorch
// master, which is rank 0 of the training) on GPU nodes.
func wantNodeKind(p podRow) string {
	if p.GPUs > 0 {
		return kindGPU
	}
	return kindCPU
}

// check judges the jobs named by keys (Kind namespace/name) in a snapshot.
func check(snap *snapshot, keys []string) verdict {
	byKey := map[string]*jobRow{}
	for i := range snap.Jobs {
		byKey[snap.Jobs[i].key()] = &snap.Jobs[i]
	}
	var v verdict
	for _, key := range keys {
		job, ok := byKey[key]
		if !ok {
			v.Waiting = append(v.Waiting, key+": not found")
			continue
		}
		running := 0
		var pending []string
		for _, p := range job.Pods {
			if p.Node != "" && p.NodeKind != "" && p.NodeKind != wantNodeKind(p) {
				v.Misplaced = append(v.Misplaced, fmt.Sprintf("%s: %s %s (%s) is on %s node %s; want a %s node",
					key, p.Role, p.Name, gpuText(p.GPUs), p.NodeKind, p.Node, wantNodeKind(p)))
			}
			if p.Phase == string(corev1.PodRunning) {
				running++
			} else {
				pending = append(pending, p.Name+" "+p.Phase)
			}
		}
		var missing []string
		if running < job.Expected || len(job.Pods) < job.Expected {
			missing = append(missing, fmt.Sprintf("%d/%d pods Running", running, job.Expected))
		}
		if len(pending) > 0 && len(pending) <= 3 {
			missing = append(missing, strings.Join(pending, ", "))
		}
		switch job.Condition {
		case string(kfv1.JobFailed):
			v.Failed = append(v.Failed, fmt.Sprintf("%s: Failed (%s): %s", key, job.ConditionReason, job.ConditionMessage))
		case string(kfv1.JobRestarting):
			missing = append(missing, "Restarting ("+job.ConditionReason+")")
		}
		if job.Gang != string(schedulingv1alpha1.PodGroupRunning) {
			gang := "no PodGroup yet"
			if job.Gang != "" {
				gang = "PodGroup " + job.Gang
				if job.GangMessage != "" {
					gang += " (" + job.GangMessage + ")"
				}
			}
			missing = append(missing, gang)
		}
		if job.Topology != nil && len(missing) == 0 {
			misplaced, waiting := checkTopology(key, job, snap.nodeLabels)
			v.Misplaced = append(v.Misplaced, misplaced...)
			missing = append(missing, waiting...)
		}
		if len(missing) > 0 {
			v.Waiting = append(v.Waiting, key+": "+strings.Join(missing, "; "))
		}
	}
	v.Done = len(v.Waiting) == 0 && !v.broken()
	return v
}

// restartWant is the whole-gang restart the demo causes: it fails Member
// with ExitCode, and wants the job back as generation 1.
type restartWant struct {
	Key      string
	Member   string
	ExitCode int32
}

// checkRestart judges the job the demo restarted: placed and Running as
// check wants every job, restarted exactly once, for Member's failure
// with ExitCode (status.gang: generation 1, restarts 1, lastRestart
// MemberFailed), and made of generation 1 only: every pod carries
// generation 1 and none of generation 0 is left.
func checkRestart(snap *snapshot, want restartWant) verdict {
	v := check(snap, []string{want.Key})
	job := snap.job(want.Key)
	if job == nil {
		return v
	}
	var missing []string
	last := job.LastRestart
	switch {
	case job.Restarts+job.Disruptions > 1 || job.Generation > 1:
		v.Failed = append(v.Failed, fmt.Sprintf("%s: restarted %d times (%d restarts, %d disruptions; generation %d), want once",
			want.Key, job.Restarts+job.Disruptions, job.Restarts, job.Disruptions, job.Generation))
	case job.Restarts+job.Disruptions == 0 || last == nil:
		missing = append(missing, fmt.Sprintf("no gang restart yet (generation %d)", job.Generation))
	case job.Restarts != 1 || job.Generation != 1 || last.Trigger != kubeflowv1.GangRestartOnMemberFailed ||
		last.Member != want.Member || last.ExitCode == nil || *last.ExitCode != want.ExitCode:
		v.Failed = append(v.Failed, fmt.Sprintf("%s: generation %d after %d restarts and %d disruptions, the last for %s of %q with exit code %s (%s); want generation 1 after 1 restart for MemberFailed of %q with exit code %d",
			want.Key, job.Generation, job.Restarts, job.Disruptions, last.Trigger, last.Member, exitText(last.ExitCode), last.Message, want.Member, want.ExitCode))
	default:
		stale := map[string]int{}
		for _, p := range job.Pods {
			if p.Generation != "1" {
				stale[p.Generation]++
			}
		}
		for _, gen := range slices.Sorted(maps.Keys(stale)) {
			if gen == "" {
				missing = append(missing, plural(stale[gen], "pod")+" without a generation label")
				continue
			}
			missing = append(missing, fmt.Sprintf("%s of generation %s left", plural(stale[gen], "pod"), gen))
		}
	}
	if len(missing) > 0 {
		v.Waiting = append(v.Waiting, want.Key+": "+strings.Join(missing, "; "))
	}
	v.Done = len(v.Waiting) == 0 && !v.broken()
	return v
}

// plural counts things: "1 pod", "2 pods".
func plural[N int | int32](n N, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func exitText(code *int32) string {
	if code == nil {
		return "none"
	}
	return fmt.Sprint(*code)
}

func gpuText(n int64) string {
	switch n {
	case 0:
		return "no GPUs"
	case 1:
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
