package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// TopologyBuilder builds a Topology.
type TopologyBuilder struct{ t schedulingv1alpha1.Topology }

// MakeTopology returns a Topology with no levels yet.
func MakeTopology(name string) *TopologyBuilder {
	return &TopologyBuilder{t: schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Level adds a level below the ones added before.
func (b *TopologyBuilder) Level(name, nodeLabel string) *TopologyBuilder {
	b.t.Spec.Levels = append(b.t.Spec.Levels, schedulingv1alpha1.TopologyLevel{Name: name, NodeLabel: nodeLabel})
	return b
}

// Obj returns the Topology.
func (b *TopologyBuilder) Obj() *schedulingv1alpha1.Topology { return b.t.DeepCopy() }
