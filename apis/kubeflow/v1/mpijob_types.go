package v1

import (
	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MPIJob kind, framework name (the framework label of training-operator's
// metrics), replica types and container, as upstream names them.
const (
	MPIJobKind                             = kfv1.MPIJobKind
	MPIJobFrameworkName                    = kfv1.MPIJobFrameworkName
	MPIJobReplicaTypeLauncher  ReplicaType = kfv1.MPIJobReplicaTypeLauncher
	MPIJobReplicaTypeWorker    ReplicaType = kfv1.MPIJobReplicaTypeWorker
	MPIJobDefaultContainerName             = kfv1.MPIJobDefaultContainerName
)

// MPIJob runs an MPI (Open MPI, Intel MPI, Horovod) job: one launcher that
// starts ranks on the workers through kubectl exec.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// (Printer columns: hack/crdtrim sets them, the same for every job kind.)
type MPIJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec MPIJobSpec `json:"spec,omitempty"`
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// MPIJobSpec is upstream's MPIJobSpec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.schedulingPolicy) || !has(self.runPolicy.schedulingPolicy.minAvailable) || self.runPolicy.schedulingPolicy.minAvailable <= self.mpiReplicaSpecs.map(k, has(self.mpiReplicaSpecs[k].replicas) ? self.mpiReplicaSpecs[k].replicas : (k.lowerAscii() == 'launcher' ? 1 : 0)).sum()",message="runPolicy.schedulingPolicy.minAvailable: must not be larger than the total number of replicas",fieldPath=".runPolicy.schedulingPolicy.minAvailable"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.restartPolicy) || self.runPolicy.gangPolicy.restartPolicy != 'Gang' || self.mpiReplicaSpecs.all(k, !has(self.mpiReplicaSpecs[k].restartPolicy) || self.mpiReplicaSpecs[k].restartPolicy != 'Always')",messageExpression="'mpiReplicaSpecs[' + self.mpiReplicaSpecs.filter(k, has(self.mpiReplicaSpecs[k].restartPolicy) && self.mpiReplicaSpecs[k].restartPolicy == 'Always')[0] + '].restartPolicy: Always is not allowed with runPolicy.gangPolicy.restartPolicy Gang (the kubelet would restart the member outside the gang); use OnFailure, ExitCode or Never'",fieldPath=".mpiReplicaSpecs"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.topology) || !has(self.runPolicy.gangPolicy.topology.replicaTypes) || self.runPolicy.gangPolicy.topology.replicaTypes.all(k, self.mpiReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.topology.replicaTypes: ' + self.runPolicy.gangPolicy.topology.replicaTypes.filter(k, !self.mpiReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ' is not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.topology.replicaTypes"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.mpiReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, !self.mpiReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii()))[0] + ']: not a replica type of this job'",fieldPath=".runPolicy.gangPolicy.minMembers"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.gangPolicy) || !has(self.runPolicy.gangPolicy.minMembers) || self.runPolicy.gangPolicy.minMembers.all(k, self.mpiReplicaSpecs.all(r, r.lowerAscii() != k.lowerAscii() || self.runPolicy.gangPolicy.minMembers[k] <= (has(self.mpiReplicaSpecs[r].replicas) ? self.mpiReplicaSpecs[r].replicas : 1)))",messageExpression="'runPolicy.gangPolicy.minMembers[' + self.runPolicy.gangPolicy.minMembers.filter(k, self.mpiReplicaSpecs.exists(r, r.lowerAscii() == k.lowerAscii() && self.runPolicy.gangPolicy.minMembers[k] > (has(self.mpiReplicaSpecs[r].replicas) ? self.mpiReplicaSpecs[r].replicas : 1)))[0] + ']: must not be greater than the replicas of that replica type'",fieldPath=".runPolicy.gangPolicy.minMembers"
type MPIJobSpec struct {
	// SlotsPerWorker is the number of MPI slots each worker offers in the
	// hostfile. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SlotsPerWorker *int32 `json:"slotsPerWorker,omitempty"`

	// CleanPodPolicy is deprecated upstream in favour of
	// runPolicy.cleanPodPolicy, which wins when both are set.
	// +optional
	// +kubebuilder:validation:Enum=All;Running;None
	CleanPodPolicy *kfv1.CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// MPIReplicaSpecs maps a replica type (Launcher, Worker) to its pods.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() in ['launcher', 'worker'])",messageExpression="'mpiReplicaSpecs[' + self.filter(k, !(k.lowerAscii() in ['launcher', 'worker']))[0] + ']: unsupported replica type; supported: Launcher, Worker'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)",message="mpiReplicaSpecs: a replica type appears twice with different letter case"
	// +kubebuilder:validation:XValidation:rule="self.exists(k, k.lowerAscii() == 'launcher')",message="mpiReplicaSpecs[Launcher]: required"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() != 'launcher' || !has(self[k].replicas) || self[k].replicas == 1)",message="mpiReplicaSpecs[Launcher].replicas: must be 1 (exactly one launcher)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].replicas) || self[k].replicas >= 0)",messageExpression="'mpiReplicaSpecs[' + self.filter(k, has(self[k].replicas) && self[k].replicas < 0)[0] + '].replicas: must be greater than or equal to 0'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !has(self[k].restartPolicy) || self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode'])",messageExpression="'mpiReplicaSpecs[' + self.filter(k, has(self[k].restartPolicy) && !(self[k].restartPolicy in ['Always', 'OnFailure', 'Never', 'ExitCode']))[0] + '].restartPolicy: must be one of Always, OnFailure, Never, ExitCode'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, has(self[k].template) && has(self[k].template.spec) && size(self[k].template.spec.containers) > 0)",messageExpression="'mpiReplicaSpecs[' + self.filter(k, !has(self[k].template) || !has(self[k].template.spec) || size(self[k].template.spec.containers) == 0)[0] + '].template.spec.containers: must have at least one container'"
	MPIReplicaSpecs map[kfv1.ReplicaType]*kfv1.ReplicaSpec `json:"mpiReplicaSpecs"`

	// MainContainer names the container that runs mpirun on the launcher
	// and whose exit code decides ExitCode restarts. Defaults to "mpi", or
	// the first container when none is called that.
	// +optional
	MainContainer string `json:"mainContainer,omitempty"`

	// RunPolicy holds the policies that apply to the whole job.
	// +optional
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`
}

// +kubebuilder:object:root=true

// MPIJobList is a list of MPIJobs.
type MPIJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MPIJob `json:"items"`
}

// Default fills in what upstream's defaulting fills in: canonical replica
// type names, replicas (one launcher, zero workers), restart policy and
// cleanPodPolicy; it also settles the deprecated spec.cleanPodPolicy into
// runPolicy.cleanPodPolicy, which the engine reads.
func (j *MPIJob) Default() {
	canonicalizeReplicaTypes(j.Spec.MPIReplicaSpecs, MPIJobReplicaTypeLauncher, MPIJobReplicaTypeWorker)
	if j.Spec.RunPolicy.CleanPodPolicy == nil {
		j.Spec.RunPolicy.CleanPodPolicy = j.Spec.CleanPodPolicy
	}
	up := kfv1.MPIJob{Spec: kfv1.MPIJobSpec{
		CleanPodPolicy:  j.Spec.CleanPodPolicy,
		MPIReplicaSpecs: j.Spec.MPIReplicaSpecs,
		RunPolicy:       j.Spec.RunPolicy.RunPolicy,
	}}
	kfv1.SetDefaults_MPIJob(&up)
	j.Spec.CleanPodPolicy = up.Spec.CleanPodPolicy
	j.Spec.RunPolicy.RunPolicy = up.Spec.RunPolicy
	if j.Spec.SlotsPerWorker == nil {
		one := int32(1)
		j.Spec.SlotsPerWorker = &one
	}
}

// ReplicaSpecs returns the job's replica specs by type.
func (j *MPIJob) ReplicaSpecs() map[ReplicaType]*ReplicaSpec { return j.Spec.MPIReplicaSpecs }

// GetRunPolicy returns the job's run policy.
func (j *MPIJob) GetRunPolicy() *RunPolicy { return &j.Spec.RunPolicy }

// GetJobStatus returns the job's status for the engine to update.
func (j *MPIJob) GetJobStatus() *JobStatus { return &j.Status }
