package kubectltroupe

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var created = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

// podBuilder makes a job's member pods as the operator labels them.
type podBuilder struct{ pod corev1.Pod }

func member(role string, index int) *podBuilder {
	return &podBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(role) + "-" + string(rune('0'+index)), Labels: map[string]string{kubeflowv1.ReplicaTypeLabel: strings.ToLower(role)}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }
func (b *podBuilder) node(n string) *podBuilder           { b.pod.Spec.NodeName = n; return b }
func (b *podBuilder) gate(g string) *podBuilder {
	b.pod.Spec.SchedulingGates = append(b.pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	return b
}
func (b *podBuilder) unschedulable(msg string, at time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(at),
	})
	return b
}
func (b *podBuilder) obj() corev1.Pod { return *b.pod.DeepCopy() }

// pytorchJob is a PyTorchJob of one master and three workers whose gang
// needs three members, two of them workers, in the state given.
func pytorchJob(state kubeflowv1.JobState, conditions ...kubeflowv1.JobCondition) *kubeflowv1.PyTorchJob {
	job := testutil.MakePyTorchJob("pt", "team-a").Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 3).Obj()
	job.CreationTimestamp = metav1.NewTime(created)
	job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{MinMembers: map[kubeflowv1.ReplicaType]int32{kubeflowv1.PyTorchJobReplicaTypeWorker: 2}}
	job.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{Queue: "research", MinAvailable: ptr.To[int32](3)}
	job.Status.State = state
	job.Status.Conditions = conditions
	return job
}

