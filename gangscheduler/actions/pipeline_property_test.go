package actions_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/proportion"
)

// randomPipelineCluster is randomCluster with what the queue-share
// pipeline reads: queue weights and capabilities, PodGroup phases, pods
// that request nothing, single- and multi-member best-effort jobs, and jobs
// whose pods do not exist yet (minResources only). It draws from its own
// random stream, so randomCluster's clusters stay as they were.
func randomPipelineCluster(seed uint64, maxNodes, maxJobs int) cluster {
	c := randomCluster(seed, maxNodes, maxJobs)
	r := rand.New(rand.NewPCG(seed^0x2545f4914f6cdd1d, seed+1))
	pick := r.IntN
	gpus := func(n int) map[corev1.ResourceName]int64 { return map[corev1.ResourceName]int64{st.GPU: int64(n)} }

	def, research := st.MakeQueue(api.DefaultQueue), st.MakeQueue("research")
	def.Weight, research.Weight = int32(1+pick(4)), int32(1+pick(4))
	if pick(2) == 0 {
		research.Capability = api.Resource{MilliCPU: int64(1000 * (1 + pick(20))), Scalars: gpus(1 + pick(8))}
	}
	if pick(4) == 0 {
		def.Capability = api.Resource{MilliCPU: int64(1000 * (1 + pick(30)))}
	}
	if pick(6) == 0 {
		research.Capability.Pods = int64(1 + pick(6))
	}
	c.queues = []*api.QueueInfo{def, research, {Name: "frozen", Weight: 1, State: api.QueueClosed}}
	queueNames := []api.QueueID{api.DefaultQueue, api.DefaultQueue, "research", "research", "frozen"}

	for _, j := range c.jobs {
		j.Phase = []api.JobPhase{api.JobPending, api.JobPending, api.JobPending, "", api.JobInqueue, api.JobRunning}[pick(6)]
	}
	for _, p := range c.pods {
		if _, ok := st.JobOf(p); ok && pendingPod(p) && pick(6) == 0 {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
			}
		}
	}
	for k := range pick(4) {
		name := fmt.Sprintf("be-%d", k)
		members := 1 + pick(3)
		min := int32(1)
		if pick(2) == 0 {
			min = int32(members) // a best-effort gang
		}
		c.jobs = append(c.jobs, withPhase(st.MakeJob("ns", name).MinMember(min).Queue(queueNames[pick(5)]).Obj(), api.JobPending))
		for i := range members {
			p := st.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Job(name)
			if pick(4) == 0 {
				p.NodeSelector("pool", "cpu")
			}
			c.pods = append(c.pods, p.Obj())
		}
	}
	for k := range pick(3) {
		j := st.MakeJob("ns", fmt.Sprintf("nopods-%d", k)).MinMember(int32(1 + pick(4))).Queue(queueNames[pick(5)]).Obj()
		j.MinResources = api.Resource{MilliCPU: int64(500 * (1 + pick(20))), Scalars: gpus(pick(6))}
		c.jobs = append(c.jobs, withPhase(j, api.JobPending))
	}
	return c
}

// pipelineStats counts what a run exercised, so that the randomized test
// can show its generator reaches every path.
type pipelineStats struct {
	admitted, refused, capabilityRefusals, shareRefusals, zeroRequestPlaced, placed int
}

// checkPipeline runs enqueue+allocate+backfill with the queue-share plugins
// and checks, from the input objects and the decisions:
//   - checkInvariants: no node over-committed, predicates honoured, no gang
//     partially committed, only pending pods placed once;
//   - no queue exceeds its capability in a dimension it was given anything
//     of, nor its deserved share (the proportion plugin's, for this input);
//   - only admitted jobs get pods that request anything; jobs admitted
//     before the session stay admitted;
//   - enqueue's trial placements leave no trace: every node holds what ran
//     before plus the decisions, and no task is left allocated unbound;
//   - the same input gives the same decisions.
func checkPipeline(t *testing.T, c cluster, seed uint64) pipelineStats {
	t.Helper()
	ssn := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...)
	decisions := ssn.Bindings()
	checkInvariants(t, c, decisions)

	jobs := map[api.JobID]*api.JobInfo{}
	for _, j := range c.jobs {
		jobs[j.UID] = j
	}
	admittedNow := map[api.JobID]bool{}
	for _, id := range ssn.Admitted() {
		admittedNow[id] = true
	}
	// Admitted before: as a session that runs no action sees it (a gang
	// whose PodGroup says Running with no member on a node is not).
	unrun := run(t, c, plugins.WithQueueShare())
	admittedBefore := func(j *api.JobInfo) bool { return unrun.IsAdmitted(unrun.Jobs[j.UID]) }

	// What each queue held before, and was given.
	held, given := map[api.QueueID]*api.Resource{}, map[api.QueueID]*api.Resource{}
	for _, q := range c.queues {
		held[q.Name], given[q.Name] = &api.Resource{}, &api.Resource{}
	}
	for _, p := range c.pods {
		if id, ok := st.JobOf(p); ok && occupies(p) && jobs[id] != nil && held[jobs[id].Queue] != nil {
			r := api.PodRequests(p)
			held[jobs[id].Queue].Add(&r)
		}
	}
	var stats pipelineStats
	for _, d := range decisions {
		j := jobs[d.Task.Job]
		if j == nil {
			continue // checkInvariants reported it
		}
		given[j.Queue].Add(&d.Task.Resreq)
		stats.placed++
		if actions.RequestsNothing(d.Task) {
			stats.zeroRequestPlaced++
		} else if !admittedBefore(j) && !admittedNow[j.UID] {
			t.Errorf("seed %d: %s placed for job %s, which was never admitted", seed, d.Task.Key(), j.UID)
		}
		if !admittedBefore(j) && !admittedNow[j.UID] {
			t.Errorf("seed %d: job %s got pods but is not admitted", seed, j.UID)
		}
	}
	for _, j := range c.jobs {
		if admittedBefore(j) && !ssn.IsAdmitted(ssn.Jobs[j.UID]) {
			t.Errorf("seed %d: job %s lost its admission", seed, j.UID)
		}
	}

	_, attrs := proportion.Attrs(run(t, c, plugins.WithQueueShare()))
	get := func(r *api.Resource, d string) int64 {
		switch d {
		case "cpu":
			return r.MilliCPU
		case "memory":
			return r.Memory
		case "pods":
			return r.Pods
		}
		return r.Scalar(st.GPU)
	}
	for _, q := range c.queues {
		for _, d := range []string{"cpu", "memory", "gpu", "pods"} {
			g, h := get(given[q.Name], d), get(held[q.Name], d)
			if g <= 0 {
				continue
			}
			if capd := get(&q.Capability, d); capd > 0 && h+g > capd {
				t.Errorf("seed %d: queue %s holds %d %s after placing %d, capability %d", seed, q.Name, h+g, d, g, capd)
			}
			if deserved := get(&attrs[q.Name].Deserved, d); d != "pods" && h+g > deserved {
				t.Errorf("seed %d: queue %s holds %d %s after placing %d, deserves %d", seed, q.Name, h+g, d, g, deserved)
			}
		}
	}

	checkNoResidue(t, c, ssn, seed)

	again := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...).Bindings()
	if !sameDecisions(decisions, again) {
		t.Errorf("seed %d: a second run decided differently", seed)
	}

	for _, j := range c.jobs {
		if admittedBefore(j) {
			continue
		}
		if admittedNow[j.UID] {
			stats.admitted++
			continue
		}
		stats.refused++
		msg := ssn.Unschedulable()[j.UID].Message
		if strings.Contains(msg, "capability") {
			stats.capabilityRefusals++
		}
		if strings.Contains(msg, " share:") {
			stats.shareRefusals++
		}
	}
	return stats
}

