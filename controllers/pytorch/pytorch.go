// Package pytorch is the PyTorchJob adapter of the job engine: PyTorch's
// replica types, the torch.distributed and torchrun (PET_*) environment,
// and PyTorch's success rule.
package pytorch

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
)

// ControllerName is upstream's name for the PyTorchJob controller; pods
// carry it in the operator-name label.
const ControllerName = "pytorchjob-controller"

const (
	master = kubeflowv1.PyTorchJobReplicaTypeMaster
	worker = kubeflowv1.PyTorchJobReplicaTypeWorker

	// defaultRDZVBackend is the rendezvous backend upstream sets when the
	// elastic policy names none.
	defaultRDZVBackend = "c10d"
)

// Framework implements engine.Framework for PyTorchJob.
type Framework struct{}

var (
	_ engine.Framework        = Framework{}
	_ engine.ElasticFramework = Framework{}
)

func (Framework) ControllerName() string { return ControllerName }

// FrameworkName is training-operator's name for the framework.
func (Framework) FrameworkName() string { return kubeflowv1.PyTorchJobFrameworkName }

func (Framework) GroupVersionKind() schema.GroupVersionKind {
	return kubeflowv1.GroupVersion.WithKind(kubeflowv1.PyTorchJobKind)
}

func (Framework) NewJob() engine.Job { return &kubeflowv1.PyTorchJob{} }

func (Framework) ReplicaTypes() []kubeflowv1.ReplicaType {
	return []kubeflowv1.ReplicaType{master, worker}
}

func (Framework) MainContainerName(engine.Job) string {
	return kubeflowv1.PyTorchJobDefaultContainerName
}

func (Framework) ServicePort(job engine.Job, rtype kubeflowv1.ReplicaType) (corev1.ServicePort, bool) {
	return engine.NamedServicePort(kubeflowv1.PyTorchJobDefaultPortName, port(job, rtype)), true
}

// IsMaster: the master when there is one; otherwise worker 0, as upstream
// labels it, so that tools which look a job's logs up by the master role
// (the Kubeflow SDK) find a pod for worker-only and elastic jobs too.
func (Framework) IsMaster(job engine.Job, rtype kubeflowv1.ReplicaType, index int) bool {
	if hasMaster(job) {
		return rtype == master
	}
	return rtype == worker && index == 0
}

// ConfigurePod sets the variables torch.distributed and torchrun read on
// the pytorch container; variables the user set in the template win.
func (Framework) ConfigurePod(job engine.Job, rtype kubeflowv1.ReplicaType, index int, pod *corev1.Pod) error {
	pj, ok := job.(*kubeflowv1.PyTorchJob)
	if !ok {
		return fmt.Errorf("%T is not a PyTorchJob", job)
	}
	engine.SetEnv(pod, kubeflowv1.PyTorchJobDefaultContainerName, podEnv(pj, rtype, index)...)
	return nil
}

// Outcome follows upstream: with a master, the master alone decides. Without
// one, the job succeeds when every worker has or, for an elastic job, as
// soon as any worker has: a torchrun agent exits 0 only once its whole
// rendezvous group has finished, and the group may be smaller than the
// replicas asked for.
func (Framework) Outcome(job engine.Job, replicas engine.Replicas) engine.Outcome {
	if m, ok := replicas[master]; ok {
		return engine.Outcome{Succeeded: replicas.AllSucceeded(master), Running: m.Running > 0}
	}
	w, ok := replicas[worker]
	if !ok {
		return engine.Outcome{}
	}
	elastic := job.(*kubeflowv1.PyTorchJob).Spec.ElasticPolicy != nil
	return engine.Outcome{
		Succeeded: replicas.AllSucceeded(worker) || (elastic && w.Succeeded > 0),
		Running:   w.Running > 0,
	}
}

// ElasticMin: an elastic job's workers, down to elasticPolicy.minReplicas
// (defaulting sets it from maxReplicas or the worker replicas). The master
// is never elastic: it hosts the store every worker joins.
func (Framework) ElasticMin(job engine.Job, rtype kubeflowv1.ReplicaType) (int32, bool) {
	ep := job.(*kubeflowv1.PyTorchJob).Spec.ElasticPolicy
	if rtype != worker || ep == nil || ep.MinReplicas == nil {
		return 0, false
	}
	return *ep.MinReplicas, true
}

// Expendable: every worker of an elastic job but the one that hosts the
// c10d rendezvous (worker 0, unless elasticPolicy.rdzvHost names another
// host or the backend is etcd): the others join it, and torchrun cannot
// go on without it.
func (Framework) Expendable(job engine.Job, rtype kubeflowv1.ReplicaType, index int) bool {
	ep := job.(*kubeflowv1.PyTorchJob).Spec.ElasticPolicy
	if rtype != worker || ep == nil {
		return false
	}
	hostsRendezvous := index == 0 && ep.RDZVHost == nil && (ep.RDZVBackend == nil || string(*ep.RDZVBackend) == defaultRDZVBackend)
	return !hostsRendezvous
}

func hasMaster(job engine.Job) bool { return job.ReplicaSpecs()[master] != nil }

// port is the pytorchjob-port of a replica type's pytorch container, or
// the default; defaulting puts it on every container that lacks it.
func port(job engine.Job, rtype kubeflowv1.ReplicaType) int32 {
	spec := job.ReplicaSpecs()[rtype]
	if spec == nil {
		return kubeflowv1.PyTorchJobDefaultPort
	}
	return engine.ReplicaPort(spec, kubeflowv1.PyTorchJobDefaultContainerName, kubeflowv1.PyTorchJobDefaultPortName, kubeflowv1.PyTorchJobDefaultPort)
}

