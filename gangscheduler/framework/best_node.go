package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// MaxPreferenceScore is what a preference's normalised score goes up to,
// kube-scheduler's MaxNodeScore.
const MaxPreferenceScore int64 = 100

// PreferenceUnit is what one point of weighted, normalised preference
// adds to a node's score: above the node orders' bin-packing and
// tiebreak bands (a pod's stated preference outweighs Troupe's packing
// heuristic), below their GPU-node penalty (a CPU-only pod still keeps
// off GPU nodes while it can). With kube-scheduler's weights the
// preferences add up to at most 900 points.
const PreferenceUnit int64 = 1 << 24

// Preference is a soft rule a pod states, scored per node as
// kube-scheduler's score plugins do: a raw score per feasible node,
// normalised over the feasible nodes of the search, then weighted.
type Preference struct {
	Name string
	// Weight is the plugin's weight in kube-scheduler's default profile.
	Weight int64
	// Applies reports whether the preference has an opinion on task; a
	// search for a task no preference applies to stays one pass.
	Applies func(task *api.TaskInfo) bool
	// Score is the raw score of node for task.
	Score func(task *api.TaskInfo, node *api.NodeInfo) int64
	// Normalize maps the raw scores of nodes, in place, to [0,
	// MaxPreferenceScore], higher better.
	Normalize func(task *api.TaskInfo, nodes []*api.NodeInfo, scores []int64)
}

// AddPreference registers a preference.
func (ssn *Session) AddPreference(p Preference) { ssn.preferences = append(ssn.preferences, p) }

// BestNode returns the feasible node with the highest score for task, nil
// if none fits. It visits only the nodes task may fit on (CandidateNodes),
// in NodeList order, which is by name; only a strictly higher score
// replaces the best, so ties go to the first name: the choice is
// deterministic.
//
// The score is the node orders' (NodeScore) plus, when a preference
// applies to the task, the weighted preferences, each normalised over the
// feasible nodes; that takes a second pass over them.
//
// Where the answer for a node reads only that node, an index kept per
// class signature answers without visiting the nodes (bestIndex), with the
// same node as the scan.
func (ssn *Session) BestNode(cls *Class, task *api.TaskInfo) *api.NodeInfo {
	if x := ssn.bestIndexFor(cls, task); x != nil {
		return x.best()
	}
	return ssn.BestNodeIn(cls, task, ssn.CandidateNodes(cls, task))
}

// preferenceApplies says whether some preference has an opinion on task.
// Applies depends only on what the class signature fixes.
func (ssn *Session) preferenceApplies(task *api.TaskInfo) bool {
	for i := range ssn.preferences {
		if p := &ssn.preferences[i]; p.Applies == nil || p.Applies(task) {
			return true
		}
	}
	return false
}

// refusedNodes says whether job has nodes that refused its binds: a static
// predicate then reads the job (predicates.bindRefused), not only the
// signature.
func (ssn *Session) refusedNodes(id api.JobID) bool {
	job := ssn.Jobs[id]
	return job != nil && len(job.RefusedNodes) > 0
}

// BestNodeIn is BestNode over the nodes of candidates alone (a topology
// domain's, say), which must be nodes of the session, in NodeList order.
func (ssn *Session) BestNodeIn(cls *Class, task *api.TaskInfo, candidates []*api.NodeInfo) *api.NodeInfo {
	prefs := ssn.prefScratch[:0]
	for i := range ssn.preferences {
		if p := &ssn.preferences[i]; p.Applies == nil || p.Applies(task) {
			prefs = append(prefs, p)
		}
	}
	ssn.prefScratch = prefs
	if len(prefs) == 0 {
		var best *api.NodeInfo
		var bestScore int64
		for _, n := range candidates {
			if !ssn.PredicateWithClass(cls, task, n).Fit {
				continue
			}
			if s := ssn.NodeScore(task, n); best == nil || s > bestScore {
				best, bestScore = n, s
			}
		}
		return best
	}

	feasible, total := ssn.nodeScratch[:0], ssn.scoreScratch[:0]
	for _, n := range candidates {
		if ssn.PredicateWithClass(cls, task, n).Fit {
			feasible = append(feasible, n)
			total = append(total, ssn.NodeScore(task, n))
		}
	}
	ssn.nodeScratch, ssn.scoreScratch = feasible, total
	if len(feasible) == 0 {
		return nil
	}
	raw := ssn.rawScratch[:0]
	for _, p := range prefs {
		raw = raw[:0]
		for _, n := range feasible {
			raw = append(raw, p.Score(task, n))
		}
		p.Normalize(task, feasible, raw)
		for i := range total {
			total[i] += p.Weight * raw[i] * PreferenceUnit
		}
	}
	ssn.rawScratch = raw
	best := 0
	for i := 1; i < len(total); i++ {
		if total[i] > total[best] {
			best = i
		}
	}
	return feasible[best]
}

// NormalizeToMax is kube-scheduler's DefaultNormalizeScore: scores scaled
// so that the highest is MaxPreferenceScore; reversed, lower raw scores
// are better (all MaxPreferenceScore when every raw score is 0).
func NormalizeToMax(reverse bool) func(*api.TaskInfo, []*api.NodeInfo, []int64) {
	return func(_ *api.TaskInfo, _ []*api.NodeInfo, scores []int64) {
		var highest int64
		for _, s := range scores {
			highest = max(highest, s)
		}
		for i, s := range scores {
			switch {
			case highest == 0 && reverse:
				scores[i] = MaxPreferenceScore
			case highest == 0:
				scores[i] = 0
			case reverse:
				scores[i] = MaxPreferenceScore - MaxPreferenceScore*s/highest
			default:
				scores[i] = MaxPreferenceScore * s / highest
			}
		}
	}
}
