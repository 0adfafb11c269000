package v1

import (
	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// GangPolicy is Troupe's gang block of spec.runPolicy: how the job's
// members are placed together (per-replica minimums) and what happens to
// the whole gang when one member breaks. Every field is optional; a job
// without it behaves exactly as upstream's.
//
// +kubebuilder:validation:XValidation:rule="!has(self.backoff) || !has(self.backoff.initialSeconds) || !has(self.backoff.maxSeconds) || self.backoff.initialSeconds <= self.backoff.maxSeconds",message="gangPolicy.backoff.maxSeconds: must not be smaller than gangPolicy.backoff.initialSeconds",fieldPath=".backoff.maxSeconds"
type GangPolicy struct {
	// RestartPolicy is the scope of a restart: Pod replaces only the
	// member that broke (upstream's behaviour); Gang tears every member
	// down and starts them again together, as one newly scheduled gang.
	//
	// Under Gang the replica restartPolicy says which failures are
	// retryable: OnFailure, every failure; ExitCode, exit codes of 128 and
	// above (killed by a signal) and failures before the main container
	// exited; Never, none (a failure fails the job; only disruptions
	// restart it). Always is not allowed: the kubelet would restart a
	// member in place, outside the gang. The kubelet restarts nothing
	// under Gang; the operator does.
	//
	// +kubebuilder:validation:Enum=Pod;Gang
	// +kubebuilder:default=Pod
	// +optional
	RestartPolicy GangRestartPolicy `json:"restartPolicy,omitempty"`

	// RestartOn lists the events that restart the whole gang under
	// restartPolicy Gang. An event not listed is handled per pod, as
	// without gangPolicy. Default: all of them.
	//
	// +kubebuilder:validation:MaxItems=4
	// +listType=set
	// +optional
	RestartOn []GangRestartTrigger `json:"restartOn,omitempty"`

	// MaxRestarts limits the gang restarts the job causes itself (a member
	// failed with a retryable error). The restart that would exceed it
	// fails the job with reason MaxRestartsExceeded. Default 3.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=3
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// MaxDisruptions limits the gang restarts the job did not cause: a
	// member evicted or preempted, its node lost, the gang broken. They
	// are counted apart from maxRestarts so that a job is not failed for
	// being preempted. Unset: no limit.
	//
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxDisruptions *int32 `json:"maxDisruptions,omitempty"`

	// Backoff is the wait between tearing a gang down and creating the
	// next one.
	// +optional
	Backoff *GangBackoff `json:"backoff,omitempty"`

	// PartialGangTimeoutSeconds is how long a gang that has run may keep
	// fewer than minMember members running before it counts as broken
	// (trigger GangBroken). It catches what no single pod shows: a member
	// deleted out from under the job, a Volcano PodGroup gone Unknown, a
	// coscheduling PodGroup gone Failed. Default 300.
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=300
	// +optional
	PartialGangTimeoutSeconds *int32 `json:"partialGangTimeoutSeconds,omitempty"`

	// NodeLostTimeoutSeconds is how long a member's node may be NotReady,
	// unreachable or gone before the member counts as lost (trigger
	// NodeLost). Pods of a torn-down gang that stay Terminating on such a
	// node past their own grace period are force-deleted: no kubelet is
	// left to confirm their end. Default 60.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=60
	// +optional
	NodeLostTimeoutSeconds *int32 `json:"nodeLostTimeoutSeconds,omitempty"`

	// MinMembers is the per-replica-type minimum of the gang (the
	// PodGroup's minTaskMember), so that a gang never starts with its
	// master and without its workers. Keys are replica types of the job;
	// a type not listed needs all its replicas.
	//
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",messageExpression="'gangPolicy.minMembers[' + self.filter(k, self[k] < 0)[0] + ']: must be greater than or equal to 0'"
	// +optional
	MinMembers map[kfv1.ReplicaType]int32 `json:"minMembers,omitempty"`

	// Topology places the members of some replica types on a Topology's
	// tree of network domains (scheduling.troupe.dev), by a rule per level:
	// pack, spread or partition, with a range or a factor per domain,
	// required or preferred. Troupe's scheduler places the gang by it,
	// members in rank order along the tree; the Volcano backend translates
	// it to Volcano's network topology; a backend that cannot express it
	// refuses a required rule (condition GangScheduled False) and runs a
	// preferred one without it. See docs/topology.md.
	//
	// +optional
	Topology *JobTopologyPolicy `json:"topology,omitempty"`
}

// JobTopologyPolicy is a topology policy and the replica types it places.
type JobTopologyPolicy struct {
	schedulingv1alpha1.TopologyPolicy `json:",inline"`

	// ReplicaTypes are the replica types whose members the policy places;
	// the others go wherever they fit (a CPU-only chief or parameter server
	// need not sit in the GPU rack). Default: the replica types that ask
	// for GPUs (a resource whose name contains "gpu"), or every replica
	// type when none does.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	ReplicaTypes []kfv1.ReplicaType `json:"replicaTypes,omitempty"`
}

// GangRestartPolicy is the scope of a restart.
type GangRestartPolicy string

const (
	// GangRestartPolicyPod replaces only the member that broke.
	GangRestartPolicyPod GangRestartPolicy = "Pod"
	// GangRestartPolicyGang restarts every member together.
	GangRestartPolicyGang GangRestartPolicy = "Gang"
)

// GangRestartTrigger is an event that restarts a gang.
//
// +kubebuilder:validation:Enum=MemberFailed;MemberEvicted;NodeLost;GangBroken
type GangRestartTrigger string

const (
	// GangRestartOnMemberFailed: a member's pod failed with a retryable
	// error. Counts against maxRestarts.
	GangRestartOnMemberFailed GangRestartTrigger = "MemberFailed"
	// GangRestartOnMemberEvicted: a member was evicted, preempted or
	// deleted by someone other than the operator. Counts against
	// maxDisruptions.
	GangRestartOnMemberEvicted GangRestartTrigger = "MemberEvicted"
	// GangRestartOnNodeLost: a member's node has been NotReady,
	// unreachable or gone for nodeLostTimeoutSeconds. Counts against
	// maxDisruptions.
	GangRestartOnNodeLost GangRestartTrigger = "NodeLost"
	// GangRestartOnGangBroken: a gang that ran has had fewer than
	// minMember members running for partialGangTimeoutSeconds. Counts
	// against maxDisruptions.
	GangRestartOnGangBroken GangRestartTrigger = "GangBroken"
)

// AllGangRestartTriggers is the default of restartOn.
var AllGangRestartTriggers = []GangRestartTrigger{
	GangRestartOnMemberFailed, GangRestartOnMemberEvicted, GangRestartOnNodeLost, GangRestartOnGangBroken,
}

// IsDisruption reports whether the trigger is something the job did not
// cause, counted against maxDisruptions rather than maxRestarts.
func (t GangRestartTrigger) IsDisruption() bool { return t != GangRestartOnMemberFailed }

// GangBackoff is an exponential backoff with a cap: the n-th restart of a
// job waits initialSeconds * 2^(n-1), at most maxSeconds.
type GangBackoff struct {
	// InitialSeconds is the wait before the first restart; 0 restarts at
	// once. Default 10.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=10
	// +optional
	InitialSeconds *int32 `json:"initialSeconds,omitempty"`
	// MaxSeconds caps the wait. Default 300.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=300
	// +optional
	MaxSeconds *int32 `json:"maxSeconds,omitempty"`
}

// GangStatus is what the operator keeps of a gang-restarted job.
type GangStatus struct {
	// Generation numbers the gang's incarnations: each gang restart adds
	// one. Every pod carries the generation it belongs to in the label
	// troupe.dev/gang-generation, so two generations never mix.
	// +optional
	Generation int32 `json:"generation,omitempty"`
	// Restarts counts the gang restarts the job caused (maxRestarts).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// Disruptions counts the gang restarts it did not cause
	// (maxDisruptions).
	// +optional
	Disruptions int32 `json:"disruptions,omitempty"`
	// StartTime is when the current generation first had minMember
	// members running; the partial-gang watchdog is armed from then on.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// PartialSince is when the running gang last dropped below minMember
	// running members; cleared when it is whole again.
	// +optional
	PartialSince *metav1.Time `json:"partialSince,omitempty"`
	// LastRestart describes the latest gang restart.
	// +optional
	LastRestart *GangRestart `json:"lastRestart,omitempty"`
}

// GangRestart describes one gang restart.
type GangRestart struct {
	// Time the restart was decided.
	Time metav1.Time `json:"time"`
	// Trigger is the event that caused it.
	Trigger GangRestartTrigger `json:"trigger"`
	// Member is the pod that broke, when one did.
	// +optional
	Member string `json:"member,omitempty"`
	// ExitCode is the member's main container's exit code, when it exited.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Message says what happened, in words.
	// +optional
	Message string `json:"message,omitempty"`
}

// GangGenerationLabel carries a pod's gang generation.
const GangGenerationLabel = "troupe.dev/gang-generation"

// GangMemberFinalizer is on every pod of a gang-restarted job. A member
// deleted by anyone (an eviction, a preemption, a reclaim, a node's pod
// garbage collector) stays, Terminating, until the operator has judged its
// loss and stored what follows from it (a gang restart, or the member
// replaced alone); only then does the operator remove the finalizer. Without
// it, a member deleted and gone between two passes, or while no operator
// leads, leaves no trace: the operator cannot tell it from a member not
// created yet, and would create it again alone beside a gang that lost it.
// batch/v1 Job keeps its pods the same way (batch.kubernetes.io/job-tracking).
const GangMemberFinalizer = "troupe.dev/gang-member"