// checkNoResidue checks that trial placements and evictions leave no
// trace: every node holds what ran before (evicted pods too: they hold
// their node until they are gone) plus the decisions, and no task is left
// allocated unbound.
func checkNoResidue(t *testing.T, c cluster, ssn *framework.Session, seed uint64) {
	t.Helper()
	decisions := ssn.Bindings()
	want := map[string]*api.Resource{}
	for _, n := range c.nodes {
		want[n.Name] = &api.Resource{}
	}
	for _, p := range c.pods {
		if occupies(p) && want[p.Spec.NodeName] != nil {
			r := api.PodRequests(p)
			want[p.Spec.NodeName].Add(&r)
		}
	}
	for _, d := range decisions {
		want[d.Node].Add(&d.Task.Resreq)
	}
	for _, n := range ssn.NodeList {
		if !n.Used.Equal(want[n.Name]) {
			t.Errorf("seed %d: node %s uses %v, want %v: a trial placement was left behind", seed, n.Name, n.Used, *want[n.Name])
		}
	}
	bound := map[api.TaskID]bool{}
	for _, d := range decisions {
		bound[d.Task.UID] = true
	}
	for _, j := range ssn.Jobs {
		for _, task := range j.Tasks {
			if task.Status == api.Allocated && !bound[task.UID] {
				t.Errorf("seed %d: task %s is allocated but not in the decisions", seed, task.Key())
			}
		}
	}
}

func sameDecisions(a, b []framework.Decision) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Task.Key() != b[i].Task.Key() || a[i].Node != b[i].Node {
			return false
		}
	}
	return true
}

// TestPipelineRandomized checks the pipeline's invariants over many random
// clusters, and that the generator reaches admissions, refusals for
// capability and share, and best-effort placements, so that a pipeline
// that admits or places nothing could not pass.
func TestPipelineRandomized(t *testing.T) {
	var total pipelineStats
	for seed := range uint64(300) {
		var s pipelineStats
		t.Run(fmt.Sprint(seed), func(t *testing.T) { s = checkPipeline(t, randomPipelineCluster(seed, 12, 10), seed) })
		total.admitted += s.admitted
		total.refused += s.refused
		total.capabilityRefusals += s.capabilityRefusals
		total.shareRefusals += s.shareRefusals
		total.zeroRequestPlaced += s.zeroRequestPlaced
		total.placed += s.placed
	}
	t.Logf("over 300 clusters: %+v", total)
	if total.admitted < 100 || total.refused < 100 || total.capabilityRefusals < 10 || total.shareRefusals < 10 ||
		total.zeroRequestPlaced < 50 || total.placed < 500 {
		t.Errorf("generator too one-sided: %+v", total)
	}
}

// FuzzPipeline: go test -fuzz=FuzzPipeline ./gangscheduler/actions/
// The seed corpus runs with every go test.
func FuzzPipeline(f *testing.F) {
	for _, s := range []struct {
		seed        uint64
		nodes, jobs uint8
	}{{1, 1, 2}, {2, 3, 5}, {3, 8, 8}, {4, 16, 16}, {5, 2, 12}, {6, 12, 3}, {7, 20, 20}} {
		f.Add(s.seed, s.nodes, s.jobs)
	}
	f.Fuzz(func(t *testing.T, seed uint64, nodes, jobs uint8) {
		checkPipeline(t, randomPipelineCluster(seed, int(nodes%24), int(jobs%24)), seed)
	})
}
