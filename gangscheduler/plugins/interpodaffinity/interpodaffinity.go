// Package interpodaffinity is kube-scheduler's InterPodAffinity plugin for
// gangs: required pod affinity and anti-affinity as a filter, in both
// directions (a pod's own terms, and the anti-affinity of the pods already
// on nodes toward it), and the preferred terms as a score, with
// kube-scheduler's meaning (api.PodRules parses the terms as it does).
//
// It is gang-aware: members placed earlier in the same session count as
// pods on their nodes, so the members of one gang are judged against each
// other ("one worker per host" holds within the gang), which kube-scheduler
// with a coscheduling plugin cannot do: it places one pod at a time, and
// only bound pods count.
//
// How it stays cheap, and right beside the per-class predicate cache:
//
//   - the filter is a dynamic predicate: it runs on every check and is
//     never cached, since placements change its answers;
//   - a pod's own terms are answered from counts per topology domain, kept
//     per class (the terms are part of the class signature): computed once
//     per class and session from the pods on nodes, then brought up to date
//     with the session's placements and their undoing when the class is
//     next asked about (a log of the session's changes, replayed from where
//     the class left it), so a placement costs nothing for the classes no
//     one asks about again;
//   - the terms of the pods on nodes (the symmetric rules: their required
//     anti-affinity toward the pod, their preferences for it) are indexed
//     by the topology domain their pod is in, and kept up to date at every
//     placement; a node is checked against the terms of its own domains
//     only, and each term is matched against a pod's labels once per
//     search;
//   - a pod without pod affinity terms, in a cluster where no pod has
//     any, costs one check of two fields.
package interpodaffinity

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/internal/podindex"
)

// Name is the plugin's name.
const Name = "interpodaffinity"

// Reasons, worded as kube-scheduler's.
const (
	ReasonAffinity             framework.Reason = "node(s) didn't match pod affinity rules"
	ReasonAntiAffinity         framework.Reason = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffinity framework.Reason = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// Config configures the plugin.
type Config struct {
	// HardPodAffinityWeight is what a pod's required affinity adds to the
	// score of the nodes in the domain of the pods it selects, for those
	// pods (a symmetric preference): kube-scheduler's
	// hardPodAffinityWeight, default 1; 0 turns it off.
	HardPodAffinityWeight *int64 `json:"hardPodAffinityWeight,omitempty"`
}

type plugin struct {
	hardWeight int64
}

// New returns the plugin.
func New(cfg Config) framework.Plugin {
	w := int64(1)
	if cfg.HardPodAffinityWeight != nil {
		w = *cfg.HardPodAffinityWeight
	}
	return &plugin{hardWeight: w}
}

func (p *plugin) Name() string { return Name }

// state is the plugin's accounting for one session.
type state struct {
	ssn        *framework.Session
	hardWeight int64
	// byClass are the counts of each class's own terms.
	byClass map[classKey]*ownCounts
	// log is every placement (+1) and undoing (-1) of the session, for
	// ownCounts to catch up with.
	log []change
	// nodeOf is where the session placed a task: a task undone by Discard
	// no longer names its node when the event comes.
	nodeOf map[api.TaskID]*api.NodeInfo
	// anti and prefs index the terms of the pods on nodes by the domain
	// of their pod: required anti-affinity, and the terms that score
	// (required affinity at hardWeight, preferred terms at their weight).
	anti, prefs termIndex

	// pods finds the pods on nodes a term may select.
	pods *podindex.Index

	// The task of the current search, its class's counts, and its memo of
	// which indexed terms select it.
	memoTask   *api.TaskInfo
	memoCounts *ownCounts
	memo       map[*api.AffinityTerm]bool
}

type classKey struct {
	cls *framework.Class
	// labels are the task's, for a task whose selectors merge some of its
	// labels (matchLabelKeys): its terms differ within its class.
	labels uint64
}

type change struct {
	task *api.TaskInfo
	node *api.NodeInfo
	v    int64
}

// ownCounts are, for the pods of one class, what kube-scheduler's
// PreFilter and PreScore count for one pod from its own terms.
type ownCounts struct {
	rules *api.PodRules
	// affinity counts, per domain of each required affinity term, the
	// running pods that match all the required affinity terms, and
	// standInAffinity the stand-ins (api.NodeInfo.AddStandIn): they
	// do not run yet, so the filter asks the terms with them and without
	// them, as kube-scheduler does.
	affinity, standInAffinity domains
	// anti counts, per domain of each required anti-affinity term, the
	// pods it matches.
	anti domains
	// score is the weight of the preferred terms per domain of the pods
	// they match (negative for anti-affinity).
	score domains
	// applied is how much of the session's log the counts include.
	applied int
}

func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.Honour(Name, api.FeaturePodAffinity, api.FeaturePodAntiAffinity)
	s := &state{
		ssn: ssn, hardWeight: p.hardWeight,
		byClass: map[classKey]*ownCounts{},
		nodeOf:  map[api.TaskID]*api.NodeInfo{},
		pods:    podindex.New(ssn.NodesTaken),
	}
	sensitive := false
	for _, n := range ssn.NodesTaken() {
		for t := range n.Occupants() {
			if t.Rules.HasPodAffinity() {
				s.index(t, n, 1)
				sensitive = sensitive || len(t.Rules.AntiAffinity) > 0
			}
		}
	}
	for _, job := range ssn.Jobs {
		for _, t := range job.Tasks {
			sensitive = sensitive || t.Status == api.Pending && t.Rules != nil && len(t.Rules.AntiAffinity) > 0
		}
	}
	// Whether a pod fits then depends on its labels, which its class
	// leaves out (see framework.FitKey).
	if sensitive {
		ssn.SetLabelSensitive()
	}
	ssn.AddPredicateFnFor(s.filter, func(t *api.TaskInfo) bool {
		return sensitive || t.Rules != nil && len(t.Rules.Affinity)+len(t.Rules.AntiAffinity) > 0
	})
	ssn.AddEventHandler(framework.EventHandler{AllocateFunc: s.allocate, DeallocateFunc: s.deallocate})
	ssn.AddPreference(framework.Preference{
		Name:      Name,
		Weight:    2, // kube-scheduler's default profile
		Applies:   s.scores,
		Score:     s.score,
		Normalize: normalizeMinMax,
	})
}

