// Package podtopologyspread is kube-scheduler's PodTopologySpread plugin
// for gangs: DoNotSchedule constraints as a filter (the skew of matching
// pods across the eligible domains stays within maxSkew, with minDomains,
// nodeAffinityPolicy, nodeTaintsPolicy and matchLabelKeys as kube-scheduler
// reads them), and ScheduleAnyway constraints as a score.
//
// It is gang-aware: the members a session has placed count as pods on
// their nodes, so "four workers, at most one more per host than on any
// other" holds among the members of one gang placed in one decision.
//
// Counts are kept per class (the constraints, node affinity and
// tolerations are in the class signature; the namespace is the job's),
// computed once per class and session from the pods on nodes, and brought
// up to date with the session's placements when the class is next asked
// about. Which nodes are eligible for a constraint depends only on the
// pod's fields, so it is computed once per class signature, whatever the
// job. A pod without constraints costs one check of one field.
package podtopologyspread

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/internal/podindex"
)

// Name is the plugin's name.
const Name = "podtopologyspread"

// Reasons, worded as kube-scheduler's.
const (
	ReasonConstraintsNotMatch framework.Reason = "node(s) didn't match pod topology spread constraints"
	ReasonNodeLabelNotMatch   framework.Reason = "node(s) didn't match pod topology spread constraints (missing required label)"
)

// Config configures the plugin.
type Config struct {
	// TaintTolerationComparisonOperators lets Lt/Gt tolerations match when
	// nodeTaintsPolicy is Honor, as the predicates plugin's option of the
	// same name does.
	TaintTolerationComparisonOperators bool `json:"taintTolerationComparisonOperators,omitempty"`
}

type plugin struct{ cfg Config }

// New returns the plugin.
func New(cfg Config) framework.Plugin { return &plugin{cfg: cfg} }

func (p *plugin) Name() string { return Name }

type state struct {
	ssn *framework.Session
	cfg Config
	// eligible are the eligible domains of each class signature.
	eligible map[string]*eligibility
	byClass  map[classKey]*spreadCounts
	// log is the session's placements (+1) and their undoing (-1).
	log    []change
	nodeOf map[api.TaskID]*api.NodeInfo
	// pods finds the pods on nodes a selector may select.
	pods *podindex.Index

	// The task of the last check, its counts, and which of its
	// constraints select the task itself.
	lastTask   *api.TaskInfo
	lastCounts *spreadCounts
	lastSelf   []int
}

type classKey struct {
	cls    *framework.Class
	labels uint64 // for pods whose selectors merge their own labels
}

type change struct {
	task *api.TaskInfo
	node *api.NodeInfo
	v    int
}

// eligibility is, for the pods of one class signature, which nodes count
// for each constraint: those with every constraint's topology key that
// pass the constraint's node inclusion policies.
type eligibility struct {
	// nodes[i] says, per node Index, whether the node counts for
	// constraint i.
	nodes [][]bool
	// domains[i] are the values of constraint i's key on its nodes.
	domains []map[string]bool
}

// spreadCounts are the matching pods per domain of each constraint, for
// the pods of one class.
type spreadCounts struct {
	rules     *api.PodRules
	namespace string
	elig      *eligibility
	// counts[i] are the matching pods per eligible domain of constraint i.
	counts []map[string]int
	// standIns[i] are the stand-ins among counts[i] (the nominated pods
	// of the room kept for a gang, api.NodeInfo.AddStandIn), nil while
	// there are none: they do not run yet, so the filter asks each rule
	// with them and without them, as kube-scheduler does.
	standIns []map[string]int
	// minimum[i] is the least of counts[i] over its eligible domains, and
	// minimumRunning[i] the least without the stand-ins; recomputed
	// when stale.
	minimum, minimumRunning []int
	stale                   bool
	applied                 int
}

func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.Honour(Name, api.FeatureTopologySpread)
	s := &state{
		ssn: ssn, cfg: p.cfg, eligible: map[string]*eligibility{}, byClass: map[classKey]*spreadCounts{},
		nodeOf: map[api.TaskID]*api.NodeInfo{}, pods: podindex.New(ssn.NodesTaken),
	}
	ssn.AddPredicateFnFor(s.filter, func(t *api.TaskInfo) bool { return t.Rules.HasSpread() && hasDoNotSchedule(t.Rules) })
	ssn.AddEventHandler(framework.EventHandler{AllocateFunc: s.allocate, DeallocateFunc: s.deallocate})
	ssn.AddPreference(framework.Preference{
		Name:      Name,
		Weight:    2, // kube-scheduler's default profile
		Applies:   scheduleAnyway,
		Score:     func(*api.TaskInfo, *api.NodeInfo) int64 { return 0 }, // scored in Normalize: it needs the feasible nodes
		Normalize: s.scoreFeasible,
	})
}

