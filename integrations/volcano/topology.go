package volcano

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
)

// What Volcano v1.14 keeps of a Troupe topology policy, and how (read from
// volcano.sh/volcano v1.14.1; docs/topology-volcano.md says it for users):
//
//   - Pack at a level with HyperNodes, required: networkTopology mode hard,
//     highestTierAllowed the level's tier. The allocate action
//     (pkg/scheduler/actions/allocate, allocateForJob and allocateForSubJob)
//     tries the whole gang, or the whole subgroup, in every HyperNode of
//     each tier up to that one, lowest tier first, and commits nothing
//     unless one holds it all (hyperNodeGradientFn of the
//     network-topology-aware plugin lists the candidates). A required Pack
//     at a coarser level is implied; a preferred Pack at a finer one is
//     tried first, as the gradient goes up from tier 1.
//   - Pack, preferred only: mode soft. Soft mode has no tier: the plugin's
//     node score pulls each member towards the HyperNodes the members
//     placed before it are in (batchNodeOrderFnForNetworkAwarePods), a
//     greedy best effort, at every level at once.
//   - Only some replica types covered: a subGroupPolicy whose labelSelector
//     names their replica-type label values, grouped by the job-name label
//     (a subgroup needs a matchLabelKeys value to exist at all:
//     JobInfo.getOrCreateSubJob), with the same networkTopology and
//     subGroupSize the covered members the gang starts with, so that the
//     subgroup is tried whole in each HyperNode. Job-level networkTopology
//     would pull the uncovered roles into the domain too.
//
// The tier is always a number, never highestTierName: Volcano resolves a
// name only for the job-level networkTopology (updateJobTier runs after
// the subgroups copied theirs, so a subgroup's hard name never takes
// effect), and an unknown name silently makes a hard rule no rule.
//
//   - Factor F under a required Pack at its level: the Pack puts every
//     member in one domain, so the factor asks only that the members be a
//     multiple of F, which the operator checks (the gang's size is known).
//
// Not kept: Spread (nothing spreads), Partition (subgroups may share a
// HyperNode: nothing keeps them apart), Range (no per-domain bounds),
// Factor under any other rule (under Spread or Partition it is part of a
// rule Volcano cannot keep; a preferred one could become soft subgroups of
// F members, grouped by a per-pod label of rank / F, which is only a
// greedy pull and which the operator does not set up), any rule at the
// node level (no HyperNode is one node), and every rule of a Topology the
// operator generates no HyperNodes for.

// HyperNodeSource is what the backend needs of the HyperNodes the operator
// generates from one Topology (integrations/volcano/hypernodes).
type HyperNodeSource interface {
	// Topology names the Topology the HyperNodes are generated from.
	Topology() string
	// Tiers reads that Topology: the HyperNode tier of each of its levels
	// that has HyperNodes, by level name, the name of its node level (the
	// kubernetes.io/hostname one; "" if none), and whether the HyperNodes
	// of the Topology as it is now are written. It fails with
	// ErrNoTopology when the Topology does not exist.
	Tiers(ctx context.Context) (tiers map[string]int, nodeLevel string, generated bool, err error)
}

// ErrNoTopology is HyperNodeSource.Tiers' error for a missing Topology.
var ErrNoTopology = errors.New("topology does not exist")

// SubGroupName names the subGroupPolicy that holds the covered roles.
const SubGroupName = "troupe-topology"

// topologyName is the Topology a policy uses.
func topologyName(t *integrations.GangTopology) string {
	if t.TopologyName == "" {
		return schedulingv1alpha1.DefaultTopologyName
	}
	return t.TopologyName
}

// ReadsTopology: with HyperNodes generated, what Volcano keeps of a job's
// rules depends on the levels of the Topology they come from.
func (b Backend) ReadsTopology() bool { return b.HyperNodes != nil }

// UnkeptTopologyRules lists what Volcano cannot keep of t (see above).
func (b Backend) UnkeptTopologyRules(t *integrations.GangTopology) []integrations.UnkeptRule {
	all := func(why string) []integrations.UnkeptRule {
		var out []integrations.UnkeptRule
		for _, l := range t.Levels {
			out = append(out, integrations.UnkeptRule{Level: l.Level, Required: l.Required, What: "rule (" + why + ")"})
		}
		return out
	}
	name := topologyName(t)
	if b.HyperNodes == nil {
		return all("the operator generates no Volcano HyperNodes: --volcano-hypernode-topology is not set")
	}
	if gen := b.HyperNodes.Topology(); gen != name {
		return all(fmt.Sprintf("the operator generates Volcano HyperNodes for Topology %q only, not %q", gen, name))
	}
	tiers, nodeLevel, _, err := b.HyperNodes.Tiers(context.Background())
	if err != nil && !errors.Is(err, ErrNoTopology) {
		return all(err.Error())
	}
	// Without the Topology the levels cannot be judged yet; SyncPodGroup
	// waits for it.
	return unkeptRules(t, tiers, nodeLevel, err == nil)
}

