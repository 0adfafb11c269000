package actions_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// randomPreemptCluster is randomPipelineCluster with the room partly taken
// by whole running gangs of random priority (0 to 2, as the pending ones),
// a third of them with a minMember below their size,
// some of whose pods are already terminating, so that pending gangs often
// need preemption. It draws from its own random stream.
func randomPreemptCluster(seed uint64, maxNodes, maxJobs int) cluster {
	c := randomPipelineCluster(seed, maxNodes, maxJobs)
	r := rand.New(rand.NewPCG(seed^0x6a09e667f3bcc908, seed+2))
	pick := r.IntN
	free := map[string]*api.Resource{}
	for _, n := range c.nodes {
		a := api.NewResource(n.Status.Allocatable)
		free[n.Name] = &a
	}
	for _, p := range c.pods {
		if occupies(p) && free[p.Spec.NodeName] != nil {
			req := api.PodRequests(p)
			free[p.Spec.NodeName].Sub(&req)
		}
	}
	for k := range 1 + pick(4) {
		name := fmt.Sprintf("running-%d", k)
		var pods []*corev1.Pod
		taken := map[string]*api.Resource{}
		for i := range 1 + pick(4) {
			pw := st.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Job(name).Role("worker").
				Req(fmt.Sprintf("%dm", 100*(1+pick(40))), "1Gi").Phase(corev1.PodRunning)
			if g := pick(3); g > 0 {
				pw.GPU(int64(g))
			}
			req := api.PodRequests(pw.Obj())
			for _, n := range c.nodes { // first fit, so the gang is placed whole or not at all
				room := free[n.Name].Clone()
				if t := taken[n.Name]; t != nil {
					room.Sub(t)
				}
				if req.LessEqual(&room) {
					if taken[n.Name] == nil {
						taken[n.Name] = &api.Resource{}
					}
					taken[n.Name].Add(&req)
					pw.Node(n.Name)
					break
				}
			}
			if pw.Spec.NodeName == "" {
				pods = nil
				break
			}
			if pick(8) == 0 {
				pw.Terminating()
			}
			pods = append(pods, pw.Obj())
		}
		if len(pods) == 0 {
			continue
		}
		for n, t := range taken {
			free[n].Sub(t)
		}
		c.pods = append(c.pods, pods...)
		queue := []api.QueueID{api.DefaultQueue, api.DefaultQueue, "research"}[pick(3)]
		// A third of them elastic: a minimum below their size.
		minMember := int32(len(pods))
		if pick(3) == 0 {
			minMember = int32(1 + pick(len(pods)))
		}
		c.jobs = append(c.jobs, withPhase(st.MakeJob("ns", name).MinMember(minMember).Priority(int32(pick(3))).Queue(queue).Obj(), api.JobRunning))
	}
	return c
}