// filter is kube-scheduler's PodTopologySpread Filter over the
// DoNotSchedule constraints.
func (s *state) filter(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	r := task.Rules
	if !r.HasSpread() || !hasDoNotSchedule(r) {
		return framework.Fit
	}
	if task != s.lastTask {
		s.lastTask, s.lastCounts = task, s.countsOf(task)
		s.lastSelf = s.lastSelf[:0]
		for i := range r.Spread {
			self := 0
			if r.Spread[i].Selector.Matches(labels.Set(task.Pod.Labels)) {
				self = 1
			}
			s.lastSelf = append(s.lastSelf, self)
		}
	}
	c := s.catchUp(s.lastCounts)
	for i := range r.Spread {
		con := &r.Spread[i]
		if !con.DoNotSchedule {
			continue
		}
		value, ok := node.Node.Labels[con.TopologyKey]
		if !ok {
			return framework.Unfit(ReasonNodeLabelNotMatch)
		}
		if c.counts[i][value]+s.lastSelf[i]-c.globalMin(i, false) > int(con.MaxSkew) {
			return framework.Unfit(ReasonConstraintsNotMatch)
		}
		if c.standIns != nil && len(c.standIns[i]) > 0 &&
			c.counts[i][value]-c.standIns[i][value]+s.lastSelf[i]-c.globalMin(i, true) > int(con.MaxSkew) {
			return framework.Unfit(ReasonConstraintsNotMatch)
		}
	}
	return framework.Fit
}

func hasDoNotSchedule(r *api.PodRules) bool {
	for i := range r.Spread {
		if r.Spread[i].DoNotSchedule {
			return true
		}
	}
	return false
}

func scheduleAnyway(task *api.TaskInfo) bool {
	if !task.Rules.HasSpread() {
		return false
	}
	for i := range task.Rules.Spread {
		if !task.Rules.Spread[i].DoNotSchedule {
			return true
		}
	}
	return false
}

// globalMin is kube-scheduler's minMatchNum: the least matching count over
// the constraint's eligible domains, or 0 while there are fewer of them
// than minDomains; of the running pods alone (no stand-in) if
// running.
func (c *spreadCounts) globalMin(i int, running bool) int {
	if c.stale {
		for j := range c.minimum {
			m, mr := math.MaxInt, math.MaxInt
			for d := range c.elig.domains[j] {
				m = min(m, c.counts[j][d])
				if c.standIns != nil {
					mr = min(mr, c.counts[j][d]-c.standIns[j][d])
				}
			}
			c.minimum[j], c.minimumRunning[j] = m, mr
		}
		c.stale = false
	}
	if len(c.elig.domains[i]) < int(c.rules.Spread[i].MinDomains) {
		return 0
	}
	if running {
		return c.minimumRunning[i]
	}
	return c.minimum[i]
}

// countsOf returns task's class counts, computed on first ask and brought
// up to date with the session's log.
func (s *state) countsOf(task *api.TaskInfo) *spreadCounts {
	key := classKey{cls: s.ssn.ClassOf(task)}
	if key.cls == nil || task.Rules.LabelKeys {
		key.labels = task.LabelsHash()
	}
	c := s.byClass[key]
	if c != nil && key.cls != nil {
		return s.catchUp(c)
	}
	elig := s.eligibilityOf(task)
	c = &spreadCounts{
		rules: task.Rules, namespace: task.Namespace, elig: elig,
		counts:  make([]map[string]int, len(task.Rules.Spread)),
		minimum: make([]int, len(task.Rules.Spread)), minimumRunning: make([]int, len(task.Rules.Spread)),
		stale: true, applied: len(s.log),
	}
	for i := range c.counts {
		c.counts[i] = map[string]int{}
		// Each constraint visits only the pods its selector may select.
		for _, p := range s.pods.Candidates(task.Rules.Spread[i].Selector) {
			c.countFor(i, p.Task, p.Node, 1)
		}
	}
	if key.cls != nil {
		s.byClass[key] = c
	}
	return c
}

// catchUp applies the session's changes since c was last brought up to
// date.
func (s *state) catchUp(c *spreadCounts) *spreadCounts {
	for _, ch := range s.log[c.applied:] {
		c.count(ch.task, ch.node, ch.v)
	}
	c.applied = len(s.log)
	return c
}

// count counts pod e, on node n, v times. Pods being deleted do not
// count, as in kube-scheduler; a pod an action evicts tentatively still
// has no deletion timestamp, so its eviction and its return both count.
func (c *spreadCounts) count(e *api.TaskInfo, n *api.NodeInfo, v int) {
	for i := range c.rules.Spread {
		c.countFor(i, e, n, v)
	}
}

// countFor is count for constraint i alone.
func (c *spreadCounts) countFor(i int, e *api.TaskInfo, n *api.NodeInfo, v int) {
	if e.Namespace != c.namespace || e.Pod == nil || e.Pod.DeletionTimestamp != nil || !c.elig.nodes[i][n.Index] {
		return
	}
	// An empty selector counts nothing, as in kube-scheduler.
	con := &c.rules.Spread[i]
	if con.Selector.Empty() || !con.Selector.Matches(labels.Set(e.Pod.Labels)) {
		return
	}
	d := n.Node.Labels[con.TopologyKey]
	c.counts[i][d] += v
	if e.StandIn {
		if c.standIns == nil {
			c.standIns = make([]map[string]int, len(c.counts))
		}
		if c.standIns[i] == nil {
			c.standIns[i] = map[string]int{}
		}
		c.standIns[i][d] += v
	}
	c.stale = true
}

