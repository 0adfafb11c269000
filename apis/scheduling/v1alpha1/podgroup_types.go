package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod annotations that tie a pod to its PodGroup and its role in it.
//
// The keys are Volcano's, not Troupe's: Kubeflow's training operator, the
// MPI operator, Spark and Ray already write them on the pods they create for
// gang scheduling, so those pods need no change to be scheduled by Troupe.
// Which scheduler acts on a pod is still decided by its schedulerName, so a
// cluster that also runs Volcano does not get the two fighting over a pod.
const (
	// PodGroupNameAnnotation holds the name of the pod's PodGroup, in the
	// pod's namespace.
	PodGroupNameAnnotation = "scheduling.k8s.io/group-name"

	// TaskSpecAnnotation holds the pod's role in its gang: the key that
	// spec.minTaskMember counts the pod under (for a Kubeflow job, the
	// replica type).
	TaskSpecAnnotation = "volcano.sh/task-spec"
)

// DefaultQueueName is the Queue a PodGroup joins when spec.queue is not
// set. The scheduler creates it at start (see gangscheduler/queues), so a
// PodGroup that names no queue is never stuck waiting for one.
const DefaultQueueName = "default"

// PodGroupPhase is where a PodGroup is in its life, as the scheduler sees
// it.
type PodGroupPhase string

// The phases follow Volcano's, plus Failed and Finished from the
// Coscheduling KEP, so that a job controller can read the gang's outcome
// without counting pods itself.
const (
	// PodGroupPending: the gang is not yet admitted: its queue has no room
	// for minResources, or fewer than minMember pods exist.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupInqueue: the queue has admitted the gang's minResources; the
	// scheduler is placing its members.
	PodGroupInqueue PodGroupPhase = "Inqueue"
	// PodGroupRunning: at least minMember members are running.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupUnknown: some of the minMember members are placed or running
	// but others cannot be placed any more (a node went away, a pod was
	// deleted); the owning controller is expected to recreate them.
	PodGroupUnknown PodGroupPhase = "Unknown"
	// PodGroupFailed: so many members failed that fewer than minMember can
	// still succeed.
	PodGroupFailed PodGroupPhase = "Failed"
	// PodGroupFinished: at least minMember members succeeded.
	PodGroupFinished PodGroupPhase = "Finished"
)

// PodGroup condition types. metav1.Condition carries them, so the usual
// tools (kubectl wait --for=condition=Scheduled) work.
const (
	// PodGroupScheduled is True once the gang's minMember members are all
	// bound to nodes, and goes back to False when a new gang attempt starts
	// (a member was lost and must be placed again).
	PodGroupScheduled = "Scheduled"
	// PodGroupUnschedulable is True while the scheduler has tried and
	// failed to place the whole gang; its reason says why.
	PodGroupUnschedulable = "Unschedulable"
	// PodGroupPartial is True while some of the gang's members are bound
	// or running but the gang is not whole (fewer than minMember, or some
	// role short of its minTaskMember, counting members that succeeded).
	// Its lastTransitionTime is when that began: the scheduler completes
	// the gang first of all, and reclaims the bound members (deletes them,
	// for their controller to recreate) once the partial-gang grace period
	// has passed since then. It turns False with reason Reclaimed (the
	// message says why), Whole, or NoneBound.
	PodGroupPartial = "Partial"
	// PodGroupTopologySatisfied is True when the members spec.topology
	// covers were placed by every rule, False (reason PreferenceNotMet)
	// when a preferred rule could not be kept, its message saying how far
	// the placement is from it.
	PodGroupTopologySatisfied = "TopologySatisfied"
)

