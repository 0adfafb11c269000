package v1

import (
	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
)

// Upstream types that Troupe's jobs reuse as they are. The aliases keep call
// sites short; the schema and JSON are upstream's.
type (
	ReplicaType      = kfv1.ReplicaType
	ReplicaSpec      = kfv1.ReplicaSpec
	ReplicaStatus    = kfv1.ReplicaStatus
	RestartPolicy    = kfv1.RestartPolicy
	CleanPodPolicy   = kfv1.CleanPodPolicy
	JobCondition     = kfv1.JobCondition
	JobConditionType = kfv1.JobConditionType
	SchedulingPolicy = kfv1.SchedulingPolicy
	SuccessPolicy    = kfv1.SuccessPolicy
	ElasticPolicy    = kfv1.ElasticPolicy
)

// SuccessPolicyAllWorkers makes a TFJob wait for every worker.
const SuccessPolicyAllWorkers = kfv1.SuccessPolicyAllWorkers

// Labels every pod and service of a job carries; upstream's keys, so that
// existing selectors, dashboards and tools keep working.
const (
	JobNameLabel      = kfv1.JobNameLabel
	OperatorNameLabel = kfv1.OperatorNameLabel
	ReplicaTypeLabel  = kfv1.ReplicaTypeLabel
	ReplicaIndexLabel = kfv1.ReplicaIndexLabel
	JobRoleLabel      = kfv1.JobRoleLabel
)

// RunPolicy is upstream's RunPolicy. It is a Troupe type so that Troupe's
// optional gang fields can sit beside the upstream ones in spec.runPolicy.
//
// +kubebuilder:validation:XValidation:rule="!has(self.cleanPodPolicy) || self.cleanPodPolicy in ['All', 'Running', 'None']",message="runPolicy.cleanPodPolicy: must be one of All, Running, None",fieldPath=".cleanPodPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.backoffLimit) || self.backoffLimit >= 0",message="runPolicy.backoffLimit: must be greater than or equal to 0",fieldPath=".backoffLimit"
// +kubebuilder:validation:XValidation:rule="!has(self.activeDeadlineSeconds) || self.activeDeadlineSeconds > 0",message="runPolicy.activeDeadlineSeconds: must be greater than 0",fieldPath=".activeDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished >= 0",message="runPolicy.ttlSecondsAfterFinished: must be greater than or equal to 0",fieldPath=".ttlSecondsAfterFinished"
// +kubebuilder:validation:XValidation:rule="!has(self.schedulingPolicy) || !has(self.schedulingPolicy.minAvailable) || self.schedulingPolicy.minAvailable >= 1",message="runPolicy.schedulingPolicy.minAvailable: must be at least 1",fieldPath=".schedulingPolicy.minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.managedBy) || self.managedBy in ['kubeflow.org/training-operator', 'kueue.x-k8s.io/multikueue']",message="runPolicy.managedBy: must be one of kubeflow.org/training-operator, kueue.x-k8s.io/multikueue",fieldPath=".managedBy"
// +kubebuilder:validation:XValidation:rule="!has(self.schedulingPolicy) || !has(self.schedulingPolicy.scheduleTimeoutSeconds) || self.schedulingPolicy.scheduleTimeoutSeconds >= 0",message="runPolicy.schedulingPolicy.scheduleTimeoutSeconds: must be greater than or equal to 0",fieldPath=".schedulingPolicy.scheduleTimeoutSeconds"
type RunPolicy struct {
	kfv1.RunPolicy `json:",inline"`

	// GangPolicy holds Troupe's gang fields: per-replica minimums and
	// whole-gang restarts. Without it the job behaves as upstream's.
	// +optional
	GangPolicy *GangPolicy `json:"gangPolicy,omitempty"`
}

// JobStatus is upstream's JobStatus plus the counters Troupe keeps so that
// restart budgets survive operator restarts.
type JobStatus struct {
	kfv1.JobStatus `json:",inline"`

	// RecreatedPods counts pods the operator replaced after a retryable
	// failure (restartPolicy ExitCode, or an evicted OnFailure/Always pod).
	// Together with container restarts it is what runPolicy.backoffLimit
	// limits.
	// +optional
	RecreatedPods int32 `json:"recreatedPods,omitempty"`

	// Gang is the state of whole-gang restarts, for jobs whose
	// runPolicy.gangPolicy.restartPolicy is Gang.
	// +optional
	Gang *GangStatus `json:"gang,omitempty"`

	// State is the job's state in one word, what kubectl's STATE column
	// shows: Failed, Succeeded, Suspended, Restarting or Running (the
	// condition of that type is true), GangPending (created, its gang not
	// running yet: the GangScheduled condition says why), or Created.
	// Upstream's column shows the type of the last condition, which reads
	// "GangScheduled" for a gang that is not.
	// +optional
	State JobState `json:"state,omitempty"`
}

// JobState is a job's state in one word.
type JobState string

// The job states, in the order they win when several hold.
const (
	JobStateFailed      JobState = "Failed"
	JobStateSucceeded   JobState = "Succeeded"
	JobStateSuspended   JobState = "Suspended"
	JobStateRestarting  JobState = "Restarting"
	JobStateRunning     JobState = "Running"
	JobStateGangPending JobState = "GangPending"
	JobStateCreated     JobState = "Created"
)

// ManagedByTrainingOperator is the runPolicy.managedBy value (or its absence)
// that means this operator reconciles the job; any other value belongs to
// another controller, such as Kueue's MultiKueue.
const ManagedByTrainingOperator = kfv1.KubeflowJobsController
