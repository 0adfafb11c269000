package soak

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ml/troupe/test/soak/check"
)

// What the soak counts, as the report names it.
const (
	cJobsCreated    = "jobs created"
	cJobsDeleted    = "jobs deleted"
	cJobsFinished   = "jobs finished by the driver (pods completed)"
	cFailRetryable  = "members failed, retryable (exit 137)"
	cFailPermanent  = "members failed, permanent (exit 1)"
	cFailLanded     = "of those, failures kwok carried out"
	cEvictions      = "members evicted (Eviction API)"
	cEvictRefused   = "evictions refused"
	cCordons        = "nodes cordoned"
	cUncordons      = "nodes uncordoned"
	cNodeDeletes    = "nodes deleted"
	cNodeAdds       = "nodes added back"
	cActionErrors   = "driver actions that failed (conflict, gone)"
	cKillOperator   = "SIGKILL of the leading operator"
	cKillScheduler  = "SIGKILL of the leading scheduler"
	cKillBoth       = "SIGKILL of both leaders at once"
	cAimedOperator  = "of those, aimed at a gang restart"
	cAimedScheduler = "of those, aimed at a bind"
	cPauseOperator  = "SIGSTOP past the lease, then SIGCONT: operator"
	cPauseScheduler = "SIGSTOP past the lease, then SIGCONT: scheduler"
	cNoLeader       = "process faults skipped: no leader at that moment"
	cExitsLease     = "replica exits after losing the lease"
	cExitsOther     = "replica exits for other reasons"
	cStarts         = "process starts (both components, all replicas)"
	cSettleDeleted  = "jobs deleted in the quiet period (failed, pods left running)"
	cSettleFinished = "jobs finished by the driver in the quiet period"
)

// tally is the soak's counters, safe for concurrent use.
type tally struct {
	mu        sync.Mutex
	counts    map[string]int
	failovers map[string][]time.Duration
	exits     []string
	kinds     map[string]int
	outcomes  map[string]int
}

func newTally() *tally {
	return &tally{counts: map[string]int{}, failovers: map[string][]time.Duration{}, kinds: map[string]int{}, outcomes: map[string]int{}}
}

func (t *tally) add(key string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[key] += n
}

func (t *tally) get(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[key]
}

func (t *tally) failover(component string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failovers[component] = append(t.failovers[component], d)
}

func (t *tally) exit(what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.exits = append(t.exits, what)
}

// report is what a soak found.
type report struct {
	Command    string
	Seed       uint64
	Start      time.Time
	Churn      time.Duration
	Settle     time.Duration
	Setup      time.Duration
	Options    *Options
	Violations []check.Violation
	Stats      check.Stats
	Tally      *tally
	// Err is a failure of the harness itself (not of Troupe).
	Err error
}

func (r *report) passed() bool { return len(r.Violations) == 0 && r.Err == nil }

// summary is the report's one line.
func (r *report) summary() string {
	t := r.Tally
	verdict := "PASS"
	if !r.passed() {
		verdict = "FAIL"
	}
	kills := t.get(cKillOperator) + t.get(cKillScheduler) + 2*t.get(cKillBoth)
	faults := t.get(cFailRetryable) + t.get(cFailPermanent) + t.get(cEvictions) + t.get(cCordons) + t.get(cNodeDeletes)
	line := fmt.Sprintf("soak: %s seed=%d: %s churn + %s quiet; %d jobs created, %d deleted; %d leader SIGKILLs, %d SIGSTOPs; %d faults; %d violations; longest partial gang %s (%s with a scheduler leading); longest wait with room %s with a scheduler leading (%s)",
		verdict, r.Seed, r.Churn.Round(time.Second), r.Settle.Round(time.Second), t.get(cJobsCreated), t.get(cJobsDeleted)+t.get(cSettleDeleted),
		kills, t.get(cPauseOperator)+t.get(cPauseScheduler), faults, len(r.Violations),
		r.Stats.LongestPartial.Round(100*time.Millisecond), r.Stats.LongestPartialLed.Round(100*time.Millisecond),
		r.Stats.Waits.LongestLed.Round(100*time.Millisecond), orDash(r.Stats.Waits.Job))
	if r.Err != nil {
		line += "; harness error: " + r.Err.Error()
	}
	return line
}