// filter is kube-scheduler's InterPodAffinity Filter.
func (s *state) filter(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	r := task.Rules
	own := r.HasPodAffinity() && len(r.Affinity)+len(r.AntiAffinity) > 0
	if !own && s.anti.empty() {
		return framework.Fit
	}
	nodeLabels := node.Node.Labels
	if own {
		c := s.countsOf(task)
		for i := range r.Affinity {
			if _, ok := nodeLabels[r.Affinity[i].TopologyKey]; !ok {
				return framework.Unfit(ReasonAffinity) // every topology key must be on the node
			}
		}
		if len(r.Affinity) > 0 && !s.affinityMet(task, c, nodeLabels) {
			return framework.Unfit(ReasonAffinity)
		}
		for i := range r.AntiAffinity {
			key := r.AntiAffinity[i].TopologyKey
			if value, ok := nodeLabels[key]; ok && c.anti.get(key, value) > 0 {
				return framework.Unfit(ReasonAntiAffinity)
			}
		}
	}
	if s.anti.selects(s, task, nodeLabels) {
		return framework.Unfit(ReasonExistingAntiAffinity)
	}
	return framework.Fit
}

// scores reports whether the score applies to task: it has preferred
// terms, or some pod on a node has terms that may prefer it.
func (s *state) scores(task *api.TaskInfo) bool {
	r := task.Rules
	return !s.prefs.empty() || (r != nil && len(r.PreferredAffinity)+len(r.PreferredAntiAffinity) > 0)
}

// score is kube-scheduler's InterPodAffinity Score: what the task's
// preferred terms and the terms of the pods on nodes give the domains the
// node is in.
func (s *state) score(task *api.TaskInfo, node *api.NodeInfo) int64 {
	var total int64
	if r := task.Rules; r != nil && len(r.PreferredAffinity)+len(r.PreferredAntiAffinity) > 0 {
		total += s.countsOf(task).score.sumAt(node.Node.Labels)
	}
	total += s.prefs.weightAt(s, task, node.Node.Labels)
	return total
}

