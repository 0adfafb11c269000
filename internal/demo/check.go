package demo

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
}

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
		if len(missing) > 0 {
			v.Waiting = append(v.Waiting, key+": "+strings.Join(missing, "; "))
		}
	}
	v.Done = len(v.Waiting) == 0 && len(v.Misplaced) == 0
	return v
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