// podEnv returns the variables of one member, in upstream's order. The job
// is defaulted, as the engine passes it.
func podEnv(job *kubeflowv1.PyTorchJob, rtype kubeflowv1.ReplicaType, index int) []corev1.EnvVar {
	// Python buffers stdout when it is not a terminal; logs would show up
	// late or, on a crash, never.
	env := []corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "1"}}
	total := int(engine.TotalReplicas(job))

	// The master hosts torch.distributed's TCP store, so only a job with a
	// master gets static ranks; without one, torchrun's rendezvous assigns
	// them.
	if hasMaster(job) {
		addr := engine.ReplicaName(job.Name, master, 0)
		masterPort := strconv.Itoa(int(port(job, master)))
		// The master is rank 0, so workers count from 1.
		rank := index
		if rtype == worker {
			rank++
		}
		env = append(env,
			corev1.EnvVar{Name: "MASTER_PORT", Value: masterPort},
			corev1.EnvVar{Name: "PET_MASTER_PORT", Value: masterPort},
			corev1.EnvVar{Name: "MASTER_ADDR", Value: addr},
			corev1.EnvVar{Name: "PET_MASTER_ADDR", Value: addr},
			corev1.EnvVar{Name: "WORLD_SIZE", Value: strconv.Itoa(total * nprocPerNode(job))},
			corev1.EnvVar{Name: "RANK", Value: strconv.Itoa(rank)},
			corev1.EnvVar{Name: "PET_NODE_RANK", Value: strconv.Itoa(rank)},
		)
	}
	if job.Spec.NprocPerNode != nil {
		env = append(env, corev1.EnvVar{Name: "PET_NPROC_PER_NODE", Value: *job.Spec.NprocPerNode})
	}
	if job.Spec.ElasticPolicy != nil {
		return append(env, elasticEnv(job)...)
	}
	return append(env, corev1.EnvVar{Name: "PET_NNODES", Value: strconv.Itoa(total)})
}

// nprocPerNode is spec.nprocPerNode when it is a number, else 1: with
// "auto", "cpu" or "gpu" torchrun counts the processes itself and
// WORLD_SIZE counts nodes, as upstream does.
func nprocPerNode(job *kubeflowv1.PyTorchJob) int {
	if job.Spec.NprocPerNode == nil {
		return 1
	}
	if n, err := strconv.Atoi(*job.Spec.NprocPerNode); err == nil {
		return n
	}
	return 1
}

// elasticEnv returns torchrun's rendezvous settings for an elastic job.
func elasticEnv(job *kubeflowv1.PyTorchJob) []corev1.EnvVar {
	ep := job.Spec.ElasticPolicy
	// Worker 0 hosts the c10d rendezvous unless the user runs one elsewhere.
	host := engine.ReplicaName(job.Name, worker, 0)
	if ep.RDZVHost != nil {
		host = *ep.RDZVHost
	}
	rdzvPort := port(job, worker)
	if ep.RDZVPort != nil {
		rdzvPort = *ep.RDZVPort
	}
	backend := defaultRDZVBackend
	if ep.RDZVBackend != nil {
		backend = string(*ep.RDZVBackend)
	}
	env := []corev1.EnvVar{
		{Name: "PET_RDZV_ENDPOINT", Value: fmt.Sprintf("%s:%d", host, rdzvPort)},
		{Name: "PET_RDZV_BACKEND", Value: backend},
		{Name: "PET_NNODES", Value: elasticNNodes(job)},
	}
	if ep.MaxRestarts != nil {
		env = append(env, corev1.EnvVar{Name: "PET_MAX_RESTARTS", Value: strconv.Itoa(int(*ep.MaxRestarts))})
	}
	// The deprecated field; the schema rejects it together with
	// spec.nprocPerNode, so the variable is never set twice.
	if ep.NProcPerNode != nil {
		env = append(env, corev1.EnvVar{Name: "PET_NPROC_PER_NODE", Value: strconv.Itoa(int(*ep.NProcPerNode))})
	}
	// Without an id torchrun uses its own default, which is the same on
	// every member; upstream sets none.
	if ep.RDZVID != nil {
		env = append(env, corev1.EnvVar{Name: "PET_RDZV_ID", Value: *ep.RDZVID})
	}
	if len(ep.RDZVConf) > 0 {
		kv := make([]string, len(ep.RDZVConf))
		for i, c := range ep.RDZVConf {
			kv[i] = c.Key + "=" + c.Value
		}
		env = append(env, corev1.EnvVar{Name: "PET_RDZV_CONF", Value: strings.Join(kv, ",")})
	}
	// torchrun's --standalone is a flag: present means on, whatever the value.
	if ep.Standalone != nil && *ep.Standalone {
		env = append(env, corev1.EnvVar{Name: "PET_STANDALONE", Value: ""})
	}
	return env
}

// elasticNNodes is torchrun's "min:max" node range. Defaulting sets both
// bounds (one from the other, or both from the worker replicas); a policy
// without bounds gets the plain worker count, as upstream writes it.
func elasticNNodes(job *kubeflowv1.PyTorchJob) string {
	lo, hi := job.Spec.ElasticPolicy.MinReplicas, job.Spec.ElasticPolicy.MaxReplicas
	if lo == nil && hi == nil {
		var n int32
		if w := job.Spec.PyTorchReplicaSpecs[worker]; w != nil && w.Replicas != nil {
			n = *w.Replicas
		}
		return strconv.Itoa(int(n))
	}
	if lo == nil {
		lo = hi
	}
	if hi == nil {
		hi = lo
	}
	return fmt.Sprintf("%d:%d", *lo, *hi)
}