// Reasons of the Scheduled and Unschedulable conditions.
const (
	// PodGroupReasonGangBound (Scheduled=True): minMember members are bound.
	PodGroupReasonGangBound = "GangBound"
	// PodGroupReasonWaiting (Scheduled=False): the gang is not placed yet
	// and the scheduler has not given up on it.
	PodGroupReasonWaiting = "Waiting"

	// PodGroupReasonNotEnoughResources: the cluster, or the queue's
	// capability, cannot hold the whole gang now.
	PodGroupReasonNotEnoughResources = "NotEnoughResources"
	// PodGroupReasonNotEnoughPods: fewer than minMember pods of the group
	// exist, so there is nothing to place as a whole yet.
	PodGroupReasonNotEnoughPods = "NotEnoughPods"
	// PodGroupReasonNotEnoughPodsOfTask: some role has fewer pods than its
	// minTaskMember entry.
	PodGroupReasonNotEnoughPodsOfTask = "NotEnoughPodsOfTask"
	// PodGroupReasonQueueNotFound: spec.queue names no Queue.
	PodGroupReasonQueueNotFound = "QueueNotFound"
	// PodGroupReasonQueueClosed: the Queue is Closed and admits no new
	// gangs.
	PodGroupReasonQueueClosed = "QueueClosed"
	// PodGroupReasonScheduleTimeout: scheduleTimeoutSeconds passed since
	// scheduleStartTime without the gang being placed. The scheduler keeps
	// trying; nothing is held for a gang that is not whole (see Partial).
	PodGroupReasonScheduleTimeout = "ScheduleTimeout"
	// PodGroupReasonSchedulingGated (Unschedulable=True): the gang cannot
	// meet its minimums without pods that still have scheduling gates
	// (spec.schedulingGates); none of its pods is placed until they are
	// removed.
	PodGroupReasonSchedulingGated = "SchedulingGated"

	// PodGroupReasonMembersMissing (Partial=True): some members are bound
	// or running and the others are not placed yet; the scheduler places
	// them first of all, and reclaims the gang after the grace period.
	PodGroupReasonMembersMissing = "MembersMissing"
	// PodGroupReasonPreempted (Partial=True): a member was preempted; the
	// scheduler deletes the rest at once, so the gang does not hold half
	// its nodes.
	PodGroupReasonPreempted = "Preempted"
	// PodGroupReasonStuck (Partial=True): the grace period has passed but
	// a bound member has no controller (no ownerReference with controller
	// set) to recreate it, so the scheduler does not delete anything: a
	// person must complete or delete the gang.
	PodGroupReasonStuck = "Stuck"
	// PodGroupReasonReclaimed (Partial=False): the scheduler deleted the
	// bound members of a gang it could not complete within the grace
	// period; their controller recreates them, and the gang is placed
	// whole or not at all.
	PodGroupReasonReclaimed = "Reclaimed"
	// PodGroupReasonTopologyNotSatisfied (Unschedulable=True): a required
	// topology rule cannot be kept now; the message says why, level by
	// level.
	PodGroupReasonTopologyNotSatisfied = "TopologyNotSatisfied"
	// PodGroupReasonTopologyNotFound (Unschedulable=True): spec.topology
	// names a Topology that does not exist, or a level it does not have.
	PodGroupReasonTopologyNotFound = "TopologyNotFound"
	// PodGroupReasonRulesKept (TopologySatisfied=True).
	PodGroupReasonRulesKept = "RulesKept"
	// PodGroupReasonPreferenceNotMet (TopologySatisfied=False).
	PodGroupReasonPreferenceNotMet = "PreferenceNotMet"

	// PodGroupReasonWhole (Partial=False): the gang is whole again.
	PodGroupReasonWhole = "Whole"
	// PodGroupReasonNoneBound (Partial=False): no member is bound any more
	// (the gang is being torn down, or its members were deleted); the gang
	// is placed whole or not at all when its pods are recreated.
	PodGroupReasonNoneBound = "NoneBound"
)

// PodGroup is a set of pods that are worth running only together: the
// scheduler binds none of them until it can bind minMember of them, so a
// distributed job never holds half its GPUs while waiting for the rest.
//
// Its short name is tpg, not pg: Volcano (scheduling.volcano.sh) and
// scheduler-plugins (scheduling.x-k8s.io) both serve a "podgroups" resource
// with short name pg, and clusters often have one of them installed beside
// Troupe. kubectl resolves a short name or plural that several groups share
// to just one of them, so `kubectl get pg` could list another project's
// objects; tpg (or podgroups.scheduling.troupe.dev) always means Troupe's.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tpg
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="MinMember",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queue`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PodGroupSpec `json:"spec"`
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec says what the gang needs before any of it may start.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minTaskMember) || !has(self.minMember) || self.minTaskMember.map(k, self.minTaskMember[k]).sum() <= self.minMember",message="minTaskMember: the entries must not add up to more than minMember",fieldPath=".minTaskMember"
type PodGroupSpec struct {
	// MinMember is how many pods must be placed at once for any of them to
	// be bound. Fewer than one would make the gang meaningless.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	MinMember int32 `json:"minMember"`

	// MinTaskMember refines minMember per role (the pod's
	// volcano.sh/task-spec annotation): a job with one launcher and eight
	// workers is no use with nine workers. Roles not listed need no pods of
	// their own; the entries cannot add up to more than minMember, because
	// minMember pods would then never satisfy them.
	//
	// The entry count is capped so that the CEL rules over this map stay
	// within the API server's cost budget; sixteen roles is far more than
	// any distributed training job has.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="minTaskMember: every entry must be greater than or equal to 0"
	MinTaskMember map[string]int32 `json:"minTaskMember,omitempty"`

	// MinResources is what the gang's minMember pods request together. The
	// queue admits the gang (phase Inqueue) only when its capability can
	// hold this much, so that a gang that cannot fit does not start taking
	// nodes from gangs that can.
	//
	// See "Resource lists" in the package documentation for its rule and
	// its limit of 32 resource names.
	//
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="minResources: every quantity must be greater than or equal to 0"
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// Queue names the cluster-scoped Queue whose share the gang uses. It is
	// defaulted rather than required so that a PodGroup written for
	// scheduler-plugins, which has no queues, works unchanged.
	//
	// +optional
	// +kubebuilder:default=default
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Queue string `json:"queue,omitempty"`

	// PriorityClassName orders gangs within a queue, and is what preemption
	// compares. Pods carry their own priority; the gang needs one too
	// because it is admitted, and may be preempted, as a whole.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ScheduleTimeoutSeconds is how long, from scheduleStartTime, the gang
	// may wait to be placed before its Unschedulable condition says
	// ScheduleTimeout. The scheduler keeps trying after it: it never holds
	// part of a gang's resources while waiting for the rest (a gang is
	// bound whole or not at all, and a gang left partial by a failure
	// after the decision is reclaimed; see the Partial condition), so
	// there is nothing to release. Unset means no timeout.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`

	// Topology places the members of the listed roles on a Topology's tree
	// of network domains, by a rule per level; unset, the members go
	// wherever they fit.
	//
	// +optional
	Topology *PodGroupTopology `json:"topology,omitempty"`
}