// checkPreemptPipeline runs enqueue, preempt, allocate, backfill with the
// queue-share plugins and checks, from the input objects and the session's
// output:
//   - checkInvariants, with the evicted pods still counted on their nodes
//     (they hold them until they are gone): no node over-committed, no gang
//     partially committed;
//   - every evicted pod was running or bound, not terminating, and of a
//     gang; each victim gang loses every such pod, or only members above
//     its minMember (never part of a gang at its minimum, never below it);
//   - every victim has a strictly lower PodGroup priority than the gang that
//     preempted it (named by the eviction's reason), in the same queue;
//   - no trial residue, and the same input gives the same evictions.
//
// It returns the number of victim gangs.
func checkPreemptPipeline(t *testing.T, c cluster, seed uint64) int {
	t.Helper()
	ssn := run(t, c, plugins.WithQueueShare(), preemptPipeline()...)
	checkInvariants(t, c, ssn.Bindings())
	checkNoResidue(t, c, ssn, seed)

	jobs := map[api.JobID]*api.JobInfo{}
	for _, j := range c.jobs {
		jobs[j.UID] = j
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range c.pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	evictedOf := map[api.JobID]map[string]bool{}
	for _, e := range ssn.Evictions() {
		key := e.Task.Key()
		p, ok := pods[key]
		if !ok || !occupies(p) || p.DeletionTimestamp != nil {
			t.Errorf("seed %d: evicted %s, which was not running or bound (or is unknown, or already terminating)", seed, key)
			continue
		}
		id, ok := st.JobOf(p)
		victim := jobs[id]
		if !ok || victim == nil {
			t.Errorf("seed %d: evicted %s of no gang", seed, key)
			continue
		}
		if evictedOf[id] == nil {
			evictedOf[id] = map[string]bool{}
		}
		if evictedOf[id][key] {
			t.Errorf("seed %d: %s evicted twice", seed, key)
		}
		evictedOf[id][key] = true
		preemptor := jobs[api.JobID(strings.TrimPrefix(e.Reason, "Preempted by gang "))]
		switch {
		case preemptor == nil:
			t.Errorf("seed %d: eviction of %s names no known preemptor: %q", seed, key, e.Reason)
		case preemptor.Priority <= victim.Priority:
			t.Errorf("seed %d: %s (priority %d) preempted %s of priority %d", seed, preemptor.UID, preemptor.Priority, id, victim.Priority)
		case preemptor.Queue != victim.Queue:
			t.Errorf("seed %d: %s of queue %s preempted %s of queue %s", seed, preemptor.UID, preemptor.Queue, id, victim.Queue)
		}
	}
	var surplusOnly int
	for id, got := range evictedOf {
		var left []string
		for _, p := range c.pods {
			key := p.Namespace + "/" + p.Name
			if j, ok := st.JobOf(p); ok && j == id && occupies(p) && p.DeletionTimestamp == nil && !got[key] {
				left = append(left, key)
			}
		}
		if len(left) > 0 && int32(len(left)) < jobs[id].MinMember {
			t.Errorf("seed %d: gang %s (minMember %d) cut below its minimum: %v left running", seed, id, jobs[id].MinMember, left)
		}
		if len(left) > 0 {
			surplusOnly++
		}
	}
	if surplusOnly > 0 {
		t.Logf("seed %d: %d victim gangs lost only members above their minimum", seed, surplusOnly)
	}

	keys := func(es []framework.Eviction) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Task.Key()+"@"+e.Node)
		}
		return out
	}
	if again := run(t, c, plugins.WithQueueShare(), preemptPipeline()...).Evictions(); !slices.Equal(keys(ssn.Evictions()), keys(again)) {
		t.Errorf("seed %d: a second run evicted differently", seed)
	}
	return len(evictedOf)
}

// TestPreemptRandomized checks preemption's invariants over the pipeline
// test's random clusters, and that the generator makes preemption happen,
// so that an action that never evicts could not pass.
func TestPreemptRandomized(t *testing.T) {
	var victims, clustersWithVictims int
	for seed := range uint64(300) {
		var n int
		t.Run(fmt.Sprint(seed), func(t *testing.T) { n = checkPreemptPipeline(t, randomPreemptCluster(seed, 12, 10), seed) })
		victims += n
		if n > 0 {
			clustersWithVictims++
		}
	}
	t.Logf("over 300 clusters: %d victim gangs in %d clusters", victims, clustersWithVictims)
	if clustersWithVictims < 25 {
		t.Errorf("generator too one-sided: victims in only %d clusters", clustersWithVictims)
	}
}

// FuzzPreemptPipeline: go test -fuzz=FuzzPreemptPipeline ./gangscheduler/actions/
// The seed corpus runs with every go test.
func FuzzPreemptPipeline(f *testing.F) {
	for _, s := range []struct {
		seed        uint64
		nodes, jobs uint8
	}{{1, 1, 2}, {2, 3, 5}, {3, 8, 8}, {4, 16, 16}, {5, 2, 12}, {6, 12, 3}, {7, 20, 20}} {
		f.Add(s.seed, s.nodes, s.jobs)
	}
	f.Fuzz(func(t *testing.T, seed uint64, nodes, jobs uint8) {
		checkPreemptPipeline(t, randomPreemptCluster(seed, int(nodes%24), int(jobs%24)), seed)
	})
}