// markdown writes the report.
func (r *report) markdown(w io.Writer) {
	t := r.Tally
	t.mu.Lock()
	defer t.mu.Unlock()
	o := r.Options
	fmt.Fprintf(w, "## Chaos soak: seed %d\n\n", r.Seed)
	fmt.Fprintf(w, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(w, "- Started %s; setup %s, churn %s, quiet period %s.\n", r.Start.UTC().Format("2006-01-02 15:04 MST"),
		r.Setup.Round(time.Second), r.Churn.Round(time.Second), r.Settle.Round(time.Second))
	fmt.Fprintf(w, "- Cluster: %d CPU nodes, %d GPU nodes (kwok); 2 operators and 2 troupe-schedulers with leader election (lease %s, renew deadline %s, retry %s); scheduler partial-gang grace %s, checked with a margin of %s.\n",
		o.CPUNodes, o.GPUNodes, o.LeaseDuration, o.RenewDeadline, o.RetryPeriod, o.PartialGrace, o.PartialMargin)
	fmt.Fprintf(w, "- Driver: an action every %s on average, at most %d jobs; a process fault every %s on average.\n\n", o.ActionEvery, o.MaxJobs, o.ChaosEvery)

	if len(r.Violations) == 0 && r.Err == nil {
		fmt.Fprintf(w, "**0 invariant violations.**\n\n")
	} else {
		fmt.Fprintf(w, "**%d invariant violations** (seed %d):\n\n", len(r.Violations), r.Seed)
		for _, v := range r.Violations {
			fmt.Fprintf(w, "- `%s` %s, %s: %s\n", v.Time.UTC().Format("15:04:05.000"), v.Invariant, v.Subject, v.Message)
		}
		if r.Err != nil {
			fmt.Fprintf(w, "- harness error: %v\n", r.Err)
		}
		fmt.Fprintln(w)
	}

	section := func(title string, keys ...string) {
		fmt.Fprintf(w, "| %s | count |\n| --- | ---: |\n", title)
		for _, k := range keys {
			fmt.Fprintf(w, "| %s | %d |\n", k, t.counts[k])
		}
		fmt.Fprintln(w)
	}
	section("jobs", cJobsCreated, cJobsDeleted, cJobsFinished, cSettleFinished, cSettleDeleted)
	if len(t.kinds) > 0 {
		fmt.Fprintf(w, "Jobs created by kind and policy: %s. Jobs at the end: %s.\n\n", joinCounts(t.kinds), joinCounts(t.outcomes))
	}
	section("faults", cFailRetryable, cFailPermanent, cFailLanded, cEvictions, cEvictRefused, cCordons, cUncordons, cNodeDeletes, cNodeAdds, cActionErrors)
	section("processes", cKillOperator, cKillScheduler, cKillBoth, cAimedOperator, cAimedScheduler, cPauseOperator, cPauseScheduler, cNoLeader, cExitsLease, cExitsOther, cStarts)
	fmt.Fprintf(w, "Leader failover (from the SIGKILL or SIGSTOP of the leader to the Lease taken over): operator %s; scheduler %s.\n\n",
		durations(t.failovers["operator"]), durations(t.failovers["scheduler"]))
	s := r.Stats
	fmt.Fprintf(w, "Partial gangs: %d times a gang was partial; the longest %s, %s of it with a scheduler leading (%s; limit %s).\n\n",
		s.PartialEpisodes, s.LongestPartial.Round(100*time.Millisecond), s.LongestPartialLed.Round(100*time.Millisecond), orDash(s.LongestPartialGang), o.PartialGrace+o.PartialMargin)
	ws := s.Waits
	fmt.Fprintf(w, "Waiting with room (docs/reliability.md): %d times the members a gang waited for fitted the free room node by node; the longest %s, %s of it with a scheduler leading (%s). With no other gang wanting room and every placement fitting, the longest %s with a scheduler leading (%s; limit %s).\n\n",
		ws.Episodes, ws.Longest.Round(100*time.Millisecond), ws.LongestLed.Round(100*time.Millisecond), orDash(ws.Job),
		ws.LongestAloneLed.Round(100*time.Millisecond), orDash(ws.AloneJob), o.WaitLimit)
	fmt.Fprintf(w, "Gang restarts: %d gang-restarted jobs (deleted ones as last seen) stored %d restarts and %d disruptions; checked against the breaks of their members: %d retryable failures, %d permanent failures, %d disruptions. %d more members failed after their gang's restart was decided (or the job's verdict) and rightly did not count; %d members of elastic jobs were replaced alone, owing no restart.\n\n",
		s.GangJobs, s.GangRestarts, s.GangDisruptions, s.RetryableFailures, s.PermanentFailures, s.Disruptions, s.FailuresAfterDecision, s.ElasticReplacements)
	if len(s.BreakCauses) > 0 {
		fmt.Fprintf(w, "What those breaks were: %s.\n\n", joinCounts(s.BreakCauses))
	}
	if len(t.exits) > 0 {
		fmt.Fprintf(w, "Replica exits the soak did not cause directly:\n\n")
		for _, e := range t.exits {
			fmt.Fprintf(w, "- %s\n", e)
		}
		fmt.Fprintln(w)
	}
}

func joinCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// durations summarises failover times: count, median, max.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%d measured, median %s, max %s", len(s), s[len(s)/2].Round(100*time.Millisecond), s[len(s)-1].Round(100*time.Millisecond))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