// normalizeMinMax is kube-scheduler's InterPodAffinity NormalizeScore:
// scaled between the lowest and the highest score; all 0 when they are
// equal.
func normalizeMinMax(_ *api.TaskInfo, _ []*api.NodeInfo, scores []int64) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, v := range scores {
		lo, hi = min(lo, v), max(hi, v)
	}
	for i, v := range scores {
		if hi > lo {
			scores[i] = framework.MaxPreferenceScore * (v - lo) / (hi - lo)
		} else {
			scores[i] = 0
		}
	}
}

// countsOf returns the counts of task's class, computed on first ask and
// brought up to date with the session's log.
func (s *state) countsOf(task *api.TaskInfo) *ownCounts {
	if task == s.memoTask && s.memoCounts != nil {
		return s.catchUp(s.memoCounts)
	}
	key := classKey{cls: s.ssn.ClassOf(task)}
	if key.cls == nil || task.Rules.LabelKeys {
		key.labels = task.LabelsHash()
	}
	c := s.byClass[key]
	if c == nil || key.cls == nil {
		c = s.newCounts(task.Rules)
		if key.cls != nil {
			s.byClass[key] = c
		}
	}
	s.setMemo(task)
	s.memoCounts = c
	return s.catchUp(c)
}

func (s *state) catchUp(c *ownCounts) *ownCounts {
	for _, ch := range s.log[c.applied:] {
		s.count(c, ch.task, ch.node, ch.v)
	}
	c.applied = len(s.log)
	return c
}

// newCounts counts the pods on nodes under the terms of r, each term
// visiting only the pods its selector may select (podindex).
func (s *state) newCounts(r *api.PodRules) *ownCounts {
	c := &ownCounts{
		rules: r, affinity: newDomains(), standInAffinity: newDomains(), anti: newDomains(), score: newDomains(),
		applied: len(s.log),
	}
	if len(r.Affinity) > 0 {
		for _, p := range s.pods.Candidates(r.Affinity[0].Selector) {
			if matchesAll(r.Affinity, p.Task.Pod, s.ssn.Namespaces[p.Task.Namespace]) {
				c.addAffinity(p.Task, p.Node, 1)
			}
		}
	}
	each := func(t *api.AffinityTerm, d *domains, v int64) {
		for _, p := range s.pods.Candidates(t.Selector) {
			if t.Matches(p.Task.Pod, s.ssn.Namespaces[p.Task.Namespace]) {
				d.addAt(p.Node, t.TopologyKey, v)
			}
		}
	}
	for i := range r.AntiAffinity {
		each(&r.AntiAffinity[i], &c.anti, 1)
	}
	for i := range r.PreferredAffinity {
		each(&r.PreferredAffinity[i].AffinityTerm, &c.score, int64(r.PreferredAffinity[i].Weight))
	}
	for i := range r.PreferredAntiAffinity {
		each(&r.PreferredAntiAffinity[i].AffinityTerm, &c.score, -int64(r.PreferredAntiAffinity[i].Weight))
	}
	return c
}

// count counts pod e, on node n, v times under the terms of c.
func (s *state) count(c *ownCounts, e *api.TaskInfo, n *api.NodeInfo, v int64) {
	r := c.rules
	nsLabels := s.ssn.Namespaces[e.Namespace]
	if len(r.Affinity) > 0 && matchesAll(r.Affinity, e.Pod, nsLabels) {
		c.addAffinity(e, n, v)
	}
	for i := range r.AntiAffinity {
		if r.AntiAffinity[i].Matches(e.Pod, nsLabels) {
			c.anti.addAt(n, r.AntiAffinity[i].TopologyKey, v)
		}
	}
	for i := range r.PreferredAffinity {
		if t := &r.PreferredAffinity[i]; t.Matches(e.Pod, nsLabels) {
			c.score.addAt(n, t.TopologyKey, int64(t.Weight)*v)
		}
	}
	for i := range r.PreferredAntiAffinity {
		if t := &r.PreferredAntiAffinity[i]; t.Matches(e.Pod, nsLabels) {
			c.score.addAt(n, t.TopologyKey, -int64(t.Weight)*v)
		}
	}
}