// nextCycle is c after ssn's decisions took effect: the bound pods on
// their nodes and running (their nominated node cleared, as the API
// server clears it on binding), the gangs that got pods Running, the
// admitted ones Inqueue, those whose admission was revoked Pending, the
// nominations written; of the pods ssn evicted, those gone says are gone,
// the others terminating with the scheduler's preemption mark.
func nextCycle(c cluster, ssn *framework.Session, gone func(key string) bool) cluster {
	bound := map[string]string{}
	for _, d := range ssn.Bindings() {
		bound[d.Task.Key()] = d.Node
	}
	nominated := map[string]string{}
	for _, d := range ssn.Nominations() {
		nominated[d.Task.Key()] = d.Node
	}
	evicted := map[string]bool{}
	for _, e := range ssn.Evictions() {
		evicted[e.Task.Key()] = true
	}
	next := c
	next.pods = nil
	placedJobs := map[api.JobID]bool{}
	for _, p := range c.pods {
		key := p.Namespace + "/" + p.Name
		switch {
		case evicted[key] && gone(key):
			continue
		case evicted[key]:
			p = p.DeepCopy()
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler})
		case bound[key] != "":
			p = p.DeepCopy()
			p.Spec.NodeName, p.Status.Phase, p.Status.NominatedNodeName = bound[key], corev1.PodRunning, ""
			if id, ok := st.JobOf(p); ok {
				placedJobs[id] = true
			}
		default:
			if node, ok := nominated[key]; ok {
				p = p.DeepCopy()
				p.Status.NominatedNodeName = node
			}
		}
		next.pods = append(next.pods, p)
	}
	admitted := map[api.JobID]bool{}
	for _, id := range ssn.Admitted() {
		admitted[id] = true
	}
	revoked := map[api.JobID]bool{}
	for _, id := range ssn.Revoked() {
		revoked[id] = true
	}
	next.jobs = nil
	for _, j := range c.jobs {
		cp := *j
		switch {
		case placedJobs[j.UID]:
			cp.Phase = api.JobRunning
		case admitted[j.UID]:
			cp.Phase = api.JobInqueue
		case revoked[j.UID]:
			cp.Phase = api.JobPending
		}
		next.jobs = append(next.jobs, &cp)
	}
	return next
}

// A gang preempts once: over four cycles on random clusters, its
// victims leave one cycle apart (some gone, the others still
// terminating, then all gone), and it evicts nothing more, in the third
// cycle or the fourth, unless in between a gang of at least its priority
// took room (which it may), or a partial gang was completed (partial
// gangs go first of all, see Allocate). The nominations a cycle writes
// are on the pods of the next (nextCycle). Each of these made it preempt
// again before: a gang of lower priority took the room the first victims
// left, or the queue's admission budget a lower-priority gang held kept
// the preemptor out while that gang took the room, or allocate, placing a
// master first, found no room for the workers the preemptor's minimal
// gang needs, or another gang took a host port the reservation did not
// keep, or a lower-priority gang that itself waited for leaving pods kept
// the budget, or, once the room was free, a gang of lower priority in a
// queue that allocate walks first took it (seed 2271: now the nominated
// preemptor is placed by preempt). Beyond these 4000 seeds one case is
// known (seed 29290 of 30000): the queue's deserved share, computed anew
// each cycle, shrank between the cycles, and the preemptor preempted for
// the difference.
//
// The second variant gives every pod a label app=a, b or c, and a third of
// the pending ones a required anti-affinity, by node, toward one of them:
// before the reservation counted the preemptor's members on their nodes
// (api.NodeInfo.AddStandIn), a pod the preemptor's anti-affinity selected
// (or whose own selected the preemptor) took a node of its room, and the
// preemptor preempted it or others again (seed 2477).
func TestPreemptOnce(t *testing.T) {
	for _, variant := range []struct {
		name  string
		rules func(c cluster, seed uint64)
	}{
		{name: "resources and ports", rules: func(cluster, uint64) {}},
		{name: "with pod anti-affinity", rules: withAntiAffinity},
	} {
		t.Run(variant.name, func(t *testing.T) {
			checked := preemptOnce(t, 4000, variant.rules)
			t.Logf("%d clusters with a preemption", checked)
			if checked < 25 {
				t.Errorf("generator too one-sided: preemption in only %d clusters", checked)
			}
		})
	}
}

