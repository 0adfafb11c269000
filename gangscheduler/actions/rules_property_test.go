package actions_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/internal/placementcheck"
)

// randomRulesCluster is randomCluster with the rules that relate pods to
// each other: nodes in zones (some in none), running pods with app labels
// and some with anti-affinity, and gangs whose roles carry, at random,
// one-per-node anti-affinity among the role's members, affinity to the
// pods of an app by zone, a topology spread constraint over zones or
// hosts, preferred terms, and scheduling gates on some members. A role's
// rules select the role's own members (job and role), as a manifest's
// would, so that the members are alike and the order they are placed in
// does not matter to the rules. It draws from its own random stream.
func randomRulesCluster(seed uint64, maxNodes, maxJobs int) cluster {
	c := randomCluster(seed, maxNodes, maxJobs)
	r := rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, seed+7))
	pick := r.IntN
	zones := []string{"z0", "z1", "z2"}
	for _, n := range c.nodes {
		if pick(6) != 0 {
			n.Labels[corev1.LabelTopologyZone] = zones[pick(len(zones))]
		}
	}
	apps := []string{"a", "b"}
	for _, p := range c.pods {
		if p.Namespace == "other" && p.Spec.NodeName != "" && pick(2) == 0 {
			// Move some running pods into the gangs' namespace, where their
			// labels and terms count.
			p.Namespace = "ns"
			p.Labels = map[string]string{"app": apps[pick(len(apps))]}
			if pick(4) == 0 {
				w := st.PodWrapper{Pod: *p}
				w.PodAntiAffinity([]string{corev1.LabelHostname, corev1.LabelTopologyZone}[pick(2)], "app", "x")
				*p = w.Pod
			}
		}
	}
	for _, p := range c.pods {
		job, ok := st.JobOf(p)
		if !ok {
			continue
		}
		name := strings.TrimPrefix(string(job), "ns/")
		role := p.Annotations["volcano.sh/task-spec"]
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["job"], p.Labels["role"] = name, role
		if pick(6) == 0 {
			p.Labels["app"] = "x"
		}
	}
	// Rules per (job, role), the same for every member of the role.
	type rules struct {
		onePerNode, affinity, spread, anywhere, preferred bool
		spreadKey                                         string
		maxSkew                                           int32
	}
	byRole := map[string]rules{}
	for _, p := range c.pods {
		job, ok := st.JobOf(p)
		if !ok || p.Spec.NodeName != "" {
			continue
		}
		key := string(job) + "/" + p.Labels["role"]
		rr, seen := byRole[key]
		if !seen {
			rr = rules{
				onePerNode: pick(3) == 0, affinity: pick(6) == 0, spread: pick(3) == 0, anywhere: pick(3) == 0, preferred: pick(4) == 0,
				spreadKey: []string{corev1.LabelTopologyZone, corev1.LabelHostname}[pick(2)], maxSkew: int32(1 + pick(2)),
			}
			byRole[key] = rr
		}
		w := st.PodWrapper{Pod: *p}
		self := []string{"job", p.Labels["job"], "role", p.Labels["role"]}
		if rr.onePerNode {
			w.PodAntiAffinity(corev1.LabelHostname, self...)
		}
		if rr.affinity {
			w.PodAffinity(corev1.LabelTopologyZone, "app", apps[0])
		}
		if rr.spread {
			when := corev1.DoNotSchedule
			if rr.anywhere {
				when = corev1.ScheduleAnyway
			}
			w.Spread(rr.maxSkew, rr.spreadKey, when, nil, self...)
		}
		if rr.preferred {
			w.PreferredPodAffinity(int32(1+pick(100)), corev1.LabelTopologyZone, "app", apps[pick(len(apps))])
		}
		if pick(10) == 0 {
			w.Gate("example.com/hold")
		}
		*p = w.Pod
	}
	return c
}

// rulesStats counts what a run exercised.
type rulesStats struct {
	placedWithRules, gatedWaiting, refusedForRules int
}

// checkRules runs the pipeline with the default plugins and judges every
// placement with placementcheck, the independent referee, against the
// cluster as it ends (each member as if placed last, every other there);
// gated pods must never be placed; and checkInvariants holds (no partial
// gang, no over-commit). The same input decides the same.
func checkRules(t *testing.T, c cluster, seed uint64) rulesStats {
	t.Helper()
	ssn := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...)
	decisions := ssn.Bindings()
	checkInvariants(t, c, decisions)

	state := placementcheck.State{Nodes: c.nodes}
	placed := map[string]*corev1.Pod{}
	for _, p := range c.pods {
		if p.Spec.NodeName != "" {
			state.Pods = append(state.Pods, p)
		}
	}
	var stats rulesStats
	for _, d := range decisions {
		p := d.Task.Pod.DeepCopy()
		p.Spec.NodeName = d.Node
		placed[p.Namespace+"/"+p.Name] = p
		state.Pods = append(state.Pods, p)
		if len(p.Spec.SchedulingGates) > 0 {
			t.Errorf("seed %d: gated pod %s placed", seed, d.Task.Key())
		}
	}
	for key, p := range placed {
		for _, v := range placementcheck.Check(state, p) {
			t.Errorf("seed %d: %s on %s breaks %s: %s", seed, key, p.Spec.NodeName, v.Rule, v.Detail)
		}
		if p.Spec.Affinity != nil && (p.Spec.Affinity.PodAffinity != nil || p.Spec.Affinity.PodAntiAffinity != nil) || len(p.Spec.TopologySpreadConstraints) > 0 {
			stats.placedWithRules++
		}
	}
	for _, f := range ssn.Unschedulable() {
		switch {
		case f.Reason == "SchedulingGated":
			stats.gatedWaiting++
		case strings.Contains(f.Message, "affinity") || strings.Contains(f.Message, "spread"):
			stats.refusedForRules++
		}
	}
	if again := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...).Bindings(); !sameDecisions(decisions, again) {
		t.Errorf("seed %d: a second run decided differently", seed)
	}
	return stats
}

// TestRulesRandomized: no placement ever breaks a required rule, no gated
// pod is ever placed, no gang is ever left partial, over many random
// clusters; and the generator reaches placements with rules, gangs refused
// for them, and gangs waiting for gates, so that a scheduler that ignored
// the rules, or placed nothing, could not pass.
func TestRulesRandomized(t *testing.T) {
	var total rulesStats
	for seed := range uint64(300) {
		var s rulesStats
		t.Run(fmt.Sprint(seed), func(t *testing.T) { s = checkRules(t, randomRulesCluster(seed, 12, 10), seed) })
		total.placedWithRules += s.placedWithRules
		total.gatedWaiting += s.gatedWaiting
		total.refusedForRules += s.refusedForRules
	}
	t.Logf("over 300 clusters: %+v", total)
	if total.placedWithRules < 300 || total.gatedWaiting < 20 || total.refusedForRules < 20 {
		t.Errorf("generator too one-sided: %+v", total)
	}
}

// FuzzRules: go test -fuzz=FuzzRules ./gangscheduler/actions/
// The seed corpus runs with every go test.
func FuzzRules(f *testing.F) {
	for _, s := range []struct {
		seed        uint64
		nodes, jobs uint8
	}{{1, 2, 3}, {2, 6, 8}, {3, 12, 12}, {4, 20, 6}} {
		f.Add(s.seed, s.nodes, s.jobs)
	}
	f.Fuzz(func(t *testing.T, seed uint64, nodes, jobs uint8) {
		checkRules(t, randomRulesCluster(seed, int(nodes%24), int(jobs%24)), seed)
	})
}
