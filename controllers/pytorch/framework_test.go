package pytorch_test

import (
	"testing"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	master = kubeflowv1.PyTorchJobReplicaTypeMaster
	worker = kubeflowv1.PyTorchJobReplicaTypeWorker
)

// vars builds an env list from name/value pairs, in order.
func vars(kv ...string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// configure defaults the job, as the engine does, builds the pod of one
// replica from its template and lets the adapter configure it.
func configure(t *testing.T, job *kubeflowv1.PyTorchJob, rtype kubeflowv1.ReplicaType, index int) *corev1.Pod {
	t.Helper()
	job.Default()
	pod := &corev1.Pod{Spec: *job.Spec.PyTorchReplicaSpecs[rtype].Template.Spec.DeepCopy()}
	if err := (pytorch.Framework{}).ConfigurePod(job, rtype, index, pod); err != nil {
		t.Fatalf("ConfigurePod: %v", err)
	}
	return pod
}

func TestPodEnv(t *testing.T) {
	cases := map[string]struct {
		job   *kubeflowv1.PyTorchJob
		rtype kubeflowv1.ReplicaType
		index int
		want  []corev1.EnvVar
	}{
		"master of Master+Worker": {
			job:   testutil.MakePyTorchJob("mnist", "ns").Replica(master, 1).Replica(worker, 2).Obj(),
			rtype: master, index: 0,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "mnist-master-0", "PET_MASTER_ADDR", "mnist-master-0",
				"WORLD_SIZE", "3", "RANK", "0", "PET_NODE_RANK", "0",
				"PET_NPROC_PER_NODE", "auto",
				"PET_NNODES", "3",
			),
		},
		"worker 1 of Master+Worker ranks after the master": {
			job:   testutil.MakePyTorchJob("mnist", "ns").Replica(master, 1).Replica(worker, 2).Obj(),
			rtype: worker, index: 1,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "mnist-master-0", "PET_MASTER_ADDR", "mnist-master-0",
				"WORLD_SIZE", "3", "RANK", "2", "PET_NODE_RANK", "2",
				"PET_NPROC_PER_NODE", "auto",
				"PET_NNODES", "3",
			),
		},
		"the master's own pytorchjob-port is MASTER_PORT": {
			job: testutil.MakePyTorchJob("mnist", "ns").
				ReplicaSpec(master, testutil.MakeReplica(1, "pytorch").Port("pytorchjob-port", 3333).Obj()).
				Replica(worker, 1).Obj(),
			rtype: worker, index: 0,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "3333", "PET_MASTER_PORT", "3333",
				"MASTER_ADDR", "mnist-master-0", "PET_MASTER_ADDR", "mnist-master-0",
				"WORLD_SIZE", "2", "RANK", "1", "PET_NODE_RANK", "1",
				"PET_NPROC_PER_NODE", "auto",
				"PET_NNODES", "2",
			),
		},
		"a numeric nprocPerNode multiplies WORLD_SIZE": {
			job:   testutil.MakePyTorchJob("ddp", "ns").Replica(master, 1).Replica(worker, 3).NprocPerNode("4").Obj(),
			rtype: worker, index: 2,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "ddp-master-0", "PET_MASTER_ADDR", "ddp-master-0",
				"WORLD_SIZE", "16", "RANK", "3", "PET_NODE_RANK", "3",
				"PET_NPROC_PER_NODE", "4",
				"PET_NNODES", "4",
			),
		},
		"a symbolic nprocPerNode leaves WORLD_SIZE counting nodes": {
			job:   testutil.MakePyTorchJob("ddp", "ns").Replica(master, 1).Replica(worker, 1).NprocPerNode("gpu").Obj(),
			rtype: master, index: 0,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "ddp-master-0", "PET_MASTER_ADDR", "ddp-master-0",
				"WORLD_SIZE", "2", "RANK", "0", "PET_NODE_RANK", "0",
				"PET_NPROC_PER_NODE", "gpu",
				"PET_NNODES", "2",
			),
		},
		"workers only, not elastic: no master, no static rank": {
			job:   testutil.MakePyTorchJob("plain", "ns").Replica(worker, 2).Obj(),
			rtype: worker, index: 1,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"PET_NPROC_PER_NODE", "auto",
				"PET_NNODES", "2",
			),
		},
		"elastic with defaults: rendezvous on worker 0, bounds from the replicas": {
			job:   testutil.MakePyTorchJob("echo", "ns").Replica(worker, 3).ElasticPolicy(kubeflowv1.ElasticPolicy{}).Obj(),
			rtype: worker, index: 2,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"PET_NPROC_PER_NODE", "auto",
				"PET_RDZV_ENDPOINT", "echo-worker-0:23456",
				"PET_RDZV_BACKEND", "c10d",
				"PET_NNODES", "3:3",
			),
		},
		"elastic with every rendezvous setting": {
			job: testutil.MakePyTorchJob("elastic", "ns").Replica(worker, 2).ElasticPolicy(kubeflowv1.ElasticPolicy{
				MinReplicas:  ptr.To[int32](2),
				MaxReplicas:  ptr.To[int32](4),
				RDZVBackend:  ptr.To(kfv1.RDZVBackend("etcd-v2")),
				RDZVHost:     ptr.To("etcd.infra"),
				RDZVPort:     ptr.To[int32](2379),
				RDZVID:       ptr.To("run-42"),
				RDZVConf:     []kfv1.RDZVConf{{Key: "join_timeout", Value: "900"}, {Key: "read_timeout", Value: "60"}},
				Standalone:   ptr.To(true),
				NProcPerNode: ptr.To[int32](8),
				MaxRestarts:  ptr.To[int32](3),
			}).Obj(),
			rtype: worker, index: 0,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"PET_RDZV_ENDPOINT", "etcd.infra:2379",
				"PET_RDZV_BACKEND", "etcd-v2",
				"PET_NNODES", "2:4",
				"PET_MAX_RESTARTS", "3",
				"PET_NPROC_PER_NODE", "8",
				"PET_RDZV_ID", "run-42",
				"PET_RDZV_CONF", "join_timeout=900,read_timeout=60",
				"PET_STANDALONE", "",
			),
		},
		"elastic with a master gets both the master's and torchrun's settings": {
			job: testutil.MakePyTorchJob("mixed", "ns").Replica(master, 1).Replica(worker, 2).
				ElasticPolicy(kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](2)}).Obj(),
			rtype: worker, index: 0,
			want: vars(
				"PYTHONUNBUFFERED", "1",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "mixed-master-0", "PET_MASTER_ADDR", "mixed-master-0",
				"WORLD_SIZE", "3", "RANK", "1", "PET_NODE_RANK", "1",
				"PET_NPROC_PER_NODE", "auto",
				"PET_RDZV_ENDPOINT", "mixed-worker-0:23456",
				"PET_RDZV_BACKEND", "c10d",
				"PET_NNODES", "1:2",
			),
		},
		"variables the user set are left as set": {
			job: testutil.MakePyTorchJob("mine", "ns").Replica(master, 1).
				ReplicaSpec(worker, testutil.MakeReplica(1, "pytorch").Env("RANK", "7").Env("PYTHONUNBUFFERED", "0").Obj()).Obj(),
			rtype: worker, index: 0,
			want: vars(
				"RANK", "7", "PYTHONUNBUFFERED", "0",
				"MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
				"MASTER_ADDR", "mine-master-0", "PET_MASTER_ADDR", "mine-master-0",
				"WORLD_SIZE", "2", "PET_NODE_RANK", "1",
				"PET_NPROC_PER_NODE", "auto",
				"PET_NNODES", "2",
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := configure(t, tc.job, tc.rtype, tc.index)
			NewWithT(t).Expect(engine.MainContainer(&pod.Spec, "pytorch").Env).To(Equal(tc.want))
		})
	}
}

