package demo

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// replicaPods returns one pod per replica of every training job in the
// manifests, from its template, with the replica type's restart policy.
func replicaPods(t *testing.T, ms []manifest) ([]*corev1.Pod, []kubeflowv1.RestartPolicy) {
	t.Helper()
	var pods []*corev1.Pod
	var policies []kubeflowv1.RestartPolicy
	for _, m := range ms {
		var field string
		for _, jk := range jobKinds {
			if jk.kind == m.Obj.GetKind() {
				field = jk.specs
			}
		}
		if field == "" {
			continue
		}
		raw, _, _ := unstructured.NestedMap(m.Obj.Object, "spec", field)
		for rtype, spec := range raw {
			rs := &kubeflowv1.ReplicaSpec{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec.(map[string]any), rs); err != nil {
				t.Fatalf("%s %s: %v", m.Obj.GetName(), rtype, err)
			}
			n := 1
			if rs.Replicas != nil {
				n = int(*rs.Replicas)
			}
			for range n {
				pods = append(pods, &corev1.Pod{Spec: rs.Template.Spec})
				policies = append(policies, rs.RestartPolicy)
			}
		}
	}
	return pods, policies
}

// The job --show-gang-restart applies restarts on exit code 137, and fits
// the demo's GPU nodes beside the default examples: 32 of the 64 GPUs are
// taken by them, and it needs 3 more, at once after each restart.
func TestGangRestartExampleFitsTheDemo(t *testing.T) {
	examples := mustManifests(t, inRepo(t, DefaultExamples...)...)
	g, err := newGangShow(inRepo(t, GangRestartExample)[0], examples)
	if err != nil {
		t.Fatal(err)
	}
	if g.key() != "PyTorchJob default/pytorch-gang" || g.inExamples {
		t.Errorf("job %s (in the examples: %v), want PyTorchJob default/pytorch-gang, not among the examples", g.key(), g.inExamples)
	}

	pods, policies := replicaPods(t, g.manifests)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want a master and 2 workers", len(pods))
	}
	opts := NewOptions()
	nodes := localcluster.Nodes(opts.CPUNodes, opts.GPUNodes)
	var capacity, need, taken int64
	for _, n := range nodes {
		capacity += gpuQuantity(n.Status.Allocatable)
	}
	for i, p := range pods {
		need += podGPUs(p)
		// ExitCode makes 137 retryable, and only that: a code below 128
		// would fail the job.
		if policies[i] != kubeflowv1.RestartPolicy("ExitCode") {
			t.Errorf("a replica's restartPolicy is %q, want ExitCode", policies[i])
		}
		if podGPUs(p) == 0 || !slices.ContainsFunc(nodes, func(n *corev1.Node) bool { return podFitsNode(p, n) }) {
			t.Errorf("a replica (%d GPUs) fits no demo GPU node", podGPUs(p))
		}
	}
	examplePods, _ := replicaPods(t, examples)
	for _, p := range examplePods {
		taken += podGPUs(p)
	}
	if taken != 32 || need != 3 || capacity != 64 {
		t.Errorf("the examples take %d GPUs and the gang needs %d, of %d; want 32 + 3 within 64", taken, need, capacity)
	}
}

