package demo

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// view is what the table shows besides the snapshot.
type view struct {
	// Kubeconfig is printed with an export line, for kubectl.
	Kubeconfig string
	// Interactive adds how to stop the demo.
	Interactive bool
	// Notes are shown under the table (how the cluster was started,
	// processes that stopped).
	Notes []string
}

// render draws the snapshot as a compact table: one row per pod, with its
// job and the job's PodGroup phase on the job's first row.
func render(snap *snapshot, v view) string {
	var b strings.Builder
	cpu, gpu, ready := 0, 0, 0
	var gpus, gpusUsed int64
	for _, n := range snap.Nodes {
		if n.Kind == kindGPU {
			gpu++
		} else {
			cpu++
		}
		if n.Ready && !n.NotReady {
			ready++
		}
		gpus += n.GPUs
	}
	for _, j := range snap.Jobs {
		for _, p := range j.Pods {
			if p.Node != "" && (p.Phase == "Running" || p.Phase == "Scheduled") {
				gpusUsed += p.GPUs
			}
		}
	}
	fmt.Fprintf(&b, "Troupe demo   nodes: %d cpu, %d gpu (%d Ready)   GPUs requested: %d/%d   %s\n\n",
		cpu, gpu, ready, gpusUsed, gpus, snap.Time.Format("15:04:05"))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPODGROUP\tROLE\tPOD\tPHASE\tNODE\tKIND")
	if len(snap.Jobs) == 0 {
		fmt.Fprintln(tw, "(no jobs yet)\t\t\t\t\t\t")
	}
	for _, j := range snap.Jobs {
		gang := j.Gang
		if gang == "" {
			gang = "-"
		}
		if len(j.Pods) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t(no pods yet)\t\t\t\n", j.display(), gang)
			continue
		}
		for i, p := range j.Pods {
			name, g := "", ""
			if i == 0 {
				name, g = j.display(), gang
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, g, p.Role, p.Name, p.Phase, dash(p.Node), dash(p.NodeKind))
		}
	}
	_ = tw.Flush()

	var keys []string
	for _, j := range snap.Jobs {
		keys = append(keys, j.key())
	}
	res := check(snap, keys)
	fmt.Fprintln(&b)
	switch {
	case len(snap.Jobs) == 0:
	case res.Done:
		pods := 0
		for _, j := range snap.Jobs {
			pods += len(j.Pods)
		}
		fmt.Fprintf(&b, "All %d gangs Running (%d pods): pods asking for GPUs on gpu nodes, the others on cpu nodes.\n", len(snap.Jobs), pods)
	default:
		running := 0
		for _, j := range snap.Jobs {
			if j.Gang == "Running" {
				running++
			}
		}
		fmt.Fprintf(&b, "%d/%d gangs Running. Waiting:\n", running, len(snap.Jobs))
		for _, w := range res.Waiting {
			fmt.Fprintf(&b, "  %s\n", truncate(w, 160))
		}
	}
	for _, m := range res.Misplaced {
		fmt.Fprintf(&b, "  MISPLACED %s\n", m)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	if v.Kubeconfig != "" {
		fmt.Fprintf(&b, "\nkubeconfig: %s\n  export KUBECONFIG=%s\n", v.Kubeconfig, v.Kubeconfig)
		if v.Interactive {
			fmt.Fprintf(&b, "  kubectl apply -f examples/tfjob-ps-worker.yaml   # or your own manifests\n\nCtrl-C stops the cluster.\n")
		}
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