// eligibilityOf returns the eligible nodes and domains of task's class
// signature.
func (s *state) eligibilityOf(task *api.TaskInfo) *eligibility {
	if e := s.eligible[task.ClassSignature]; e != nil && task.ClassSignature != "" {
		return e
	}
	r := task.Rules
	e := &eligibility{nodes: make([][]bool, len(r.Spread)), domains: make([]map[string]bool, len(r.Spread))}
	for i := range r.Spread {
		e.nodes[i] = make([]bool, len(s.ssn.NodeList))
		e.domains[i] = map[string]bool{}
	}
	logger := klog.Background()
	for _, n := range s.ssn.NodeList {
		// As in kube-scheduler, a node counts for the filter's constraints
		// if it has every DoNotSchedule key, and for the score's if it has
		// every ScheduleAnyway key: a key only the score asks for does not
		// take a node out of the filter's domains.
		hasKeys := [2]bool{hasAllKeys(n.Node, r.Spread, false), hasAllKeys(n.Node, r.Spread, true)}
		if !hasKeys[0] && !hasKeys[1] {
			continue
		}
		affinity, _ := task.RequiredAffinity.Match(n.Node)
		var tolerated *bool
		for i := range r.Spread {
			con := &r.Spread[i]
			if !hasKeys[b2i(con.DoNotSchedule)] {
				continue
			}
			if con.HonorNodeAffinity && !affinity {
				continue
			}
			if con.HonorNodeTaints {
				if tolerated == nil {
					_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, n.Node.Spec.Taints, task.Pod.Spec.Tolerations,
						doNotSchedule, s.cfg.TaintTolerationComparisonOperators)
					ok := !untolerated
					tolerated = &ok
				}
				if !*tolerated {
					continue
				}
			}
			e.nodes[i][n.Index] = true
			e.domains[i][n.Node.Labels[con.TopologyKey]] = true
		}
	}
	if task.ClassSignature != "" {
		s.eligible[task.ClassSignature] = e
	}
	return e
}

// hasAllKeys reports whether node has the topology key of every
// constraint whose DoNotSchedule is doNotSchedule.
func hasAllKeys(node *corev1.Node, cons []api.SpreadConstraint, doNotSchedule bool) bool {
	for i := range cons {
		if cons[i].DoNotSchedule != doNotSchedule {
			continue
		}
		if _, ok := node.Labels[cons[i].TopologyKey]; !ok {
			return false
		}
	}
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func doNotSchedule(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// scoreFeasible is kube-scheduler's PodTopologySpread Score and
// NormalizeScore over the ScheduleAnyway constraints: per node, the
// matching pods of its domains weighted by log(domains + 2), plus maxSkew
// - 1; then lower is better, scaled to [0, 100]; a node without every
// ScheduleAnyway constraint's key scores 0.
func (s *state) scoreFeasible(task *api.TaskInfo, nodes []*api.NodeInfo, scores []int64) {
	r := task.Rules
	c := s.countsOf(task)
	ignored := make([]bool, len(nodes))
	// The weight of a constraint follows the number of its domains among
	// the feasible nodes (for hostname, the feasible nodes themselves).
	weights := make([]float64, len(r.Spread))
	for i := range r.Spread {
		con := &r.Spread[i]
		if con.DoNotSchedule {
			continue
		}
		seen := map[string]bool{}
		for j, n := range nodes {
			if !hasAllKeys(n.Node, r.Spread, false) {
				ignored[j] = true
				continue
			}
			seen[n.Node.Labels[con.TopologyKey]] = true
		}
		weights[i] = math.Log(float64(len(seen) + 2))
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for j, n := range nodes {
		if ignored[j] {
			continue
		}
		var score float64
		for i := range r.Spread {
			con := &r.Spread[i]
			if con.DoNotSchedule {
				continue
			}
			cnt := c.counts[i][n.Node.Labels[con.TopologyKey]]
			score += float64(cnt)*weights[i] + float64(con.MaxSkew-1)
		}
		scores[j] = int64(math.Round(score))
		lo, hi = min(lo, scores[j]), max(hi, scores[j])
	}
	for j := range scores {
		switch {
		case ignored[j]:
			scores[j] = 0
		case hi == 0:
			scores[j] = framework.MaxPreferenceScore
		default:
			scores[j] = framework.MaxPreferenceScore * (hi + lo - scores[j]) / hi
		}
	}
}

func (s *state) allocate(task *api.TaskInfo) {
	n := s.ssn.Nodes[task.NodeName]
	if n == nil {
		return
	}
	s.nodeOf[task.UID] = n
	s.log = append(s.log, change{task: task, node: n, v: 1})
	s.pods.Add(task, n)
}

func (s *state) deallocate(task *api.TaskInfo) {
	n := s.nodeOf[task.UID]
	if n == nil {
		n = s.ssn.Nodes[task.NodeName] // an eviction: the task still names its node
	}
	if n == nil {
		return
	}
	s.log = append(s.log, change{task: task, node: n, v: -1})
	s.pods.Remove(task)
}
