package v1

import (
	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TFJob kind, framework name (the framework label of training-operator's
// metrics), replica types, container and port, as upstream names them.
const (
	TFJobKind                             = kfv1.TFJobKind
	TFJobFrameworkName                    = kfv1.TFJobFrameworkName
	TFJobReplicaTypeChief     ReplicaType = kfv1.TFJobReplicaTypeChief
	TFJobReplicaTypeMaster    ReplicaType = kfv1.TFJobReplicaTypeMaster
	TFJobReplicaTypePS        ReplicaType = kfv1.TFJobReplicaTypePS
	TFJobReplicaTypeWorker    ReplicaType = kfv1.TFJobReplicaTypeWorker
	TFJobReplicaTypeEval      ReplicaType = kfv1.TFJobReplicaTypeEval
	TFJobDefaultContainerName             = kfv1.TFJobDefaultContainerName
	TFJobDefaultPortName                  = kfv1.TFJobDefaultPortName
	TFJobDefaultPort                      = kfv1.TFJobDefaultPort
)

// TFJob runs a distributed TensorFlow training job.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// (Printer columns: hack/crdtrim sets them, the same for every job kind.)
type TFJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TFJobSpec `json:"spec,omitempty"`
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// TFJobSpec is upstream's TFJobSpec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.schedulingPolicy) || !has(self.runPolicy.schedulingPolicy.minAvailable) || self.runPolicy.schedulingPolicy.minAvailable <= self.tfReplicaSpecs.map(k, has(self.tfReplicaSpecs[k].replicas) ? self.tfReplicaSpecs[k].replicas : 1).sum()",message="runPolicy.schedulingPolicy.minAvailable: must not be larger than the total number of replicas",fieldPath=".runPolicy.schedulingPolicy.minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.restartPolicy) || self.runPolicy.gangPolicy.restartPolicy != 'Gang' || self.tfReplicaSpecs.all(k, !has(self.tfReplicaSpecs[k].restartPolicy) || self.tfReplicaSpecs[k].restartPolicy != 'Always')",messageExpression="'tfReplicaSpecs[' + self.tfReplicaSpecs.filter(k, has(self.tfReplicaSpecs[k].restartPolicy) && self.tfReplicaSpecs[k].restartPolicy == 'Always')[0] + '].restartPolicy: Always is not allowed with runPolicy.gangPolicy.restartPolicy Gang (the kubelet would restart the member outside the gang); use OnFailure, ExitCode or Never'",fieldPath=".tfReplicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.topology) || !has(self.runPolicy.gangPolicy.topology.replicaTypes) || self.runPolicy.gangPolicy.topology.replicaTypes.all(k, self.tfReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.topology.replicaTypes: ' + self.runPolicy.gangPolicy.topology.replicaTypes.filter(k, !self.tfReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ' is not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.topology.replicaTypes"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.tfReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, !self.tfReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ']: not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.minMembers"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.tfReplicaSpecs.all(r, r.lowerAscii() != k.lowerAscii() || self.runPolicy.gangPolicy.minMembers[k] <= (has(self.tfReplicaSpecs[r].replicas) ? self.tfReplicaSpecs[r].replicas : 1)))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, self.tfReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii() && self.runPolicy.gangPolicy.minMembers[k] > (has(self.tfReplicaSpecs[r].replicas) ? self.tfReplicaSpecs[r].replicas : 1)))[0] + ']: must not be greater than the replicas of that replica type'",fieldPath=".runPolicy.gangPolicy.minMembers"
type TFJobSpec struct {
	// RunPolicy holds the policies that apply to the whole job.
	// +optional
	RunPolicy RunPolicy `json:"runPolicy"`

	// SuccessPolicy says when the job has succeeded: by default when the
	// chief (or worker 0 without a chief) succeeds; AllWorkers waits for
	// every worker.
	// +optional
	// +kubebuilder:validation:Enum="";AllWorkers
	SuccessPolicy *kfv1.SuccessPolicy `json:"successPolicy,omitempty"`

	// TFReplicaSpecs maps a replica type (Chief, Master, PS, Worker,
	// Evaluator) to its pods.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() in ['chief', 'master', 'ps', 'worker', 'evaluator'])",messageExpression="'tfReplicaSpecs[' + self.filter(k, !(k.lowerAscii() in ['chief', 'master', 'ps', 'worker', 'evaluator']))[0] + ']: unsupported replica type; supported: Chief, Master, PS, Worker, Evaluator'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)",message="tfReplicaSpecs: a replica type appears twice with different letter case"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['chief', 'master']) || !has(self[k].replicas) || self[k].replicas <= 1)",messageExpression="'tfReplicaSpecs[' + self.filter(k, k.lowerAscii() in ['chief', 'master'] && has(self[k].replicas) && self[k].replicas > 1)[0] + '].replicas: must not be greater than 1'"
	// +kubebuilder:validation:XValidation:rule="self.filter(k, k.lowerAscii() in ['chief', 'master']).map(k, has(self[k].replicas) ? self[k].replicas : 1).sum() <= 1",message="tfReplicaSpecs: at most one Chief or Master replica is allowed"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].replicas) || self[k].replicas >= 0)",messageExpression="'tfReplicaSpecs[' + self.filter(k, has(self[k].replicas) && self[k].replicas < 0)[0] + '].replicas: must be greater than or equal to 0'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].restartPolicy) || self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode'])",messageExpression="'tfReplicaSpecs[' + self.filter(k, has(self[k].restartPolicy) && !(self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode']))[0] + '].restartPolicy: must be one of Always, OnFailure, Never, ExitCode'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, has(self[k].template) && has(self[k].template.spec) && size(self[k].template.spec.containers) > 0)",messageExpression="'tfReplicaSpecs[' + self.filter(k, !has(self[k].template) || !has(self[k].template.spec) || size(self[k].template.spec.containers) == 0)[0] + '].template.spec.containers: must have at least one container'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].template) || !has(self[k].template.spec) || size(self[k].template.spec.containers) == 0 || self[k].template.spec.containers.exists(c, c.name == 'tensorflow'))",messageExpression="'tfReplicaSpecs[' + self.filter(k, has(self[k].template) && has(self[k].template.spec) && !self[k].template.spec.containers.exists(c, c.name == 'tensorflow'))[0] + '].template.spec.containers: must have a container named \"tensorflow\"'"
	TFReplicaSpecs map[kfv1.ReplicaType]*kfv1.ReplicaSpec `json:"tfReplicaSpecs"`

	// EnableDynamicWorker is upstream's flag for TensorFlow's dynamic
	// worker membership; TF_CONFIG then names only the job's own task.
	// +optional
	EnableDynamicWorker bool `json:"enableDynamicWorker,omitempty"`
}

// +kubebuilder:object:root=true

// TFJobList is a list of TFJobs.
type TFJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFJob `json:"items"`
}

// Default fills in what upstream's defaulting fills in: canonical replica
// type names, replicas, restart policy, the tensorflow container's port,
// cleanPodPolicy and successPolicy. It uses upstream's own defaulting.
func (j *TFJob) Default() {
	up := kfv1.TFJob{Spec: kfv1.TFJobSpec{
		RunPolicy:      j.Spec.RunPolicy.RunPolicy,
		SuccessPolicy:  j.Spec.SuccessPolicy,
		TFReplicaSpecs: j.Spec.TFReplicaSpecs,
	}}
	kfv1.SetDefaults_TFJob(&up)
	j.Spec.RunPolicy.RunPolicy = up.Spec.RunPolicy
	j.Spec.SuccessPolicy = up.Spec.SuccessPolicy
	j.Spec.TFReplicaSpecs = up.Spec.TFReplicaSpecs
}

// ReplicaSpecs returns the job's replica specs by type.
func (j *TFJob) ReplicaSpecs() map[ReplicaType]*ReplicaSpec { return j.Spec.TFReplicaSpecs }

// GetRunPolicy returns the job's run policy.
func (j *TFJob) GetRunPolicy() *RunPolicy { return &j.Spec.RunPolicy }

// GetJobStatus returns the job's status for the engine to update.
func (j *TFJob) GetJobStatus() *JobStatus { return &j.Status }
