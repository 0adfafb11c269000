//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Node pools as managed clusters label them; the GPU pool is tainted, as
// internal/demo's is, so that only pods that tolerate it go there.
const (
	poolLabel = "node-pool"
	cpuPool   = "cpu"
	gpuPool   = "gpu"
)

var gpuTaint = corev1.Taint{Key: string(testutil.GPU), Value: "present", Effect: corev1.TaintEffectNoSchedule}

// bindTimeout bounds the wait for a scheduler to bind a gang that fits: a
// few of its cycles on a busy two-core machine.
const bindTimeout = time.Minute

// pools creates the nodes of one spec: cpu CPU-only nodes (8 CPU, 32Gi)
// labelled node-pool=cpu, and gpu GPU nodes (32 CPU, 128Gi, gpusPerNode
// nvidia.com/gpu) labelled node-pool=gpu and tainted. Their names start
// with the spec's namespace. When the spec ends they go, with every pod,
// job and PodGroup of the namespace, so that nothing of one spec holds
// capacity in the next (envtest runs no garbage collector).
func pools(ctx context.Context, ns string, cpu, gpu, gpusPerNode int) {
	poolsWith(ctx, ns, cpu, gpu, gpusPerNode, nil)
}

// poolsWith is pools with label(i, node) labelling GPU node i.
func poolsWith(ctx context.Context, ns string, cpu, gpu, gpusPerNode int, label func(int, *testutil.NodeBuilder)) {
	var nodes []*corev1.Node
	for i := range cpu {
		nodes = append(nodes, testutil.MakeNode(fmt.Sprintf("%s-cpu-%d", ns, i)).
			Capacity("8", "32Gi").Label(poolLabel, cpuPool).Obj())
	}
	for i := range gpu {
		b := testutil.MakeNode(fmt.Sprintf("%s-gpu-%d", ns, i)).
			Capacity("32", "128Gi").GPU(gpusPerNode).Label(poolLabel, gpuPool)
		if label != nil {
			label(i, b)
		}
		n := b.Obj()
		n.Spec.Taints = []corev1.Taint{gpuTaint}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
	}
	DeferCleanup(func(ctx SpecContext) {
		in := client.InNamespace(ns)
		for _, obj := range []client.Object{&kubeflowv1.TFJob{}, &kubeflowv1.PyTorchJob{}} {
			Expect(suite.Client.DeleteAllOf(ctx, obj, in)).To(Succeed())
		}
		// Bound pods wait for a kubelet to confirm their deletion unless
		// told not to.
		Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, in, client.GracePeriodSeconds(0))).To(Succeed())
		// Only the CRDs of the peers whose containers have run are there.
		// An admitted PodGroup left behind would hold its queue's share.
		for _, obj := range []client.Object{&volcanov1beta1.PodGroup{}, &spv1alpha1.PodGroup{}, &schedulingv1alpha1.PodGroup{}} {
			if err := suite.Client.DeleteAllOf(ctx, obj, in); !meta.IsNoMatchError(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
		for _, n := range nodes {
			Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, n))).To(Succeed())
		}
	})
}

// gpuWorker is a replica of n pods that each request gpus GPUs (as a limit,
// the way GPU manifests are written) and tolerate the GPU pool's taint.
func gpuWorker(n int32, container string, gpus string) *kubeflowv1.ReplicaSpec {
	spec := testutil.MakeReplica(n, container).Request(corev1.ResourceCPU, "2").Limit(testutil.GPU, gpus).Obj()
	spec.Template.Spec.Tolerations = []corev1.Toleration{{
		Key: gpuTaint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	}}
	return spec
}

// cpuMaster is one pod that needs no GPU and asks for the CPU pool.
func cpuMaster(container string) *kubeflowv1.ReplicaSpec {
	return testutil.MakeReplica(1, container).Request(corev1.ResourceCPU, "1").NodeSelector(poolLabel, cpuPool).Obj()
}

// listPods lists the pods of a namespace that match labels, and fails g
// unless there are n of them.
func listPods(ctx context.Context, g Gomega, ns string, labels client.MatchingLabels, n int) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns), labels)).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(n), "pods matching %v", labels)
	return pods.Items
}

func jobPods(job string) client.MatchingLabels {
	return client.MatchingLabels{kubeflowv1.JobNameLabel: job}
}

// expectAllBound waits until the n pods matching labels are all bound.
func expectAllBound(ctx context.Context, ns string, labels client.MatchingLabels, n int) []corev1.Pod {
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = listPods(ctx, g, ns, labels, n)
		for _, p := range pods {
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound", p.Name)
		}
	}).WithTimeout(bindTimeout).Should(Succeed())
	return pods
}

// noneBound fails g if any of the n pods matching labels is bound.
func noneBound(ctx context.Context, g Gomega, ns string, labels client.MatchingLabels, n int) {
	for _, p := range listPods(ctx, g, ns, labels, n) {
		g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s is bound, its gang is not whole", p.Name)
	}
}