func TestPodEnvOnlyOnThePytorchContainer(t *testing.T) {
	spec := testutil.MakeReplica(1, "pytorch").Obj()
	spec.Template.Spec.Containers = append(spec.Template.Spec.Containers, corev1.Container{Name: "log-shipper", Image: "fluent-bit:3"})
	job := testutil.MakePyTorchJob("sidecar", "ns").Replica(master, 1).ReplicaSpec(worker, spec).Obj()

	pod := configure(t, job, worker, 0)
	g := NewWithT(t)
	g.Expect(pod.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "RANK", Value: "1"}))
	g.Expect(pod.Spec.Containers[1].Env).To(BeEmpty())
}

func TestIsMaster(t *testing.T) {
	withMaster := testutil.MakePyTorchJob("j", "ns").Replica(master, 1).Replica(worker, 2).Obj()
	workersOnly := testutil.MakePyTorchJob("j", "ns").Replica(worker, 2).ElasticPolicy(kubeflowv1.ElasticPolicy{}).Obj()
	cases := map[string]struct {
		job   *kubeflowv1.PyTorchJob
		rtype kubeflowv1.ReplicaType
		index int
		want  bool
	}{
		"the master":                           {withMaster, master, 0, true},
		"worker 0 beside a master":             {withMaster, worker, 0, false},
		"worker 0 without a master (upstream)": {workersOnly, worker, 0, true},
		"worker 1 without a master":            {workersOnly, worker, 1, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(pytorch.Framework{}.IsMaster(tc.job, tc.rtype, tc.index)).To(Equal(tc.want))
		})
	}
}