func TestNewGangShow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	const gangJob = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: g\nspec:\n  runPolicy:\n    gangPolicy:\n      restartPolicy: Gang\n"
	podJob := strings.Replace(gangJob, "restartPolicy: Gang", "restartPolicy: Pod", 1)
	queue := "apiVersion: scheduling.troupe.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\n"
	for _, tc := range []struct {
		name, body  string
		examples    []manifest
		wantErr     string
		wantApplied bool
	}{
		{name: "one gang-restarted job", body: queue + "---\n" + gangJob},
		{
			name: "already among the examples", body: gangJob,
			examples:    mustManifests(t, write("ex.yaml", gangJob)),
			wantApplied: true,
		},
		{name: "restarts per pod", body: podJob, wantErr: `PyTorchJob g does not restart as a whole gang (spec.runPolicy.gangPolicy.restartPolicy is "Pod", want Gang)`},
		{name: "no job", body: queue, wantErr: "want one training job to restart, found 0"},
		{name: "two jobs", body: gangJob + "---\n" + strings.Replace(gangJob, "name: g", "name: h", 1), wantErr: "found 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := newGangShow(write("gang.yaml", tc.body), tc.examples)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "gang.yaml") {
					t.Fatalf("err = %v, want one naming gang.yaml and saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.key() != "PyTorchJob default/g" || g.inExamples != tc.wantApplied {
				t.Errorf("job %s, in the examples %v; want PyTorchJob default/g, %v", g.key(), g.inExamples, tc.wantApplied)
			}
		})
	}
}

func mustManifests(t *testing.T, files ...string) []manifest {
	t.Helper()
	ms, err := loadManifests(files)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// inRepo makes paths relative to the repository root absolute.
func inRepo(t *testing.T, paths ...string) []string {
	t.Helper()
	root := repoRoot(t)
	abs := make([]string, len(paths))
	for i, p := range paths {
		abs[i] = filepath.Join(root, p)
	}
	return abs
}

func TestMemberToFail(t *testing.T) {
	pods := func(names ...string) *jobRow {
		j := &jobRow{}
		for _, n := range names {
			role := strings.Split(n, "-")[1]
			j.Pods = append(j.Pods, podRow{Name: n, Role: role})
		}
		return j
	}
	for _, tc := range []struct {
		job  *jobRow
		want string
	}{
		{pods("g-master-0", "g-worker-0", "g-worker-1"), "g-worker-1"},
		{pods("g-worker-0", "g-ps-0"), "g-worker-0"},
		{pods("g-master-0", "g-launcher-0"), "g-launcher-0"},
	} {
		if got := memberToFail(tc.job); got != tc.want {
			t.Errorf("memberToFail(%v) = %s, want %s", tc.job.Pods, got, tc.want)
		}
	}
}

// stage is the part of a kwok Stage the demo depends on.
type stage struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchExpressions []matchExpression `json:"matchExpressions"`
		} `json:"selector"`
		Next struct {
			StatusTemplate string `json:"statusTemplate"`
		} `json:"next"`
	} `json:"spec"`
}

type matchExpression struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

// The chaos stages hack/kwok.sh copies fire only on a pod with their
// label set to "true", so that no example but the one the demo fails is
// touched; the demo's label and exit-code annotation are the ones the
// container-failure stage reads.
func TestKwokChaosStages(t *testing.T) {
	dir, err := runHack(repoRoot(t), "kwok.sh", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "stages", "pod-chaos-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chaos stages in %s/stages: %v", dir, err)
	}
	var containerFailed *stage
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := &stage{}
		if err := yaml.Unmarshal(raw, s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		label := `.metadata.labels["` + s.Metadata.Name + `.stage.kwok.x-k8s.io"]`
		gated := slices.ContainsFunc(s.Spec.Selector.MatchExpressions, func(e matchExpression) bool {
			return e.Key == label && e.Operator == "In" && slices.Equal(e.Values, []string{"true"})
		})
		if !gated {
			t.Errorf("%s: stage %s does not select on %s In [true]: %+v", filepath.Base(f), s.Metadata.Name, label, s.Spec.Selector.MatchExpressions)
		}
		if s.Metadata.Name+".stage.kwok.x-k8s.io" == chaosLabel {
			containerFailed = s
		}
	}
	if containerFailed == nil {
		t.Fatalf("no stage in %v reads the label %s", files, chaosLabel)
	}
	if !strings.Contains(containerFailed.Spec.Next.StatusTemplate, `"`+chaosExitCodeAnnotation+`"`) {
		t.Errorf("stage %s does not read the annotation %s", containerFailed.Metadata.Name, chaosExitCodeAnnotation)
	}
}
