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
	// Story is what the demo did and saw since the table came up (the
	// gang restart it shows), one line each, shown under the table.
	Story []string
}

// render draws the snapshot as a compact table: one row per pod, with its
// job and the job's PodGroup phase on the job's first row and, for a job
// that restarts as a whole gang, its generation and restarts on the
// second.
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
		names := []string{j.display()}
		if g := j.generationText(); g != "" {
			names = append(names, "  "+g)
		}
		if len(j.Pods) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t(no pods yet)\t\t\t\n", names[0], gang)
		}
		for i, p := range j.Pods {
			name, g := "", ""
			if i < len(names) {
				name = names[i]
			}
			if i == 0 {
				g = gang
			}
			kind := dash(p.NodeKind)
			if p.Place != "" && j.Topology != nil {
				kind += " " + p.Place
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, g, p.Role, p.Name, p.Phase, dash(p.Node), kind)
		}
		for i := max(len(j.Pods), 1); i < len(names); i++ {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\n", names[i])
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
		fmt.Fprintf(&b, "All %d gangs Running (%d pods): pods asking for GPUs on gpu nodes, the others on cpu nodes%s.\n", len(snap.Jobs), pods, topologyNote(snap))
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
	for _, f := range res.Failed {
		fmt.Fprintf(&b, "  FAILED %s\n", truncate(f, 300))
	}
	for _, j := range snap.Jobs {
		if r := j.LastRestart; r != nil {
			fmt.Fprintf(&b, "Last gang restart of %s, at %s: %s: %s\n", j.display(), r.Time.Format("15:04:05"), r.Trigger, truncate(r.Message, 160))
		}
	}
	if len(v.Story) > 0 {
		fmt.Fprintln(&b)
		for _, line := range v.Story {
			fmt.Fprintln(&b, line)
		}
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

// topologyNote names the jobs whose placement keeps a topology rule, for
// the line that says all gangs run.
func topologyNote(snap *snapshot) string {
	var names []string
	for _, j := range snap.Jobs {
		if j.Topology != nil && len(j.Topology.Levels) > 0 {
			names = append(names, j.display())
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; " + strings.Join(names, ", ") + " placed by its topology rule"
}

// generationText is a gang-restarted job's generation and restart count,
// e.g. "gen 1, 1 restart"; empty for other jobs.
func (j jobRow) generationText() string {
	if !j.GangRestarts {
		return ""
	}
	s := fmt.Sprintf("gen %d, %s", j.Generation, plural(j.Restarts, "restart"))
	if j.Disruptions > 0 {
		s += ", " + plural(j.Disruptions, "disruption")
	}
	return s
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