func TestOutcome(t *testing.T) {
	withMaster := testutil.MakePyTorchJob("j", "ns").Replica(master, 1).Replica(worker, 2).Obj()
	workersOnly := testutil.MakePyTorchJob("j", "ns").Replica(worker, 2).Obj()
	elastic := testutil.MakePyTorchJob("j", "ns").Replica(worker, 2).ElasticPolicy(kubeflowv1.ElasticPolicy{}).Obj()
	state := func(replicas, running, succeeded int32) engine.ReplicaState {
		return engine.ReplicaState{Replicas: replicas, Running: running, Succeeded: succeeded}
	}
	cases := map[string]struct {
		job      *kubeflowv1.PyTorchJob
		replicas engine.Replicas
		want     engine.Outcome
	}{
		"master running, workers done: running, not succeeded": {
			withMaster, engine.Replicas{master: state(1, 1, 0), worker: state(2, 0, 2)},
			engine.Outcome{Running: true},
		},
		"workers running, master pending: not running": {
			withMaster, engine.Replicas{master: state(1, 0, 0), worker: state(2, 2, 0)},
			engine.Outcome{},
		},
		"master succeeded, workers still running: succeeded": {
			withMaster, engine.Replicas{master: state(1, 0, 1), worker: state(2, 2, 0)},
			engine.Outcome{Succeeded: true},
		},
		"workers only, one of two succeeded: running": {
			workersOnly, engine.Replicas{worker: state(2, 1, 1)},
			engine.Outcome{Running: true},
		},
		"workers only, all succeeded": {
			workersOnly, engine.Replicas{worker: state(2, 0, 2)},
			engine.Outcome{Succeeded: true},
		},
		"elastic, one worker succeeded while another runs: succeeded (upstream)": {
			elastic, engine.Replicas{worker: state(2, 1, 1)},
			engine.Outcome{Succeeded: true, Running: true},
		},
		"elastic, none succeeded yet": {
			elastic, engine.Replicas{worker: state(2, 2, 0)},
			engine.Outcome{Running: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(pytorch.Framework{}.Outcome(tc.job, tc.replicas)).To(Equal(tc.want))
		})
	}
}
