package demo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// topologyRule is what the check holds a job's placement to: the required
// Pack and Partition rules of its PodGroup's topology policy, each with
// its level's node label from the Topology, the roles they place, and
// what the scheduler says of them (the TopologySatisfied condition).
type topologyRule struct {
	Levels []levelRule
	// Roles are the roles placed by the rules; empty means every role.
	Roles []string
	// Satisfied is the TopologySatisfied condition's status ("" while the
	// scheduler has not placed the gang), Message its message.
	Satisfied, Message string
}

type levelRule struct {
	Level, Label string
	Policy       schedulingv1alpha1.TopologyPolicyType
	Partitions   int32
}

// readTopologyRule reads a PodGroup's required Pack and Partition rules,
// with the labels of topologies (Topology name -> level -> node label);
// nil if it has none.
func readTopologyRule(pg *schedulingv1alpha1.PodGroup, topologies map[string]map[string]string) *topologyRule {
	t := pg.Spec.Topology
	if t == nil {
		return nil
	}
	name := t.TopologyName
	if name == "" {
		name = "default"
	}
	rule := &topologyRule{Roles: t.Roles}
	for _, l := range t.Levels {
		if !l.Required || (l.Policy != schedulingv1alpha1.TopologyPack && l.Policy != schedulingv1alpha1.TopologyPartition && l.Policy != "") {
			continue
		}
		lr := levelRule{Level: l.Level, Label: topologies[name][l.Level], Policy: l.Policy}
		if lr.Policy == "" {
			lr.Policy = schedulingv1alpha1.TopologyPack
		}
		if l.Partitions != nil {
			lr.Partitions = *l.Partitions
		}
		rule.Levels = append(rule.Levels, lr)
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupTopologySatisfied); c != nil {
		rule.Satisfied, rule.Message = string(c.Status), c.Message
	}
	return rule
}

// checkTopology judges a job whose members are all bound against its
// rule, from the nodes' labels (not from what the scheduler reports):
// the misplacements, and what it still waits for.
func checkTopology(key string, job *jobRow, nodeLabels map[string]map[string]string) (misplaced, waiting []string) {
	rule := job.Topology
	for _, l := range rule.Levels {
		if l.Label == "" {
			waiting = append(waiting, fmt.Sprintf("level %s: no Topology names its node label", l.Level))
			continue
		}
		domains := map[string]int{}
		for _, p := range job.Pods {
			if len(rule.Roles) == 0 || slices.Contains(rule.Roles, p.Role) {
				domains[nodeLabels[p.Node][l.Label]]++
			}
		}
		counts := describeDomains(domains)
		switch {
		case l.Policy == schedulingv1alpha1.TopologyPack && len(domains) != 1:
			misplaced = append(misplaced, fmt.Sprintf("%s: level %s: members in %s; the required rule packs them into one", key, l.Level, counts))
		case l.Policy == schedulingv1alpha1.TopologyPartition && (len(domains) != int(l.Partitions) || spread(domains) > 1):
			misplaced = append(misplaced, fmt.Sprintf("%s: level %s: members in %s; the required rule partitions them into %d of nearly equal size", key, l.Level, counts, l.Partitions))
		}
	}
	if rule.Satisfied != "True" {
		waiting = append(waiting, fmt.Sprintf("PodGroup TopologySatisfied %q: %s", rule.Satisfied, rule.Message))
	}
	return misplaced, waiting
}

func describeDomains(domains map[string]int) string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(domains)) {
		parts = append(parts, fmt.Sprintf("%s: %d", dash(d), domains[d]))
	}
	return strings.Join(parts, ", ")
}

// spread is the difference between the most and the fewest members in a
// domain.
func spread(domains map[string]int) int {
	lo, hi := -1, 0
	for _, n := range domains {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return hi - lo
}

// placeOf is where the table says a node is on the demo's network tree:
// "block-1/rack-2", or "" for a node without the labels.
func placeOf(labels map[string]string) string {
	block, rack := labels[localcluster.BlockLabel], labels[localcluster.RackLabel]
	if block == "" || rack == "" {
		return ""
	}
	return block + "/" + rack
}
