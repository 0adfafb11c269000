package volcano

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
)

// hyperNodes is a HyperNodeSource of fixed answers: the generated
// Topology "default" with levels block (tier 2), rack (tier 1) and host.
type hyperNodes struct {
	topology  string
	missing   bool
	generated bool
}

func (h hyperNodes) Topology() string { return h.topology }

func (h hyperNodes) Tiers(context.Context) (map[string]int, string, bool, error) {
	if h.missing {
		return nil, "", false, ErrNoTopology
	}
	return map[string]int{"block": 2, "rack": 1}, "host", h.generated, nil
}

var generated = hyperNodes{topology: "default", generated: true}

func level(name string, policy schedulingv1alpha1.TopologyPolicyType, required bool) schedulingv1alpha1.TopologyLevelPolicy {
	return schedulingv1alpha1.TopologyLevelPolicy{Level: name, Policy: policy, Required: required}
}

func pack(name string, required bool) schedulingv1alpha1.TopologyLevelPolicy {
	return level(name, schedulingv1alpha1.TopologyPack, required)
}

func gangTopology(topology string, levels ...schedulingv1alpha1.TopologyLevelPolicy) *integrations.GangTopology {
	return &integrations.GangTopology{
		TopologyPolicy: schedulingv1alpha1.TopologyPolicy{TopologyName: topology, Levels: levels},
		Roles:          []string{"worker"},
		Members:        4,
	}
}

func i32(v int32) *int32 { return &v }

