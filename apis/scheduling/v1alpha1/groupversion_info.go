// Package v1alpha1 holds Troupe's scheduling.troupe.dev/v1alpha1 API: the
// PodGroup, which tells Troupe's gang scheduler which pods must start
// together, the Queue, which shares the cluster between PodGroups, and the
// Topology, the tree of network domains a PodGroup's topology policy
// places its members on.
//
// The shapes follow the Coscheduling KEP (scheduler-plugins'
// scheduling.x-k8s.io PodGroup) and Volcano's scheduling.volcano.sh PodGroup
// and Queue, so that people and tools that know those read these alike. The
// group is Troupe's own: a cluster may run Volcano or scheduler-plugins
// beside Troupe, and their CRDs and controllers must not see Troupe's
// objects as theirs. Every rule is stated as OpenAPI or CEL in the CRD
// schema, so the API server rejects a bad object at the door, without a
// webhook.
//
// # Resource lists
//
// Every core/v1 ResourceList here (PodGroup spec.minResources, Queue
// spec.capability and status.allocated) carries the CEL rule
//
//	self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)
//
// A quantity arrives as a JSON string or a JSON integer, and the schema's
// pattern already admits only well-formed quantities, so a string is
// negative exactly when it starts with '-'. The rule reads that sign instead
// of parsing the value with CEL's quantity(): the API server prices
// quantity() by the length of its argument, which it cannot bound here (the
// values' schema comes from core/v1 without a maxLength, and no marker adds
// one to a map's values), and a single quantity() call per entry already
// exceeds the per-rule cost budget at 32 entries. string(self[k]) is avoided
// for the same reason: on a dynamically typed value its cost is estimated
// like a conversion from bytes, by length. The one value this judges
// differently from quantity() is a zero written with a minus sign ("-0"),
// which is rejected.
//
// Each list is capped at 32 resource names (MaxProperties), which bounds
// the entries the rule walks; the Type=object marker beside it only lets
// controller-gen apply MaxProperties to a map type declared in another
// package.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.troupe.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is scheduling.troupe.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "scheduling.troupe.dev", Version: "v1alpha1"}

	// SchemeBuilder registers PodGroup, Queue and Topology with a
	// runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds PodGroup, Queue and Topology to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&PodGroup{},
		&PodGroupList{},
		&Queue{},
		&QueueList{},
		&Topology{},
		&TopologyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
