package check

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Final runs the checks of the end, once the churn has stopped and the
// cluster had its quiet period:
//   - every job there is Running, Succeeded, or Failed with a reason
//     (none stuck);
//   - every job the driver created exists, unless the driver deleted it
//     or the operator did after its ttlSecondsAfterFinished (none lost);
//   - every PodGroup belongs to a job that exists and has not finished
//     (none leaked);
//   - the gang restart and disruption counts of every gang-restarted job,
//     those deleted on the way included (as last seen), match the breaks
//     of its members (restartCounts). They are checked at the end, not
//     as each job goes, so that every pod event of a job has arrived
//     (the watches of pods and of jobs are separate streams).
func (c *Checker) Final(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uid := range slices.Sorted(maps.Keys(c.jobs)) {
		j := c.jobs[uid]
		_, expected := c.expected[uid]
		if j.seen && j.cur.GangRestart {
			c.restartCounts(t, uid, j)
		}
		switch {
		case !j.seen:
			continue
		case j.gone:
			ttlExpired := j.cur.TTL && j.cur.Finished()
			if expected && !c.deletedByDriver[uid] && !ttlExpired {
				c.violate(t, "lost/"+uid, LostJob, j.cur.Key.String(), "the job is gone, but the driver did not delete it and no TTL applied")
			}
			continue
		}
		if !j.cur.Running && !j.cur.Succeeded && !j.cur.Failed {
			c.violate(t, "stuck/"+uid, StuckJob, j.cur.Key.String(), "neither Running, Succeeded nor Failed after the quiet period; "+c.podSummary(uid))
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(c.expected)) {
		if j := c.jobs[uid]; (j == nil || !j.seen) && !c.deletedByDriver[uid] {
			c.violate(t, "lost/"+uid, LostJob, c.expected[uid].String(), "created by the driver, never seen by the watch")
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[key]
		j := c.jobs[g.OwnerUID]
		switch {
		case j == nil || !j.seen || j.gone:
			c.violate(t, "leak/"+key, LeakedPodGroup, "PodGroup "+key, "its job is gone")
		case j.cur.Finished():
			c.violate(t, "leak/"+key, LeakedPodGroup, "PodGroup "+key, fmt.Sprintf("its job %s has finished", j.cur.Key))
		}
	}
}

// restartCounts checks status.gang of a gang-restarted job against the
// breaks of its members the watch saw.
//
// What counts: a break of a member of generation g (it failed; it was
// deleted while Pending or Running, by an eviction, a preemption, the
// scheduler's reclaim or anyone; its node was deleted) counts for g if it
// was stored before the operator stored its decision to restart g (the
// first job write with status.gang.generation g+1) and before the job's
// verdict. A break stored later landed on a gang already being torn down
// (or a finished job) and is rightly ignored by the operator. A pod that
// was being deleted before it failed does not break: it was torn down.
// Each pod breaks once; what follows is consequence.
//
// Then, for every generation g below the job's final one, the operator
// restarted the gang once, on one of g's breaks, which it counts as a
// restart (a retryable failure) or a disruption (anything else). When g
// had breaks of both kinds either count is right, so the check is:
//   - every restarted generation had a retryable break (a permanent
//     failure alone must fail the job, not restart it);
//   - restarts lie between the generations that had only retryable
//     failures and those that had any; disruptions likewise;
//   - restarts + disruptions = the final generation: each restart was
//     counted once.
//
// And, for a job that is still there, a break in the final generation
// must have been acted on: the job has a verdict (failed: a permanent
// failure, or a budget used up). A deleted job's last generation may have
// had breaks it was deleted before acting on.
func (c *Checker) restartCounts(t time.Time, uid string, j *jobRecord) {
	final, st := j.cur.Generation, j.cur
	c.stats.GangJobs++
	c.stats.GangRestarts += int(j.cur.Restarts)
	c.stats.GangDisruptions += int(j.cur.Disruptions)
	kinds := map[int32]breakKind{}
	what := map[int32][]string{}
	for _, b := range j.breaks {
		if next, ok := j.genRV[b.gen+1]; (ok && b.rv >= next) || (j.finishedRV != 0 && b.rv >= j.finishedRV) {
			if b.failed {
				c.stats.FailuresAfterDecision++
			}
			continue
		}
		if j.gone && b.gen == final {
			continue
		}
		if b.replaced {
			// An elastic member replaced alone owes no restart while the
			// gang kept its minimums without it. Any other member replaced
			// alone (a new pod of it in its generation) is a gang that
			// runs on without a member it lost: the soak's jobs restart on
			// every trigger (the default restartOn). The break still
			// counts as one the gang was owed a restart for, below.
			if b.elasticOK {
				c.stats.ElasticReplacements++
				continue
			}
			c.violate(t, fmt.Sprintf("alone/%s/%s/%d", uid, b.pod, b.gen), ReplacedAlone, st.Key.String(), fmt.Sprintf(
				"%s (generation %d) %s and was replaced alone, but %s: the gang was owed a restart", b.pod, b.gen, b.what, b.elasticWhy))
		}
		k := b.kind(j.cur.RestartPolicy)
		if c.stats.BreakCauses == nil {
			c.stats.BreakCauses = map[string]int{}
		}
		c.stats.BreakCauses[b.cause()]++
		switch {
		case k == disruption:
			c.stats.Disruptions++
		case k&retryable != 0:
			c.stats.RetryableFailures++
		default:
			c.stats.PermanentFailures++
		}
		kinds[b.gen] |= k
		what[b.gen] = append(what[b.gen], fmt.Sprintf("%s %s (%s, rv %d)", b.pod, b.what, k, b.rv))
	}
	var minR, maxR, minD, maxD int32
	var problems []string
	for g := int32(0); g < final; g++ {
		k := kinds[g] & (retryable | disruption)
		if k == 0 {
			problems = append(problems, fmt.Sprintf("generation %d was restarted (at rv %d; the operator said: %s) without a retryable break stored before it (breaks: %s)",
				g, j.genRV[g+1], cmp.Or(j.restartCause[g+1], "unknown"), orNone(what[g])))
			continue
		}
		if k == retryable {
			minR++
		}
		if k&retryable != 0 {
			maxR++
		}
		if k == disruption {
			minD++
		}
		if k&disruption != 0 {
			maxD++
		}
	}
	if st.Restarts < minR || st.Restarts > maxR {
		problems = append(problems, fmt.Sprintf("status.gang.restarts is %d, want %s", st.Restarts, span(minR, maxR)))
	}
	if st.Disruptions < minD || st.Disruptions > maxD {
		problems = append(problems, fmt.Sprintf("status.gang.disruptions is %d, want %s", st.Disruptions, span(minD, maxD)))
	}
	if st.Restarts+st.Disruptions != final {
		problems = append(problems, fmt.Sprintf("restarts %d + disruptions %d != generation %d", st.Restarts, st.Disruptions, final))
	}
	if len(problems) > 0 {
		var gens []string
		for g := int32(0); g <= final; g++ {
			gens = append(gens, fmt.Sprintf("gen %d: %s", g, orNone(what[g])))
		}
		c.violate(t, "restarts/"+uid, RestartCount, st.Key.String(), strings.Join(problems, "; ")+"; breaks by generation: "+strings.Join(gens, " | "))
	}
	if !j.gone && kinds[final] != 0 && !st.Finished() {
		c.violate(t, "unhandled/"+uid, UnhandledBreak, st.Key.String(), fmt.Sprintf(
			"generation %d (the last) had breaks the operator has not acted on after the quiet period: %s; %s", final, orNone(what[final]), c.podSummary(uid)))
	}
}

func span(lo, hi int32) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// podSummary lists a job's pods and their states, for a violation.
func (c *Checker) podSummary(jobUID string) string {
	var parts []string
	for _, r := range c.pods {
		p := r.cur
		if p.JobUID != jobUID {
			continue
		}
		s := fmt.Sprintf("%s gen %d %s", p.Name, p.Generation, p.Phase)
		if p.Node != "" {
			s += " on " + p.Node
		}
		if p.Terminating {
			s += " terminating"
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	j := c.jobs[jobUID]
	st := ""
	if j != nil {
		st = fmt.Sprintf("status: running=%v succeeded=%v failed=%v (%s), gang generation %d, restarts %d, disruptions %d; ",
			j.cur.Running, j.cur.Succeeded, j.cur.Failed, j.cur.Reason, j.cur.Generation, j.cur.Restarts, j.cur.Disruptions)
	}
	return st + "pods: " + orNone(parts)
}
