// Package engine is the framework-agnostic job engine behind the TFJob,
// PyTorchJob and MPIJob controllers. It turns replica specs into pods and
// headless services, keeps replica statuses and job conditions, applies the
// replica restart policies, backoffLimit, activeDeadlineSeconds,
// ttlSecondsAfterFinished, cleanPodPolicy and suspend, and writes status
// once per reconcile.
//
// A Framework states only what differs between the kinds: replica types,
// the environment a pod needs to find its peers, ports and success rules.
package engine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// Job is a kubeflow.org/v1 job as the engine sees it.
type Job interface {
	client.Object
	// Default fills in upstream's defaults on an in-memory copy.
	Default()
	ReplicaSpecs() map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec
	GetRunPolicy() *kubeflowv1.RunPolicy
	GetJobStatus() *kubeflowv1.JobStatus
}

// Framework is what a TFJob, PyTorchJob or MPIJob adapter supplies.
type Framework interface {
	// ControllerName names the controller; it is also the value of the
	// training.kubeflow.org/operator-name label, as upstream sets it.
	ControllerName() string
	// FrameworkName names the ML framework as training-operator does in
	// its metrics' framework label (kubeflowv1.*FrameworkName).
	FrameworkName() string
	// GroupVersionKind is the job kind, for owner references and events.
	GroupVersionKind() schema.GroupVersionKind
	// NewJob returns an empty job of the kind.
	NewJob() Job
	// ReplicaTypes lists the kind's replica types, the master, chief or
	// launcher first: the engine creates and reports them in this order.
	ReplicaTypes() []kubeflowv1.ReplicaType
	// MainContainerName names the container that carries the framework's
	// port and environment and whose exit code decides restarts.
	MainContainerName(job Job) string
	// ServicePort returns the port that each replica's headless service
	// exposes, and false when the replica type gets no service.
	ServicePort(job Job, rtype kubeflowv1.ReplicaType) (corev1.ServicePort, bool)
	// IsMaster reports whether a replica is the job's master; its pod gets
	// the training.kubeflow.org/job-role=master label.
	IsMaster(job Job, rtype kubeflowv1.ReplicaType, index int) bool
	// ConfigurePod adds what a member needs to find the rest of the job
	// (TF_CONFIG, MASTER_ADDR, hostfile volumes, ...).
	ConfigurePod(job Job, rtype kubeflowv1.ReplicaType, index int, pod *corev1.Pod) error
	// Outcome applies the kind's success rule to the replicas' state.
	Outcome(job Job, replicas Replicas) Outcome
}

// DependentsReconciler is implemented by frameworks that need objects
// besides pods and services (MPI's hostfile ConfigMap and launcher RBAC).
type DependentsReconciler interface {
	// ReconcileDependents creates or updates the objects, owned by the job.
	ReconcileDependents(ctx context.Context, c client.Client, job Job) error
	// DependentTypes lists the object types to watch for the job.
	DependentTypes() []client.Object
}

// ElasticFramework is implemented by frameworks whose jobs may run with
// fewer members of a replica type than they ask for (a PyTorchJob under
// elasticPolicy: torchrun's rendezvous admits between minReplicas and
// maxReplicas workers). The gang then waits only for the minimum, the
// members above it are placed when room appears, and under a Gang restart
// policy losing one of them replaces it alone (see elastic.go).
type ElasticFramework interface {
	// ElasticMin returns the fewest members of rtype the job runs with,
	// and false when rtype is not elastic in this job.
	ElasticMin(job Job, rtype kubeflowv1.ReplicaType) (int32, bool)
	// Expendable reports whether the job runs on without the member of an
	// elastic role while the minimum holds: false for a member the others
	// depend on (the host of their rendezvous).
	Expendable(job Job, rtype kubeflowv1.ReplicaType, index int) bool
}

// elasticMin is the framework's elastic minimum for rtype, nil when the
// role is not elastic.
func elasticMin(fw Framework, job Job, rtype kubeflowv1.ReplicaType) *int32 {
	e, ok := fw.(ElasticFramework)
	if !ok {
		return nil
	}
	if n, ok := e.ElasticMin(job, rtype); ok {
		return &n
	}
	return nil
}

// PodNamer is implemented by frameworks whose upstream names a pod other
// than "<job>-<type>-<index>": MPI's launcher is "<job>-launcher", and
// users' scripts run kubectl logs on that name.
type PodNamer interface {
	PodName(job Job, rtype kubeflowv1.ReplicaType, index int) string
}

// podName is the name of a replica's pod.
func podName(fw Framework, job Job, rtype kubeflowv1.ReplicaType, index int) string {
	if n, ok := fw.(PodNamer); ok {
		return n.PodName(job, rtype, index)
	}
	return ReplicaName(job.GetName(), rtype, index)
}

// Outcome is a framework's verdict on a job that has not failed.
type Outcome struct {
	// Succeeded is true when the kind's success rule holds.
	Succeeded bool
	// Running is true when the job's deciding role is running.
	Running bool
}

// ReplicaState is what the engine observed of one replica type this pass.
type ReplicaState struct {
	// Replicas is the desired number of pods.
	Replicas int32
	// Running, Succeeded and Failed count current pods by phase.
	Running, Succeeded, Failed int32
	// SucceededIndexes holds the indexes of pods that succeeded.
	SucceededIndexes map[int]bool
}

// Replicas is the observed state of every replica type of a job.
type Replicas map[kubeflowv1.ReplicaType]ReplicaState

// AllSucceeded reports whether every pod of rtype succeeded.
func (r Replicas) AllSucceeded(rtype kubeflowv1.ReplicaType) bool {
	s, ok := r[rtype]
	return ok && s.Succeeded >= s.Replicas
}

// allUp reports whether every desired pod is running or has succeeded.
func (r Replicas) allUp() bool {
	for _, s := range r {
		if s.Running+s.Succeeded < s.Replicas {
			return false
		}
	}
	return true
}
