package soak

import (
	"fmt"
	"math/rand/v2"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/localcluster"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// jobSpec is a job the driver applies: what it chose, for the report and
// the faults.
type jobSpec struct {
	kind string
	obj  client.Object
	// gang: gangPolicy.restartPolicy Gang; elastic: a PyTorchJob with an
	// elasticPolicy below its workers.
	gang, elastic bool
	// pods is how many pods the job has.
	pods int
}

// pick returns one of the choices, weighted.
func pick[T any](rng *rand.Rand, choices []T, weights []float64) T {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := rng.Float64() * total
	for i, w := range weights {
		if x < w {
			return choices[i]
		}
		x -= w
	}
	return choices[len(choices)-1]
}

// between returns an integer in [lo, hi].
func between(rng *rand.Rand, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }

// cpuReplica is a replica that runs on the CPU pool.
func cpuReplica(rng *rand.Rand, n int32, container string, policy kubeflowv1.RestartPolicy) *kubeflowv1.ReplicaSpec {
	return testutil.MakeReplica(n, container).RestartPolicy(policy).
		Request(corev1.ResourceCPU, fmt.Sprint(between(rng, 1, 3))).
		Request(corev1.ResourceMemory, fmt.Sprintf("%dGi", between(rng, 2, 8))).
		NodeSelector(localcluster.PoolLabel, localcluster.PoolCPU).Obj()
}

// gpuReplica is a replica of GPU pods, which tolerate the GPU taint.
func gpuReplica(rng *rand.Rand, n int32, gpus int, container string, policy kubeflowv1.RestartPolicy) *kubeflowv1.ReplicaSpec {
	r := testutil.MakeReplica(n, container).RestartPolicy(policy).
		Request(corev1.ResourceCPU, fmt.Sprint(between(rng, 2, 6))).
		Request(corev1.ResourceMemory, fmt.Sprintf("%dGi", between(rng, 8, 48))).
		Limit(localcluster.GPUResource, fmt.Sprint(gpus)).
		NodeSelector(localcluster.PoolLabel, localcluster.PoolGPU).
		PodSpec(func(s *corev1.PodSpec) {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: string(localcluster.GPUResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}).Obj()
	return r
}

// randomJob returns the n-th job: a TFJob (CPU chief, GPU workers), a
// PyTorchJob (CPU or GPU master, GPU workers; sometimes elastic) or an
// MPIJob (CPU launcher,
// GPU workers), restarted as a whole gang or pod by pod, sometimes with a
// per-role minimum, a priority, a TTL. Its shape is drawn so that a few
// such jobs fill the GPU nodes, and none needs more than a node per pod.
func randomJob(rng *rand.Rand, n int) jobSpec {
	gang := rng.Float64() < 0.6
	policies := []kubeflowv1.RestartPolicy{kfv1.RestartPolicyExitCode, kfv1.RestartPolicyOnFailure, kfv1.RestartPolicyNever}
	policy := func() kubeflowv1.RestartPolicy {
		if gang {
			return pick(rng, policies, []float64{0.7, 0.2, 0.1})
		}
		return pick(rng, policies, []float64{0.5, 0.4, 0.1})
	}
	gpus := pick(rng, []int{1, 2, 4}, []float64{0.3, 0.45, 0.25})
	kind := pick(rng, []string{kubeflowv1.TFJobKind, kubeflowv1.PyTorchJobKind, kubeflowv1.MPIJobKind}, []float64{0.35, 0.4, 0.25})

	rp := kubeflowv1.RunPolicy{}
	rp.CleanPodPolicy = ptr.To(pick(rng, []kubeflowv1.CleanPodPolicy{"All", "Running", "None"}, []float64{0.4, 0.3, 0.3}))
	if rng.Float64() < 0.2 {
		rp.TTLSecondsAfterFinished = ptr.To(int32(30))
	}
	gp := &kubeflowv1.GangPolicy{RestartPolicy: kubeflowv1.GangRestartPolicyPod}
	if gang {
		gp.RestartPolicy = kubeflowv1.GangRestartPolicyGang
		gp.MaxRestarts = ptr.To(int32(between(rng, 2, 6)))
		if rng.Float64() < 0.3 {
			gp.MaxDisruptions = ptr.To(int32(between(rng, 3, 8)))
		}
		gp.Backoff = &kubeflowv1.GangBackoff{InitialSeconds: ptr.To(int32(between(rng, 1, 3))), MaxSeconds: ptr.To(int32(10))}
		gp.NodeLostTimeoutSeconds = ptr.To(int32(15))
		gp.PartialGangTimeoutSeconds = ptr.To(int32(60))
	}
	rp.GangPolicy = gp
	priority := pick(rng, []string{priorityHigh, priorityLow, ""}, []float64{0.3, 0.3, 0.4})
	if priority != "" {
		rp.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{PriorityClass: priority}
	}

	var specs map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec
	var workerType kubeflowv1.ReplicaType
	workers := int32(between(rng, 1, 4))
	name := ""
	switch kind {
	case kubeflowv1.TFJobKind:
		name = fmt.Sprintf("tf-%04d", n)
		workerType = kubeflowv1.TFJobReplicaTypeWorker
		specs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.TFJobReplicaTypeChief: cpuReplica(rng, 1, kubeflowv1.TFJobDefaultContainerName, policy()),
			workerType:                       gpuReplica(rng, workers, gpus, kubeflowv1.TFJobDefaultContainerName, policy()),
		}
	case kubeflowv1.PyTorchJobKind:
		name = fmt.Sprintf("pt-%04d", n)
		workerType = kubeflowv1.PyTorchJobReplicaTypeWorker
		master := cpuReplica(rng, 1, kubeflowv1.PyTorchJobDefaultContainerName, policy())
		if rng.Float64() < 0.5 {
			master = gpuReplica(rng, 1, 1, kubeflowv1.PyTorchJobDefaultContainerName, policy())
		}
		specs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.PyTorchJobReplicaTypeMaster: master,
			workerType:                             gpuReplica(rng, workers, gpus, kubeflowv1.PyTorchJobDefaultContainerName, policy()),
		}
	default:
		name = fmt.Sprintf("mpi-%04d", n)
		workerType = kubeflowv1.MPIJobReplicaTypeWorker
		workers = int32(between(rng, 2, 4))
		specs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			kubeflowv1.MPIJobReplicaTypeLauncher: cpuReplica(rng, 1, kubeflowv1.MPIJobDefaultContainerName, policy()),
			workerType:                           gpuReplica(rng, workers, gpus, kubeflowv1.MPIJobDefaultContainerName, policy()),
		}
	}
	// A per-role minimum: the gang may start, and go on, with one worker
	// short.
	if workers >= 2 && rng.Float64() < 0.3 {
		gp.MinMembers = map[kubeflowv1.ReplicaType]int32{workerType: workers - 1}
	}
	// An elastic PyTorchJob of 2 to 4 workers, down to 1 or 2 of them: an
	// elastic gang, whose members above the minimum are replaced alone.
	var elastic *kubeflowv1.ElasticPolicy
	if kind == kubeflowv1.PyTorchJobKind && workers >= 2 && rng.Float64() < 0.3 {
		elastic = &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To(int32(between(rng, 1, int(workers)-1))), MaxReplicas: ptr.To(workers)}
	}
	if priority != "" {
		for _, s := range specs {
			s.Template.Spec.PriorityClassName = priority
		}
	}
	// The kubelet would wait this long for a deleted pod's program; kwok
	// does not, but the grace is part of the pod the scheduler sees.
	for _, s := range specs {
		s.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(5))
	}

	var obj client.Object
	switch kind {
	case kubeflowv1.TFJobKind:
		b := testutil.MakeTFJob(name, namespace)
		for t, s := range specs {
			b.ReplicaSpec(t, s)
		}
		j := b.Obj()
		j.Spec.RunPolicy = rp
		obj = j
	case kubeflowv1.PyTorchJobKind:
		b := testutil.MakePyTorchJob(name, namespace)
		for t, s := range specs {
			b.ReplicaSpec(t, s)
		}
		j := b.Obj()
		j.Spec.RunPolicy = rp
		j.Spec.ElasticPolicy = elastic
		obj = j
	default:
		b := testutil.MakeMPIJob(name, namespace).SlotsPerWorker(int32(gpus))
		for t, s := range specs {
			b.ReplicaSpec(t, s)
		}
		j := b.Obj()
		j.Spec.RunPolicy = rp
		obj = j
	}
	return jobSpec{kind: kind, obj: obj, gang: gang, elastic: elastic != nil, pods: int(workers) + 1}
}
