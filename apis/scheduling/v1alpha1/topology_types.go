package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultTopologyName is the Topology a policy uses when it names none.
const DefaultTopologyName = "default"

// Topology describes the cluster's network as a tree of domains above its
// nodes, from node labels: each level is a label key, top to bottom (a
// block, then a rack, then a host, say), and a domain is the set of nodes
// with one value of a level's label under one domain of the level above.
// The tree follows the nodes' labels as nodes come and go; nothing lists
// the domains by hand. Gangs name a Topology in their topology policy.
//
// Its short name is ttop: Kueue serves topologies.kueue.x-k8s.io, and
// kubectl would resolve an ambiguous name to only one of the two.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ttop
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TopologySpec `json:"spec"`
}

// TopologySpec lists the levels of the tree.
//
// +kubebuilder:validation:XValidation:rule="self.levels.all(a, self.levels.exists_one(b, b.nodeLabel == a.nodeLabel))",message="levels: each nodeLabel may name one level only",fieldPath=".levels"
type TopologySpec struct {
	// Levels are the levels of the tree, top to bottom; the last is the
	// finest (often kubernetes.io/hostname, one node per domain). A node
	// that lacks a level's label is outside the tree: a gang member with a
	// topology policy is placed on it only when every level of the policy
	// is preferred and the tree has no room.
	//
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one level of the tree.
type TopologyLevel struct {
	// Name is what policies call the level ("rack"), a DNS label.
	//
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// NodeLabel is the node label whose value names a node's domain at
	// this level ("example.com/rack"), a qualified label key.
	//
	// +required
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	NodeLabel string `json:"nodeLabel"`
}

// +kubebuilder:object:root=true

// TopologyList is a list of Topologies.
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

// TopologyPolicyType is what a level's rule asks of the domains a gang
// uses at that level.
//
// +kubebuilder:validation:Enum=Pack;Spread;Partition
type TopologyPolicyType string

const (
	// TopologyPack: as few domains as possible at the level; required, one
	// domain.
	TopologyPack TopologyPolicyType = "Pack"
	// TopologySpread: as evenly as possible over the level's domains;
	// required, the domains' member counts differ by at most one.
	TopologySpread TopologyPolicyType = "Spread"
	// TopologyPartition: partitions domains of nearly equal member counts
	// (they differ by at most one), each in its own domain.
	TopologyPartition TopologyPolicyType = "Partition"
)

// TopologyPolicy places a gang on a Topology's tree: a rule per level.
// Levels it does not list are packed, preferred (as Sakkara's default).
type TopologyPolicy struct {
	// TopologyName names the Topology; default "default".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	TopologyName string `json:"topologyName,omitempty"`

	// Levels are the rules, by level name.
	//
	// +required
	// +listType=map
	// +listMapKey=level
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Levels []TopologyLevelPolicy `json:"levels"`
}

// TopologyLevelPolicy is the rule at one level.
//
// +kubebuilder:validation:XValidation:rule="has(self.partitions) == (has(self.policy) && self.policy == 'Partition')",message="partitions: required with policy Partition, and only with it",fieldPath=".partitions"
// +kubebuilder:validation:XValidation:rule="!has(self.range) || !has(self.range.min) || !has(self.range.max) || self.range.min <= self.range.max",message="range.max: must not be smaller than range.min",fieldPath=".range.max"
type TopologyLevelPolicy struct {
	// Level names a level of the Topology.
	//
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Level string `json:"level"`

	// Policy is Pack (default), Spread or Partition.
	//
	// +optional
	// +kubebuilder:default=Pack
	Policy TopologyPolicyType `json:"policy,omitempty"`

	// Partitions is the number of domains of a Partition.
	//
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1024
	Partitions *int32 `json:"partitions,omitempty"`

	// Range bounds the members in each domain the gang uses at the level.
	//
	// +optional
	Range *MemberRange `json:"range,omitempty"`

	// Factor makes the members in each domain the gang uses at the level a
	// multiple of it (8 per NVLink domain, say).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Factor *int32 `json:"factor,omitempty"`

	// Required makes the rule hard: the gang is never placed outside it,
	// and waits (its PodGroup says why, level by level) until it can be
	// kept. Otherwise it is preferred: the gang takes the best placement
	// there is now, and its PodGroup's TopologySatisfied condition says
	// how far that is from the rule.
	//
	// +optional
	Required bool `json:"required,omitempty"`
}

// MemberRange bounds a count.
type MemberRange struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	Min *int32 `json:"min,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	Max *int32 `json:"max,omitempty"`
}
