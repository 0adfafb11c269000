package demo

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Every example starts with a comment line saying what it shows, and
// parses as training jobs.
func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		first, err := firstLine(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(first, "# ") || len(first) < 20 {
			t.Errorf("%s: the first line should be a comment saying what the example shows, got %q", filepath.Base(f), first)
		}
		ms, err := loadManifests([]string{f})
		if err != nil {
			t.Fatal(err)
		}
		jobs := 0
		for _, m := range ms {
			switch gvk := m.Obj.GroupVersionKind(); {
			case isTrainingJob(m.Obj):
				jobs++
			// What a job names: its queue, its priority class, its
			// topology.
			case gvk.Group == "scheduling.troupe.dev" && (gvk.Kind == "Queue" || gvk.Kind == "Topology"),
				gvk.Group == "scheduling.k8s.io" && gvk.Kind == "PriorityClass":
			default:
				t.Errorf("%s: %s is neither a training job nor a Queue, Topology or PriorityClass one uses", filepath.Base(f), m.Obj.GetKind())
			}
		}
		if jobs == 0 {
			t.Errorf("%s: no training job", filepath.Base(f))
		}
	}
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	s.Scan()
	return s.Text(), s.Err()
}

// The demo's examples fit its nodes the way the smoke test expects: every
// replica can go only to the kind of node the check wants for it (GPU
// replicas tolerate the GPU taint and fit no CPU node; the others select
// or are kept to CPU nodes), and the coordinators are CPU-only except
// PyTorch's master, which trains.
func TestDefaultExamplesMatchTheDemoNodes(t *testing.T) {
	root := repoRoot(t)
	var files []string
	for _, f := range DefaultExamples {
		files = append(files, filepath.Join(root, f))
	}
	ms, err := loadManifests(files)
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for _, m := range ms {
		if isTrainingJob(m.Obj) {
			jobs++
		}
	}
	if jobs != 4 {
		t.Fatalf("want a TFJob, two PyTorchJobs and an MPIJob, got %d training jobs", jobs)
	}
	nodes := localcluster.Nodes(1, 1)
	wantGPU := map[string]bool{"TFJob/Chief": false, "TFJob/Worker": true, "PyTorchJob/Master": true, "PyTorchJob/Worker": true, "MPIJob/Launcher": false, "MPIJob/Worker": true}
	seen := map[string]bool{}
	for _, m := range ms {
		if !isTrainingJob(m.Obj) {
			continue
		}
		var field string
		for _, jk := range jobKinds {
			if jk.kind == m.Obj.GetKind() {
				field = jk.specs
			}
		}
		raw, _, _ := unstructured.NestedMap(m.Obj.Object, "spec", field)
		for rtype, spec := range raw {
			rs := &kubeflowv1.ReplicaSpec{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec.(map[string]any), rs); err != nil {
				t.Fatal(err)
			}
			name := m.Obj.GetKind() + "/" + rtype
			seen[name] = true
			pod := &corev1.Pod{Spec: rs.Template.Spec}
			gpu := podGPUs(pod) > 0
			if want, ok := wantGPU[name]; !ok || want != gpu {
				t.Errorf("%s: asks for GPUs = %v, want %v", name, gpu, want)
			}
			for _, n := range nodes {
				fits := podFitsNode(pod, n)
				wantFit := (nodeKind(n) == kindGPU) == gpu
				if fits != wantFit {
					t.Errorf("%s on node %s (%s): fits = %v, want %v", name, n.Name, nodeKind(n), fits, wantFit)
				}
			}
		}
	}
	if len(seen) != len(wantGPU) {
		t.Errorf("replica types %v, want %v", seen, wantGPU)
	}
}

// podFitsNode is the part of scheduling the examples depend on: the node
// selector, the taints, and whether the node has the GPUs at all.
func podFitsNode(pod *corev1.Pod, n *corev1.Node) bool {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return false
	}
	return podGPUs(pod) <= gpuQuantity(n.Status.Allocatable)
}

func TestExpectedPods(t *testing.T) {
	ms, err := loadManifests([]string{filepath.Join(repoRoot(t), "examples", "tfjob-ps-worker.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if got := expectedPods(ms[0].Obj.Object, "tfReplicaSpecs"); got != 6 {
		t.Errorf("expectedPods = %d, want 6 (2 PS, 4 workers)", got)
	}
	noReplicas := map[string]any{"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{}}}}
	if got := expectedPods(noReplicas, "pytorchReplicaSpecs"); got != 1 {
		t.Errorf("expectedPods without replicas = %d, want 1", got)
	}
}