func TestDescribe(t *testing.T) {
	gangWaits := kubeflowv1.JobCondition{Type: kubeflowv1.JobGangScheduled, Status: corev1.ConditionFalse, Message: "PodGroup pt: waiting for troupe to admit the gang before creating its pods."}
	tests := []struct {
		name     string
		job      *kubeflowv1.PyTorchJob
		pods     []corev1.Pod
		want     map[string]roleReport
		waiting  string
		wantList string
	}{
		{
			name:    "held before admission: no pods, the condition says why",
			job:     pytorchJob(kubeflowv1.JobStateGangPending, gangWaits),
			want:    map[string]roleReport{"Master": {Min: 1, Why: noPodsYet}, "Worker": {Min: 2, Why: noPodsYet}},
			waiting: gangWaits.Message,
		},
		{
			name: "gated workers, the master running",
			job:  pytorchJob(kubeflowv1.JobStateRunning),
			pods: []corev1.Pod{
				member("master", 0).phase(corev1.PodRunning).node("cpu-1").obj(),
				member("worker", 0).gate("example.com/hold").obj(), member("worker", 1).gate("example.com/hold").gate("kueue.x-k8s.io/topology").obj(),
				member("worker", 2).phase(corev1.PodRunning).node("gpu-1").obj(),
			},
			want: map[string]roleReport{
				"Master": {Min: 1, Running: 1},
				"Worker": {Min: 2, Running: 1, Pending: 2, Why: "waiting for scheduling gates: example.com/hold, kueue.x-k8s.io/topology"},
			},
			waiting: "Worker: waiting for scheduling gates: example.com/hold, kueue.x-k8s.io/topology",
		},
		{
			name: "the scheduler's latest verdict on the role",
			job:  pytorchJob(kubeflowv1.JobStateCreated),
			pods: []corev1.Pod{
				member("master", 0).unschedulable("old news", created).obj(),
				member("worker", 0).unschedulable("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", created.Add(time.Minute)).obj(),
				member("worker", 1).node("gpu-2").obj(),
			},
			want: map[string]roleReport{
				"Master": {Min: 1, Pending: 1, Why: "old news"},
				"Worker": {Min: 2, Pending: 2, Why: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."},
			},
			waiting: "Master: old news",
		},
		{
			name:    "bound and starting",
			job:     pytorchJob(kubeflowv1.JobStateCreated),
			pods:    []corev1.Pod{member("master", 0).node("cpu-1").obj()},
			want:    map[string]roleReport{"Master": {Min: 1, Pending: 1, Why: "1 bound, starting"}, "Worker": {Min: 2, Why: noPodsYet}},
			waiting: "Master: 1 bound, starting",
		},
		{
			name: "finished: nothing waits",
			job:  pytorchJob(kubeflowv1.JobStateSucceeded),
			pods: []corev1.Pod{member("master", 0).phase(corev1.PodSucceeded).obj(), member("worker", 0).phase(corev1.PodFailed).obj()},
			want: map[string]roleReport{"Master": {Min: 1, Succeeded: 1}, "Worker": {Min: 2, Failed: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := describe(pytorch.Framework{}, tc.job, tc.pods, "troupe", "Pending", created.Add(90*time.Second))
			if r.Kind != "PyTorchJob" || r.Queue != "research" || r.MinMember != 3 || r.Age != 90*time.Second {
				t.Errorf("report %+v; want a PyTorchJob of queue research, minMember 3, 90s old", r)
			}
			if len(r.Roles) != 2 || r.Roles[0].Role != "Master" {
				t.Fatalf("roles %+v; want Master then Worker", r.Roles)
			}
			for _, got := range r.Roles {
				want := tc.want[got.Role]
				want.Role, want.Replicas = got.Role, map[string]int32{"Master": 1, "Worker": 3}[got.Role]
				if got != want {
					t.Errorf("%s: %+v, want %+v", got.Role, got, want)
				}
			}
			if got := waiting(r); got != tc.waiting {
				t.Errorf("waiting %q, want %q", got, tc.waiting)
			}
		})
	}
}

func TestRender(t *testing.T) {
	job := pytorchJob(kubeflowv1.JobStateGangPending, kubeflowv1.JobCondition{Type: kubeflowv1.JobGangScheduled, Status: corev1.ConditionFalse, Message: "troupe-scheduler: 2 of 4 members fit\nmore"})
	job.Status.Gang = &kubeflowv1.GangStatus{Generation: 2, Restarts: 1, Disruptions: 1}
	r := describe(pytorch.Framework{}, job, []corev1.Pod{member("master", 0).phase(corev1.PodRunning).obj()}, "troupe", "Pending", created.Add(3*time.Minute))

	var list bytes.Buffer
	if err := renderList(&list, []jobReport{r}, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(list.String()), "\n")
	wantFields := [][]string{
		{"NAMESPACE", "JOB", "STATE", "BACKEND", "QUEUE", "RUNNING/MIN", "GEN", "RESTARTS", "AGE", "WAITING"},
		{"team-a", "pytorchjob/pt", "GangPending", "troupe", "research", "Master", "1/1,", "Worker", "0/2", "2", "1", "(+1", "disruptions)", "3m", "troupe-scheduler:", "2", "of", "4", "members", "fit"},
	}
	if len(lines) != 2 {
		t.Fatalf("list:\n%s\nwant a header and one line", list.String())
	}
	for i, want := range wantFields {
		if got := strings.Fields(lines[i]); !slices.Equal(got, want) {
			t.Errorf("line %d: %q\nwant %q", i, got, want)
		}
	}

	var detail bytes.Buffer
	if err := renderJob(&detail, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"PyTorchJob:  team-a/pt", "Backend:     troupe (PodGroup pt: Pending)", "Queue:       research",
		"Gang:        minMember 3, generation 2, 1 restarts, 1 disruptions", "Waiting:     troupe-scheduler: 2 of 4 members fit",
		"ROLE    REPLICAS  MIN  RUNNING  PENDING  SUCCEEDED  FAILED  WHY NOT RUNNING",
		"Master  1         1    1        0        0          0       -",
		"Worker  3         2    0        0        0          0       no pods yet",
	} {
		if !strings.Contains(detail.String(), want) {
			t.Errorf("detail lacks %q:\n%s", want, detail.String())
		}
	}
}