// unkeptRules judges each rule of t against the Topology's levels (known
// says whether tiers and nodeLevel describe it).
func unkeptRules(t *integrations.GangTopology, tiers map[string]int, nodeLevel string, known bool) []integrations.UnkeptRule {
	var out []integrations.UnkeptRule
	add := func(l schedulingv1alpha1.TopologyLevelPolicy, what string) {
		out = append(out, integrations.UnkeptRule{Level: l.Level, Required: l.Required, What: what})
	}
	for _, l := range t.Levels {
		if known && l.Level == nodeLevel {
			add(l, "rule (it is the node level, and no Volcano HyperNode is one node)")
			continue
		}
		if _, ok := tiers[l.Level]; known && !ok {
			add(l, fmt.Sprintf("rule (Topology %q has no level %q)", topologyName(t), l.Level))
			continue
		}
		switch integrations.PolicyOf(l) {
		case schedulingv1alpha1.TopologySpread:
			add(l, "policy Spread")
		case schedulingv1alpha1.TopologyPartition:
			add(l, "policy Partition")
		}
		if l.Range != nil && (l.Range.Min != nil || l.Range.Max != nil) {
			add(l, "range")
		}
		if f := l.Factor; f != nil && *f > 1 {
			switch {
			case !l.Required || integrations.PolicyOf(l) != schedulingv1alpha1.TopologyPack:
				add(l, "factor")
			case t.Members%*f != 0:
				// A required Pack is one domain, which holds a multiple
				// of F members only if the gang is one.
				add(l, fmt.Sprintf("factor (%d members are not a multiple of %d)", t.Members, *f))
			}
		}
	}
	return out
}

// placement is what a topology policy becomes on a Volcano PodGroup.
type placement struct {
	NetworkTopology *volcanov1beta1.NetworkTopologySpec
	SubGroupPolicy  []volcanov1beta1.SubGroupPolicySpec
}

// errNotGenerated makes SyncPodGroup wait: a hard rule written before its
// HyperNodes exist would let Volcano place the gang anywhere (with no
// HyperNode of the tier, the cluster-wide root is within it).
var errNotGenerated = errors.New("not generated yet")

// placementOf translates the kept rules of spec's topology policy. A
// required rule needs the Topology's tiers (tiers, with generated true);
// preferred ones (soft mode) need none.
func placementOf(spec integrations.GangSpec, tiers map[string]int, generated bool) (placement, error) {
	t := spec.Topology
	if t == nil || len(t.Roles) == 0 {
		return placement{}, nil
	}
	kept := map[string]bool{}
	for _, l := range t.Levels {
		kept[l.Level] = true
	}
	for _, u := range unkeptRules(t, tiers, "", tiers != nil) {
		if !boundOnly(u) {
			kept[u.Level] = false
		}
	}
	var nt *volcanov1beta1.NetworkTopologySpec
	for _, l := range t.Levels {
		if !kept[l.Level] || integrations.PolicyOf(l) != schedulingv1alpha1.TopologyPack {
			continue
		}
		if !l.Required {
			if nt == nil {
				nt = &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode}
			}
			continue
		}
		tier, ok := tiers[l.Level]
		if !ok || !generated {
			return placement{}, fmt.Errorf("level %q of Topology %q: its Volcano HyperNodes are %w", l.Level, topologyName(t), errNotGenerated)
		}
		if nt == nil || nt.HighestTierAllowed == nil || tier < *nt.HighestTierAllowed {
			nt = &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.HardNetworkTopologyMode, HighestTierAllowed: &tier}
		}
	}
	if nt == nil {
		return placement{}, nil
	}
	if coversAll(spec) {
		return placement{NetworkTopology: nt}, nil
	}
	size := int32(0)
	for _, r := range t.Roles {
		size += spec.MinTaskMember[r]
	}
	return placement{SubGroupPolicy: []volcanov1beta1.SubGroupPolicySpec{{
		Name:            SubGroupName,
		NetworkTopology: nt,
		SubGroupSize:    ptrTo(max(size, 1)),
		MinSubGroups:    ptrTo(int32(0)),
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: kubeflowv1.ReplicaTypeLabel, Operator: metav1.LabelSelectorOpIn, Values: slices.Clone(t.Roles),
		}}},
		MatchLabelKeys: []string{kubeflowv1.JobNameLabel},
	}}}, nil
}

// boundOnly reports whether u is a bound on a level's member counts (its
// range or factor, with or without a detail in parentheses) rather than
// the level's rule: the rule's Pack may still be kept without it.
func boundOnly(u integrations.UnkeptRule) bool {
	part, _, _ := strings.Cut(u.What, " ")
	return part == "range" || part == "factor"
}

// coversAll reports whether the policy covers every role of the gang.
func coversAll(spec integrations.GangSpec) bool {
	for role := range spec.MinTaskMember {
		if !slices.Contains(spec.Topology.Roles, role) {
			return false
		}
	}
	return true
}

func ptrTo[T any](v T) *T { return &v }
