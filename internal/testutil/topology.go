package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// TopologyBuilder builds a Topology.
type TopologyBuilder struct{ t schedulingv1alpha1.Topology }

// MakeTopology starts a Topology of no levels.
func MakeTopology(name string) *TopologyBuilder {
	return &TopologyBuilder{t: schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Level adds a level below the others.
func (b *TopologyBuilder) Level(name, nodeLabel string) *TopologyBuilder {
	b.t.Spec.Levels = append(b.t.Spec.Levels, schedulingv1alpha1.TopologyLevel{Name: name, NodeLabel: nodeLabel})
	return b
}

// Obj returns the Topology.
func (b *TopologyBuilder) Obj() *schedulingv1alpha1.Topology { return b.t.DeepCopy() }

// TopologyRuleBuilder builds one level's rule of a topology policy.
type TopologyRuleBuilder struct {
	r schedulingv1alpha1.TopologyLevelPolicy
}

// Pack, Spread and Partition start a level's rule, preferred.
func Pack(level string) *TopologyRuleBuilder { return rule(level, schedulingv1alpha1.TopologyPack) }
func Spread(level string) *TopologyRuleBuilder {
	return rule(level, schedulingv1alpha1.TopologySpread)
}
func Partition(level string, n int32) *TopologyRuleBuilder {
	b := rule(level, schedulingv1alpha1.TopologyPartition)
	b.r.Partitions = ptr.To(n)
	return b
}

func rule(level string, p schedulingv1alpha1.TopologyPolicyType) *TopologyRuleBuilder {
	return &TopologyRuleBuilder{r: schedulingv1alpha1.TopologyLevelPolicy{Level: level, Policy: p}}
}

// Required makes the rule hard.
func (b *TopologyRuleBuilder) Required() *TopologyRuleBuilder {
	b.r.Required = true
	return b
}

// Range bounds the members per domain; 0 leaves a bound unset.
func (b *TopologyRuleBuilder) Range(lo, hi int32) *TopologyRuleBuilder {
	b.r.Range = &schedulingv1alpha1.MemberRange{}
	if lo > 0 {
		b.r.Range.Min = ptr.To(lo)
	}
	if hi > 0 {
		b.r.Range.Max = ptr.To(hi)
	}
	return b
}

// Factor makes the members per domain a multiple of f.
func (b *TopologyRuleBuilder) Factor(f int32) *TopologyRuleBuilder {
	b.r.Factor = ptr.To(f)
	return b
}

// Obj returns the rule.
func (b *TopologyRuleBuilder) Obj() schedulingv1alpha1.TopologyLevelPolicy { return b.r }

// JobTopology is a job's topology policy on topology (empty: the
// default) with rules, covering the default replica types.
func JobTopology(topology string, rules ...*TopologyRuleBuilder) *kubeflowv1.JobTopologyPolicy {
	p := &kubeflowv1.JobTopologyPolicy{TopologyPolicy: schedulingv1alpha1.TopologyPolicy{TopologyName: topology}}
	for _, r := range rules {
		p.Levels = append(p.Levels, r.Obj())
	}
	return p
}
