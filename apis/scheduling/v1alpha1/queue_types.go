package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueueState says whether a Queue admits new gangs.
type QueueState string

const (
	// QueueStateOpen: the queue admits new PodGroups.
	QueueStateOpen QueueState = "Open"
	// QueueStateClosed: the queue admits no new PodGroups; gangs already
	// admitted keep running, so closing a queue drains it rather than
	// killing work.
	QueueStateClosed QueueState = "Closed"
)

// Queue is a share of the cluster that PodGroups are admitted into. Queues
// are cluster-scoped because the thing they divide, the cluster's capacity,
// is; PodGroups of any namespace name the queue they draw from.
//
// Its short name is tq, not q: Volcano serves queues.scheduling.volcano.sh
// with short name q, and kubectl would resolve an ambiguous name to only one
// of the two (see PodGroup).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tq
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defaults to {} so that a Queue created with no spec at all
	// still gets its weight and state defaults.
	//
	// +optional
	// +kubebuilder:default={}
	Spec QueueSpec `json:"spec,omitempty"`
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueSpec is what the cluster's owner decides about a queue.
type QueueSpec struct {
	// Weight is the queue's share of the cluster relative to the other
	// queues when they compete for the same resources: a queue of weight 2
	// deserves twice what a queue of weight 1 does. Zero would give a queue
	// no share at all, which is what state Closed is for.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Weight int32 `json:"weight,omitempty"`

	// Capability is the most the queue's admitted gangs may hold together;
	// a resource not listed is not limited. Unset means the whole cluster.
	//
	// See "Resource lists" in the package documentation for its rule.
	//
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="capability: every quantity must be greater than or equal to 0"
	Capability corev1.ResourceList `json:"capability,omitempty"`

	// State is whether the queue admits new gangs.
	//
	// +optional
	// +kubebuilder:default=Open
	// +kubebuilder:validation:Enum=Open;Closed
	State QueueState `json:"state,omitempty"`
}

// QueueStatus is the scheduler's view of the queue. Only the scheduler
// writes it, through the status subresource.
type QueueStatus struct {
	// State is the state the scheduler is acting on; it trails spec.state
	// until the scheduler has seen a change.
	//
	// +optional
	// +kubebuilder:validation:Enum=Open;Closed
	State QueueState `json:"state,omitempty"`

	// Pending counts the queue's PodGroups in phase Pending.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Pending int32 `json:"pending,omitempty"`

	// Inqueue counts the queue's PodGroups in phase Inqueue.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Inqueue int32 `json:"inqueue,omitempty"`

	// Running counts the queue's PodGroups in phase Running.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Running int32 `json:"running,omitempty"`

	// Allocated is what the queue's admitted gangs hold now; it is what
	// capability is compared against.
	//
	// See "Resource lists" in the package documentation for its rule.
	//
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="allocated: every quantity must be greater than or equal to 0"
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// +kubebuilder:object:root=true

// QueueList is a list of Queues.
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
