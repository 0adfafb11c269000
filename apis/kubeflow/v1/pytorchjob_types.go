package v1

import (
	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PyTorchJob kind, framework name (the framework label of training-operator's
// metrics), replica types, container and port, as upstream names them.
const (
	PyTorchJobKind                             = kfv1.PyTorchJobKind
	PyTorchJobFrameworkName                    = kfv1.PyTorchJobFrameworkName
	PyTorchJobReplicaTypeMaster    ReplicaType = kfv1.PyTorchJobReplicaTypeMaster
	PyTorchJobReplicaTypeWorker    ReplicaType = kfv1.PyTorchJobReplicaTypeWorker
	PyTorchJobDefaultContainerName             = kfv1.PyTorchJobDefaultContainerName
	PyTorchJobDefaultPortName                  = kfv1.PyTorchJobDefaultPortName
	PyTorchJobDefaultPort                      = kfv1.PyTorchJobDefaultPort
)

// PyTorchJob runs a distributed PyTorch training job.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.pytorchReplicaSpecs.Worker.replicas,statuspath=.status.replicaStatuses.Worker.active,selectorpath=.status.replicaStatuses.Worker.selector
// +kubebuilder:resource:scope=Namespaced
// (Printer columns: hack/crdtrim sets them, the same for every job kind.)
type PyTorchJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PyTorchJobSpec `json:"spec,omitempty"`
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// PyTorchJobSpec is upstream's PyTorchJobSpec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.schedulingPolicy) || !has(self.runPolicy.schedulingPolicy.minAvailable) || self.runPolicy.schedulingPolicy.minAvailable <= self.pytorchReplicaSpecs.map(k, has(self.pytorchReplicaSpecs[k].replicas) ? self.pytorchReplicaSpecs[k].replicas : 1).sum()",message="runPolicy.schedulingPolicy.minAvailable: must not be larger than the total number of replicas",fieldPath=".runPolicy.schedulingPolicy.minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.restartPolicy) || self.runPolicy.gangPolicy.restartPolicy != 'Gang' || self.pytorchReplicaSpecs.all(k, !has(self.pytorchReplicaSpecs[k].restartPolicy) || self.pytorchReplicaSpecs[k].restartPolicy != 'Always')",messageExpression="'pytorchReplicaSpecs[' + self.pytorchReplicaSpecs.filter(k, has(self.pytorchReplicaSpecs[k].restartPolicy) && self.pytorchReplicaSpecs[k].restartPolicy == 'Always')[0] + '].restartPolicy: Always is not allowed with runPolicy.gangPolicy.restartPolicy Gang (the kubelet would restart the member outside the gang); use OnFailure, ExitCode or Never'",fieldPath=".pytorchReplicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.topology) || !has(self.runPolicy.gangPolicy.topology.replicaTypes) || self.runPolicy.gangPolicy.topology.replicaTypes.all(k, self.pytorchReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.topology.replicaTypes: ' + self.runPolicy.gangPolicy.topology.replicaTypes.filter(k, !self.pytorchReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ' is not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.topology.replicaTypes"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.pytorchReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, !self.pytorchReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ']: not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.minMembers"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.pytorchReplicaSpecs.all(r, r.lowerAscii() != k.lowerAscii() || self.runPolicy.gangPolicy.minMembers[k] <= (has(self.pytorchReplicaSpecs[r].replicas) ? self.pytorchReplicaSpecs[r].replicas : 1)))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, self.pytorchReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii() && self.runPolicy.gangPolicy.minMembers[k] > (has(self.pytorchReplicaSpecs[r].replicas) ? self.pytorchReplicaSpecs[r].replicas : 1)))[0] + ']: must not be greater than the replicas of that replica type'",fieldPath=".runPolicy.gangPolicy.minMembers"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || self.pytorchReplicaSpecs.exists(k, k.lowerAscii() == 'worker')",message="pytorchReplicaSpecs[Worker]: required when elasticPolicy is set",fieldPath=".pytorchReplicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.nProcPerNode) || !has(self.nprocPerNode)",message="elasticPolicy.nProcPerNode: must not be set together with nprocPerNode (elasticPolicy.nProcPerNode is deprecated)",fieldPath=".elasticPolicy.nProcPerNode"
type PyTorchJobSpec struct {
	// RunPolicy holds the policies that apply to the whole job.
	// +optional
	RunPolicy RunPolicy `json:"runPolicy"`

	// ElasticPolicy makes the job elastic: torchrun rendezvous between
	// minReplicas and maxReplicas workers.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas >= 1",message="elasticPolicy.minReplicas: must be at least 1",fieldPath=".minReplicas"
	// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="elasticPolicy.maxReplicas: must not be smaller than elasticPolicy.minReplicas",fieldPath=".maxReplicas"
	// +kubebuilder:validation:XValidation:rule="!has(self.rdzvBackend) || self.rdzvBackend in ['c10d', 'etcd', 'etcd-v2']",message="elasticPolicy.rdzvBackend: must be one of c10d, etcd, etcd-v2",fieldPath=".rdzvBackend"
	// +kubebuilder:validation:XValidation:rule="!has(self.rdzvPort) || (self.rdzvPort >= 1 && self.rdzvPort <= 65535)",message="elasticPolicy.rdzvPort: must be between 1 and 65535",fieldPath=".rdzvPort"
	ElasticPolicy *kfv1.ElasticPolicy `json:"elasticPolicy,omitempty"`

	// PyTorchReplicaSpecs maps a replica type (Master, Worker) to its pods.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() in ['master', 'worker'])",messageExpression="'pytorchReplicaSpecs[' + self.filter(k, !(k.lowerAscii() in ['master', 'worker']))[0] + ']: unsupported replica type; supported: Master, Worker'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)",message="pytorchReplicaSpecs: a replica type appears twice with different letter case"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() != 'master' || !has(self[k].replicas) || self[k].replicas == 1)",message="pytorchReplicaSpecs[Master].replicas: must be 1"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].replicas) || self[k].replicas >= 0)",messageExpression="'pytorchReplicaSpecs[' + self.filter(k, has(self[k].replicas) && self[k].replicas < 0)[0] + '].replicas: must be greater than or equal to 0'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].restartPolicy) || self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode'])",messageExpression="'pytorchReplicaSpecs[' + self.filter(k, has(self[k].restartPolicy) && !(self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode']))[0] + '].restartPolicy: must be one of Always, OnFailure, Never, ExitCode'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, has(self[k].template) && has(self[k].template.spec) && size(self[k].template.spec.containers) > 0)",messageExpression="'pytorchReplicaSpecs[' + self.filter(k, !has(self[k].template) || !has(self[k].template.spec) || size(self[k].template.spec.containers) == 0)[0] + '].template.spec.containers: must have at least one container'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].template) || !has(self[k].template.spec) || size(self[k].template.spec.containers) == 0 || self[k].template.spec.containers.exists(c, c.name == 'pytorch'))",messageExpression="'pytorchReplicaSpecs[' + self.filter(k, has(self[k].template) && has(self[k].template.spec) && !self[k].template.spec.containers.exists(c, c.name == 'pytorch'))[0] + '].template.spec.containers: must have a container named \"pytorch\"'"
	PyTorchReplicaSpecs map[kfv1.ReplicaType]*kfv1.ReplicaSpec `json:"pytorchReplicaSpecs"`

	// NprocPerNode is the number of processes per node torchrun starts:
	// a number, "auto", "cpu" or "gpu". Defaults to "auto".
	// +optional
	NprocPerNode *string `json:"nprocPerNode,omitempty"`
}

// +kubebuilder:object:root=true

// PyTorchJobList is a list of PyTorchJobs.
type PyTorchJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PyTorchJob `json:"items"`
}

// Default fills in what upstream's defaulting fills in: canonical replica
// type names, replicas, restart policy, the pytorch container's port,
// cleanPodPolicy, elastic bounds and nprocPerNode. It uses upstream's own
// defaulting.
func (j *PyTorchJob) Default() {
	up := kfv1.PyTorchJob{Spec: kfv1.PyTorchJobSpec{
		RunPolicy:           j.Spec.RunPolicy.RunPolicy,
		ElasticPolicy:       j.Spec.ElasticPolicy,
		PyTorchReplicaSpecs: j.Spec.PyTorchReplicaSpecs,
		NprocPerNode:        j.Spec.NprocPerNode,
	}}
	kfv1.SetDefaults_PyTorchJob(&up)
	j.Spec.RunPolicy.RunPolicy = up.Spec.RunPolicy
	j.Spec.ElasticPolicy = up.Spec.ElasticPolicy
	j.Spec.PyTorchReplicaSpecs = up.Spec.PyTorchReplicaSpecs
	j.Spec.NprocPerNode = up.Spec.NprocPerNode
}

// ReplicaSpecs returns the job's replica specs by type.
func (j *PyTorchJob) ReplicaSpecs() map[ReplicaType]*ReplicaSpec { return j.Spec.PyTorchReplicaSpecs }

// GetRunPolicy returns the job's run policy.
func (j *PyTorchJob) GetRunPolicy() *RunPolicy { return &j.Spec.RunPolicy }

// GetJobStatus returns the job's status for the engine to update.
func (j *PyTorchJob) GetJobStatus() *JobStatus { return &j.Status }