// PodGroupTopology is a topology policy and the roles it covers.
type PodGroupTopology struct {
	TopologyPolicy `json:",inline"`

	// Roles are the roles (volcano.sh/task-spec values) whose members the
	// policy places, in rank order: the scheduler places the members along
	// the tree role by role in this order and, within a role, by their
	// replica index (the label training.kubeflow.org/replica-index), so
	// that members whose ranks are next to each other are placed next to
	// each other. Empty means every role, by name.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	Roles []string `json:"roles,omitempty"`
}

// PodGroupStatus is the scheduler's view of the gang. Only the scheduler
// writes it, through the status subresource.
type PodGroupStatus struct {
	// Phase is the gang's place in its life.
	//
	// +optional
	// +kubebuilder:validation:Enum=Pending;Inqueue;Running;Unknown;Failed;Finished
	Phase PodGroupPhase `json:"phase,omitempty"`

	// Admitted counts the members the scheduler has placed (bound, or
	// reserved and waiting for the rest of the gang) in the current
	// attempt; it reaching minMember is what releases the gang.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Admitted int32 `json:"admitted,omitempty"`

	// Running counts members in pod phase Running.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Running int32 `json:"running,omitempty"`

	// Succeeded counts members in pod phase Succeeded.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Succeeded int32 `json:"succeeded,omitempty"`

	// Failed counts members in pod phase Failed.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Failed int32 `json:"failed,omitempty"`

	// Conditions are Scheduled, Unschedulable and Partial; see the
	// constants.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ScheduleStartTime is when the scheduler began trying to place the
	// current gang: it is where scheduleTimeoutSeconds counts from, and is
	// reset when a lost member starts a new attempt.
	//
	// +optional
	ScheduleStartTime *metav1.Time `json:"scheduleStartTime,omitempty"`

	// ScheduleEndTime is when the current gang was fully bound (Scheduled
	// became True); with scheduleStartTime it gives the time the gang
	// waited. Unset while an attempt is in progress.
	//
	// +optional
	ScheduleEndTime *metav1.Time `json:"scheduleEndTime,omitempty"`

	// Topology is where the members spec.topology covers were placed,
	// level by level, when the gang was last placed.
	//
	// +optional
	Topology *TopologyPlacement `json:"topology,omitempty"`
}

// TopologyPlacement is a gang's placement on a Topology's tree.
type TopologyPlacement struct {
	// Levels are the topology's levels, top to bottom, with the domains
	// the covered members were placed in.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Levels []LevelPlacement `json:"levels"`
}

// LevelPlacement is where a gang's covered members are at one level.
type LevelPlacement struct {
	Level string `json:"level"`
	// Domains are the domains used, with the members in each, in the
	// order the members' ranks follow.
	//
	// +listType=atomic
	Domains []DomainMembers `json:"domains"`
}

// DomainMembers is a domain and how many of a gang's members it holds.
type DomainMembers struct {
	Name    string `json:"name"`
	Members int32  `json:"members"`
}

// +kubebuilder:object:root=true

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}
