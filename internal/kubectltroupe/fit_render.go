package kubectltroupe

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/internal/fit"
)

// renderFit prints the verdict: where the members would go, or why the
// gang waits, and what preemption would take.
func renderFit(out io.Writer, kind string, job engine.Job, v fit.Verdict) error {
	var b strings.Builder
	name := job.GetNamespace() + "/" + job.GetName()
	if v.Placed {
		fmt.Fprintf(&b, "%s %s: troupe-scheduler would place it now.\n\n", kind, name)
	} else {
		fmt.Fprintf(&b, "%s %s: troupe-scheduler would not place it now.\n", kind, name)
		if v.Message != "" {
			fmt.Fprintf(&b, "Why (%s): %s\n", v.Reason, v.Message)
		}
		b.WriteString("\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPOD\tNODE")
	for _, p := range v.Placements {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Role, p.Pod, p.Node)
	}
	for _, p := range v.Waiting {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Role, p.Pod, "-")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.Placed && len(v.Waiting) > 0 {
		what := fmt.Sprintf("%d members above it wait", len(v.Waiting))
		if len(v.Waiting) == 1 {
			what = "1 member above it waits"
		}
		fmt.Fprintf(&b, "\nThe gang's minimum is placed; %s for room.\n", what)
	}
	if len(v.Victims) > 0 {
		if v.PreemptionOn {
			b.WriteString("\nPreemption would delete these pods, and the gang would be placed once they are gone:\n")
		} else {
			b.WriteString("\nThe scheduler's configuration has no preempt action, so the gang waits. With it, preemption would delete:\n")
		}
		for _, vic := range v.Victims {
			what := "the whole gang"
			if !vic.Whole {
				what = "members above its minimum; it runs on"
			}
			fmt.Fprintf(&b, "  %s (priority %d): %s (%s)\n", vic.Gang, vic.Priority, strings.Join(vic.Pods, ", "), what)
		}
	} else if !v.Placed {
		b.WriteString("\nPreemption would take nothing for it: no gang of lower priority in its queue frees room it fits in.\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}