// addAffinity counts pod e, on node n, v times under every required
// affinity term, all of which it matches.
func (c *ownCounts) addAffinity(e *api.TaskInfo, n *api.NodeInfo, v int64) {
	d := &c.affinity
	if e.StandIn {
		d = &c.standInAffinity
	}
	for i := range c.rules.Affinity {
		d.addAt(n, c.rules.Affinity[i].TopologyKey, v)
	}
}

// affinityMet is kube-scheduler's required pod affinity check, asked with
// the nominated pods and without them: met where a running pod matching
// every term is in each term's domain of the node; or, for the first pod
// of a group with affinity to itself (no running pod anywhere matches the
// terms, and the pod does), anywhere while no nominated pod matches
// either, and beside one otherwise.
func (s *state) affinityMet(task *api.TaskInfo, c *ownCounts, nodeLabels map[string]string) bool {
	in := func(d *domains) bool {
		for i := range task.Rules.Affinity {
			if d.get(task.Rules.Affinity[i].TopologyKey, nodeLabels[task.Rules.Affinity[i].TopologyKey]) <= 0 {
				return false
			}
		}
		return true
	}
	if in(&c.affinity) {
		return true
	}
	if !c.affinity.empty() || !matchesAll(task.Rules.Affinity, task.Pod, s.ssn.Namespaces[task.Namespace]) {
		return false
	}
	return c.standInAffinity.empty() || in(&c.standInAffinity)
}

func matchesAll(terms []api.AffinityTerm, pod *corev1.Pod, nsLabels labels.Set) bool {
	for i := range terms {
		if !terms[i].Matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

// index adds (v 1) or removes (v -1) the terms of task, on node n, to the
// symmetric indexes.
func (s *state) index(task *api.TaskInfo, n *api.NodeInfo, v int64) {
	r := task.Rules
	for i := range r.AntiAffinity {
		s.anti.add(n, &r.AntiAffinity[i], task, 1, v)
	}
	if s.hardWeight > 0 {
		for i := range r.Affinity {
			s.prefs.add(n, &r.Affinity[i], task, s.hardWeight, v)
		}
	}
	for i := range r.PreferredAffinity {
		s.prefs.add(n, &r.PreferredAffinity[i].AffinityTerm, task, int64(r.PreferredAffinity[i].Weight), v)
	}
	for i := range r.PreferredAntiAffinity {
		s.prefs.add(n, &r.PreferredAntiAffinity[i].AffinityTerm, task, -int64(r.PreferredAntiAffinity[i].Weight), v)
	}
}

// setMemo makes task the task of the current search.
func (s *state) setMemo(task *api.TaskInfo) {
	if task != s.memoTask {
		s.memoTask, s.memoCounts, s.memo = task, nil, nil
	}
}

// selectsTask reports whether term selects task, memoised for the task of
// the current search.
func (s *state) selectsTask(term *api.AffinityTerm, task *api.TaskInfo) bool {
	s.setMemo(task)
	if s.memo == nil {
		s.memo = map[*api.AffinityTerm]bool{}
	}
	m, ok := s.memo[term]
	if !ok {
		m = term.Matches(task.Pod, s.ssn.Namespaces[task.Namespace])
		s.memo[term] = m
	}
	return m
}

// allocate counts a task the session placed, as kube-scheduler's AddPod
// does for a nominated pod.
func (s *state) allocate(task *api.TaskInfo) {
	n := s.ssn.Nodes[task.NodeName]
	if n == nil {
		return
	}
	s.nodeOf[task.UID] = n
	s.record(task, n, 1)
}

// deallocate undoes allocate.
func (s *state) deallocate(task *api.TaskInfo) {
	n := s.nodeOf[task.UID]
	if n == nil {
		n = s.ssn.Nodes[task.NodeName] // an eviction: the task still names its node
	}
	if n == nil {
		return
	}
	s.record(task, n, -1)
}

func (s *state) record(task *api.TaskInfo, n *api.NodeInfo, v int64) {
	s.log = append(s.log, change{task: task, node: n, v: v})
	if v > 0 {
		s.pods.Add(task, n)
	} else {
		s.pods.Remove(task)
	}
	if task.Rules.HasPodAffinity() {
		s.index(task, n, v)
		s.memo = nil // a term was added or removed
	}
}