func TestUnkeptTopologyRules(t *testing.T) {
	withRange := pack("rack", true)
	withRange.Range = &schedulingv1alpha1.MemberRange{Max: i32(4)}
	withFactor := pack("rack", false)
	withFactor.Factor = i32(2)
	factorOne := pack("rack", true)
	factorOne.Factor = i32(1)
	packedFactor := func(f int32) schedulingv1alpha1.TopologyLevelPolicy {
		l := pack("rack", true)
		l.Factor = i32(f)
		return l
	}
	spreadFactor := level("rack", schedulingv1alpha1.TopologySpread, true)
	spreadFactor.Factor = i32(2)
	partition := level("block", schedulingv1alpha1.TopologyPartition, true)
	partition.Partitions = i32(2)
	cases := []struct {
		name    string
		backend Backend
		policy  *integrations.GangTopology
		want    []string // "level: what (required)"
	}{
		{
			name: "required and preferred Pack at levels with HyperNodes are kept", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", pack("block", true), pack("rack", false)),
		},
		{
			name: "Pack with no policy set (the API server's default) is kept", backend: Backend{HyperNodes: generated},
			policy: gangTopology("default", level("rack", "", true)),
		},
		{
			name: "a factor of 1 is no rule", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", factorOne),
		},
		{
			name: "a factor under a required Pack, the members a multiple of it, is kept", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", packedFactor(2)),
		},
		{
			name: "a factor under a required Pack, the members no multiple of it", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", packedFactor(3)),
			want:   []string{"rack: factor (4 members are not a multiple of 3) (required)"},
		},
		{
			name: "a factor under a required Spread is not kept", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", spreadFactor),
			want:   []string{"rack: policy Spread (required)", "rack: factor (required)"},
		},
		{
			name: "no generator: nothing is kept", backend: Backend{},
			policy: gangTopology("", pack("rack", true), pack("block", false)),
			want: []string{
				"rack: rule (the operator generates no Volcano HyperNodes: --volcano-hypernode-topology is not set) (required)",
				"block: rule (the operator generates no Volcano HyperNodes: --volcano-hypernode-topology is not set)",
			},
		},
		{
			name: "another Topology than the generated one", backend: Backend{HyperNodes: generated},
			policy: gangTopology("fabric", pack("rack", true)),
			want:   []string{`rack: rule (the operator generates Volcano HyperNodes for Topology "default" only, not "fabric") (required)`},
		},
		{
			name: "Spread, Partition, range and factor are not kept", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", level("rack", schedulingv1alpha1.TopologySpread, false), partition, withRange, withFactor),
			want:   []string{"rack: policy Spread", "block: policy Partition (required)", "rack: range (required)", "rack: factor"},
		},
		{
			name: "the node level has no HyperNodes", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", pack("host", false)),
			want:   []string{"host: rule (it is the node level, and no Volcano HyperNode is one node)"},
		},
		{
			name: "a level the Topology does not have", backend: Backend{HyperNodes: generated},
			policy: gangTopology("", pack("zone", true)),
			want:   []string{`zone: rule (Topology "default" has no level "zone") (required)`},
		},
		{
			name: "a missing Topology: Pack is kept, SyncPodGroup waits for it", backend: Backend{HyperNodes: hyperNodes{topology: "default", missing: true}},
			policy: gangTopology("", pack("zone", true), level("rack", schedulingv1alpha1.TopologySpread, true)),
			want:   []string{"rack: policy Spread (required)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, u := range tc.backend.UnkeptTopologyRules(tc.policy) {
				s := u.String()
				if u.Required {
					s += " (required)"
				}
				got = append(got, s)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("unkept rules:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPlacement(t *testing.T) {
	tier := func(n int) *int { return &n }
	hard := func(n int) *volcanov1beta1.NetworkTopologySpec {
		return &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.HardNetworkTopologyMode, HighestTierAllowed: tier(n)}
	}
	soft := &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode}
	// workers only: a CPU chief that the policy does not cover.
	workersOnly := func(tp *integrations.GangTopology) integrations.GangSpec {
		return integrations.GangSpec{MinMember: 5, MinTaskMember: map[string]int32{"chief": 1, "worker": 4}, Topology: tp}
	}
	every := func(tp *integrations.GangTopology) integrations.GangSpec {
		return integrations.GangSpec{MinMember: 4, MinTaskMember: map[string]int32{"worker": 4}, Topology: tp}
	}
	subGroup := func(nt *volcanov1beta1.NetworkTopologySpec, size int32, roles ...string) []volcanov1beta1.SubGroupPolicySpec {
		return []volcanov1beta1.SubGroupPolicySpec{{
			Name: SubGroupName, NetworkTopology: nt, SubGroupSize: i32(size), MinSubGroups: i32(0),
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: kubeflowv1.ReplicaTypeLabel, Operator: metav1.LabelSelectorOpIn, Values: roles,
			}}},
			MatchLabelKeys: []string{kubeflowv1.JobNameLabel},
		}}
	}
	withRange := pack("block", false)
	withRange.Range = &schedulingv1alpha1.MemberRange{Min: i32(2)}
	twoRoles := gangTopology("", pack("rack", true))
	twoRoles.Roles = []string{"master", "worker"}
	packedFactor := pack("rack", true)
	packedFactor.Factor = i32(2)
	cases := []struct {
		name    string
		spec    integrations.GangSpec
		source  HyperNodeSource
		want    placement
		wantErr string
	}{
		{name: "no policy", spec: every(nil), source: generated},
		{name: "required Pack over every role: the job's networkTopology", spec: every(gangTopology("", pack("rack", true))), source: generated, want: placement{NetworkTopology: hard(1)}},
		{
			name: "the finest required Pack wins; a coarser one is implied", source: generated,
			spec: every(gangTopology("", pack("block", true), pack("rack", true))), want: placement{NetworkTopology: hard(1)},
		},
		{
			name: "required at block, preferred at rack: hard at block (Volcano tries racks first)", source: generated,
			spec: every(gangTopology("", pack("rack", false), pack("block", true))), want: placement{NetworkTopology: hard(2)},
		},
		{
			name: "required Pack with a factor the gang is a multiple of: the Pack", source: generated,
			spec: every(gangTopology("", packedFactor)), want: placement{NetworkTopology: hard(1)},
		},
		{name: "preferred only: soft", spec: every(gangTopology("", pack("rack", false))), source: generated, want: placement{NetworkTopology: soft}},
		{
			name: "preferred Pack with an unkept range: the Pack is kept", source: generated,
			spec: every(gangTopology("", withRange)), want: placement{NetworkTopology: soft},
		},
		{
			name: "preferred Spread alone: nothing", source: generated,
			spec: every(gangTopology("", level("rack", schedulingv1alpha1.TopologySpread, false))),
		},
		{
			name: "some roles covered: a subgroup of them, tried whole", source: generated,
			spec: workersOnly(gangTopology("", pack("rack", true))), want: placement{SubGroupPolicy: subGroup(hard(1), 4, "worker")},
		},
		{
			name: "some roles covered, preferred", source: generated,
			spec: workersOnly(gangTopology("", pack("rack", false))), want: placement{SubGroupPolicy: subGroup(soft, 4, "worker")},
		},
		{
			name: "two covered roles of three", source: generated,
			spec: integrations.GangSpec{MinMember: 6, MinTaskMember: map[string]int32{"master": 1, "worker": 3, "ps": 2}, Topology: twoRoles},
			want: placement{SubGroupPolicy: subGroup(hard(1), 4, "master", "worker")},
		},
		{
			name: "another Topology: nothing", source: generated,
			spec: every(gangTopology("fabric", pack("rack", true))),
		},
		{
			name: "HyperNodes not written yet: a required rule waits", source: hyperNodes{topology: "default"},
			spec: every(gangTopology("", pack("rack", true))), wantErr: `runPolicy.gangPolicy.topology: level "rack" of Topology "default": its Volcano HyperNodes are not generated yet`,
		},
		{
			name: "HyperNodes not written yet: a preferred rule needs none", source: hyperNodes{topology: "default"},
			spec: every(gangTopology("", pack("rack", false))), want: placement{NetworkTopology: soft},
		},
		{
			name: "no Topology: a required rule waits for it", source: hyperNodes{topology: "default", missing: true},
			spec: every(gangTopology("", pack("rack", true))), wantErr: `a required rule waits for Topology "default", which does not exist`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Backend{HyperNodes: tc.source}.placement(context.Background(), tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("placement:\n got %s\nwant %s", show(got), show(tc.want))
			}
		})
	}
}

func show(p placement) string {
	var b strings.Builder
	if nt := p.NetworkTopology; nt != nil {
		b.WriteString("networkTopology " + describe(nt))
	}
	for _, sg := range p.SubGroupPolicy {
		b.WriteString(" subGroup " + sg.Name + " " + describe(sg.NetworkTopology))
		if sg.SubGroupSize != nil {
			b.WriteString(" size " + strings.Repeat("|", int(*sg.SubGroupSize)))
		}
		if sg.LabelSelector != nil {
			b.WriteString(" " + metav1.FormatLabelSelector(sg.LabelSelector))
		}
	}
	return b.String()
}

func describe(nt *volcanov1beta1.NetworkTopologySpec) string {
	if nt == nil {
		return "<nil>"
	}
	s := string(nt.Mode)
	if nt.HighestTierAllowed != nil {
		s += " tier " + strings.Repeat("|", *nt.HighestTierAllowed)
	}
	return s
}