// expectPlaced checks that scheduler placed the pods: every master pod on
// a CPU node and every other pod on a GPU node.
func expectPlaced(ctx context.Context, scheduler string, pods []corev1.Pod) {
	master := engine.ReplicaTypeLabelValue(kubeflowv1.TFJobReplicaTypeMaster)
	for _, p := range pods {
		Expect(p.Spec.SchedulerName).To(Equal(scheduler), "pod %s", p.Name)
		want := gpuPool
		if p.Labels[kubeflowv1.ReplicaTypeLabel] == master {
			want = cpuPool
		}
		n := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n)).To(Succeed())
		Expect(n.Labels[poolLabel]).To(Equal(want), "pod %s on node %s", p.Name, n.Name)
	}
}

// peer is a peer scheduler running for the rest of its container.
type peer struct {
	*peers.Process
	dir    string // its kubeconfig and log
	failed bool   // a spec of the container failed: keep dir
}

// startPeer starts a scheduler on a kubeconfig for the suite's API server,
// until its container ends. Its folder under $TMPDIR goes then too, unless
// a spec failed.
func startPeer(start func(peers.Options) (*peers.Process, error), binary func() (string, error)) *peer {
	bin, err := binary()
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "troupe-e2e-")
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(dir, "kubeconfig")
	Expect(peers.WriteKubeconfig(suite.Env.Environment, kubeconfig)).To(Succeed())
	p, err := start(peers.Options{Binary: bin, Kubeconfig: kubeconfig, LogFile: filepath.Join(dir, "scheduler.log")})
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("scheduler %s (pid %d) logs to %s\n", bin, p.Pid(), p.LogFile())
	pr := &peer{Process: p, dir: dir}
	// Cleanups run last in, first out: the scheduler stops, then its
	// folder goes.
	DeferCleanup(func() {
		if !pr.failed {
			Expect(os.RemoveAll(dir)).To(Succeed())
		}
	})
	DeferCleanup(p.Stop)
	return pr
}

// check runs after every spec: it fails the spec if the scheduler is no
// longer running (a crashed peer explains any failure better than the
// spec's own assertion), and prints the tail of its log after a failure.
func (p *peer) check() {
	select {
	case <-p.Done():
		p.failed = true
		Fail(fmt.Sprintf("the scheduler exited during the spec; see %s", p.LogFile()))
	default:
	}
	if !CurrentSpecReport().Failed() {
		return
	}
	p.failed = true
	raw, err := os.ReadFile(p.LogFile())
	if err != nil {
		GinkgoWriter.Printf("read %s: %v\n", p.LogFile(), err)
		return
	}
	lines := strings.Split(string(raw), "\n")
	GinkgoWriter.Printf("--- last lines of %s\n%s\n", p.LogFile(), strings.Join(lines[max(0, len(lines)-80):], "\n"))
}

// mixedPyTorchJob has a CPU-only master and GPU workers of 4 GPUs, as
// PyTorch jobs often come.
func mixedPyTorchJob(name, ns string, workers int32) *kubeflowv1.PyTorchJob {
	return testutil.MakePyTorchJob(name, ns).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, cpuMaster(kubeflowv1.PyTorchJobDefaultContainerName)).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, gpuWorker(workers, kubeflowv1.PyTorchJobDefaultContainerName, "4")).
		Obj()
}

// gangRestartJob makes job restart its whole gang at once when a member
// fails with a retryable exit code.
func gangRestartJob(job *kubeflowv1.PyTorchJob) *kubeflowv1.PyTorchJob {
	for _, spec := range job.Spec.PyTorchReplicaSpecs {
		spec.RestartPolicy = "ExitCode"
	}
	job.Spec.RunPolicy.GangPolicy = gangRestart()
	return job
}

// startOperator runs the operator with flags until the container ends.
func startOperator(flags ...string) {
	GinkgoHelper()
	op, err := testutil.StartOperatorWithFlags(suite.Env.Config, flags)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(op.Stop)
}

// gangRestart restarts the whole gang after a member's failure, at once.
func gangRestart() *kubeflowv1.GangPolicy {
	zero := int32(0)
	return &kubeflowv1.GangPolicy{
		RestartPolicy: kubeflowv1.GangRestartPolicyGang,
		Backoff:       &kubeflowv1.GangBackoff{InitialSeconds: &zero, MaxSeconds: &zero},
	}
}

// expectGangRestarted fails one member of a bound gang with a retryable
// exit code and waits until the job's next generation is bound whole by
// scheduler: n new pods, all of generation 1, in their pools. It plays the
// kubelet's part in the teardown: a bound pod that is deleted stays
// Terminating until its kubelet confirms, and envtest has none.
func expectGangRestarted(ctx context.Context, ns, job, scheduler string, first []corev1.Pod, member int) {
	GinkgoHelper()
	for i := range first {
		Expect(testutil.SetPodPhase(ctx, suite.Client, &first[i], corev1.PodRunning)).To(Succeed())
	}
	Expect(testutil.FailPod(ctx, suite.Client, &first[member], 137)).To(Succeed())
	old := map[string]bool{}
	for _, p := range first {
		old[string(p.UID)] = true
	}
	var second []corev1.Pod
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns), jobPods(job))).To(Succeed())
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp != nil {
				g.Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
			}
		}
		second = listPods(ctx, g, ns, jobPods(job), len(first))
		for _, p := range second {
			g.Expect(old).NotTo(HaveKey(string(p.UID)), "pod %s of the old gang is still there", p.Name)
			g.Expect(p.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "1"))
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s is not bound", p.Name)
		}
	}).WithTimeout(bindTimeout).Should(Succeed())
	expectPlaced(ctx, scheduler, second)
}