// withAntiAffinity labels every pod of c app=a, b or c, and gives a third
// of the pending ones a required anti-affinity by node toward one of those.
// Running pods get no terms: they were placed without them.
func withAntiAffinity(c cluster, seed uint64) {
	r := rand.New(rand.NewPCG(seed^0xbb67ae8584caa73b, seed+3))
	apps := []string{"a", "b", "c"}
	for i, p := range c.pods {
		p = p.DeepCopy()
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["app"] = apps[r.IntN(len(apps))]
		if p.Spec.NodeName == "" && r.IntN(3) == 0 {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					st.AffinityTerm(corev1.LabelHostname, "app", apps[r.IntN(len(apps))]),
				},
			}}
		}
		c.pods[i] = p
	}
}

// preemptOnce is TestPreemptOnce over seeds, the rules of each cluster
// added by rules; it returns how many clusters had a preemption.
func preemptOnce(t *testing.T, seeds uint64, rules func(c cluster, seed uint64)) int {
	var checked int
	for seed := range seeds {
		c := randomPreemptCluster(seed, 12, 10)
		rules(c, seed)
		ssn1 := run(t, c, plugins.WithQueueShare(), preemptPipeline()...)
		preemptors := map[api.JobID]bool{}
		for _, e := range ssn1.Evictions() {
			if id, ok := strings.CutPrefix(e.Reason, "Preempted by gang "); ok {
				preemptors[api.JobID(id)] = true
			}
		}
		if len(preemptors) == 0 {
			continue
		}
		checked++
		r := rand.New(rand.NewPCG(seed, 7))
		half := map[string]bool{}
		c2 := nextCycle(c, ssn1, func(key string) bool {
			if _, ok := half[key]; !ok {
				half[key] = r.IntN(2) == 0
			}
			return half[key]
		})
		ssn2 := run(t, c2, plugins.WithQueueShare(), preemptPipeline()...)
		c3 := nextCycle(c2, ssn2, func(string) bool { return true })
		// Every pod still terminating from the first cycle is gone too.
		c3.pods = slices.DeleteFunc(c3.pods, func(p *corev1.Pod) bool {
			key := p.Namespace + "/" + p.Name
			_, was := half[key]
			return was && p.DeletionTimestamp != nil
		})
		ssn3 := run(t, c3, plugins.WithQueueShare(), preemptPipeline()...)
		// One more cycle: a preemptor that fits once its victims are gone
		// may be placed only now, and must be.
		ssn4 := run(t, nextCycle(c3, ssn3, func(string) bool { return true }), plugins.WithQueueShare(), preemptPipeline()...)

		priority := map[api.JobID]int32{}
		for _, j := range c.jobs {
			priority[j.UID] = j.Priority
		}
		// tookRoom: in the cycles between, a gang other than p of at least
		// its priority, or a partial one, bound something.
		tookRoom := func(p api.JobID, between ...*framework.Session) bool {
			for _, ssn := range between {
				for _, d := range ssn.Bindings() {
					if d.Task.Job != p && (priority[d.Task.Job] >= priority[p] || ssn.Jobs[d.Task.Job].HoldsNodes()) {
						return true
					}
				}
			}
			return false
		}
		for _, c := range []struct {
			cycle   int
			ssn     *framework.Session
			between []*framework.Session
		}{{3, ssn3, []*framework.Session{ssn2}}, {4, ssn4, []*framework.Session{ssn2, ssn3}}} {
			for _, e := range c.ssn.Evictions() {
				id, ok := strings.CutPrefix(e.Reason, "Preempted by gang ")
				if p := api.JobID(id); ok && preemptors[p] && !tookRoom(p, c.between...) {
					var bound []map[api.JobID]map[string]string
					for _, ssn := range c.between {
						bound = append(bound, placed(ssn))
					}
					t.Errorf("seed %d: %s preempted again (%s) in cycle %d, its victims gone; the cycles before bound %v",
						seed, p, e.Task.Key(), c.cycle, bound)
				}
			}
		}
	}
	return checked
}
