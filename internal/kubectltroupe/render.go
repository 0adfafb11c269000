package kubectltroupe

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/util/duration"
)

// renderList writes one line per job, kubectl-style: its state, gang
// backend and queue, members running against the minimum per role,
// generation and restarts, and why it waits.
func renderList(w io.Writer, reports []jobReport, allNamespaces bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "JOB\tSTATE\tBACKEND\tQUEUE\tRUNNING/MIN\tGEN\tRESTARTS\tAGE\tWAITING"
	if allNamespaces {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		line := strings.Join([]string{
			strings.ToLower(r.Kind) + "/" + r.Name, orNone(string(r.State)), orNone(r.Backend), orNone(r.Queue),
			membersSummary(r.Roles), fmt.Sprint(r.Generation), restartsSummary(r), duration.HumanDuration(r.Age), orNone(firstLine(waiting(r))),
		}, "\t")
		if allNamespaces {
			line = r.Namespace + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// renderJob writes one job in detail: its gang, then a line per role.
func renderJob(w io.Writer, r jobReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t%s/%s\n", r.Kind+":", r.Namespace, r.Name)
	fmt.Fprintf(tw, "State:\t%s\n", orNone(string(r.State)))
	gang := orNone(r.Backend)
	if r.PodGroup != "" {
		gang += fmt.Sprintf(" (PodGroup %s: %s)", r.Name, r.PodGroup)
	}
	fmt.Fprintf(tw, "Backend:\t%s\n", gang)
	fmt.Fprintf(tw, "Queue:\t%s\n", orNone(r.Queue))
	fmt.Fprintf(tw, "Gang:\tminMember %d, generation %d, %d restarts, %d disruptions\n", r.MinMember, r.Generation, r.Restarts, r.Disruptions)
	if why := waiting(r); why != "" {
		fmt.Fprintf(tw, "Waiting:\t%s\n", why)
	}
	fmt.Fprintf(tw, "Age:\t%s\n", duration.HumanDuration(r.Age))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ROLE\tREPLICAS\tMIN\tRUNNING\tPENDING\tSUCCEEDED\tFAILED\tWHY NOT RUNNING")
	for _, rr := range r.Roles {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", rr.Role, rr.Replicas, rr.Min, rr.Running, rr.Pending, rr.Succeeded, rr.Failed, orNone(rr.Why))
	}
	return tw.Flush()
}

// membersSummary is "Master 1/1, Worker 2/3": members running against the
// gang's minimum of each role.
func membersSummary(roles []roleReport) string {
	parts := make([]string, 0, len(roles))
	for _, rr := range roles {
		parts = append(parts, fmt.Sprintf("%s %d/%d", rr.Role, rr.Running, rr.Min))
	}
	return strings.Join(parts, ", ")
}

func restartsSummary(r jobReport) string {
	if r.Disruptions == 0 {
		return fmt.Sprint(r.Restarts)
	}
	return fmt.Sprintf("%d (+%d disruptions)", r.Restarts, r.Disruptions)
}

// waiting is why the job waits: its GangScheduled condition, else the
// first role whose members do not run while the job should.
func waiting(r jobReport) string {
	if r.Waiting != "" {
		return r.Waiting
	}
	for _, rr := range r.Roles {
		if rr.Why != "" {
			return rr.Role + ": " + rr.Why
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
