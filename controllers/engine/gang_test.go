package engine

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

func TestUnschedulablePods(t *testing.T) {
	pod := func(name, role string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kubeflowv1.ReplicaTypeLabel: role}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	unschedulableAt := func(msg string, at int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: msg, LastTransitionTime: metav1.NewTime(time.Unix(at, 0))}}
		}
	}
	unschedulable := func(msg string) func(*corev1.Pod) { return unschedulableAt(msg, 0) }
	gpu := "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
	cases := []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{name: "no pods", want: ""},
		{name: "pods not yet looked at", pods: []*corev1.Pod{pod("j-worker-0", "worker", nil)}, want: ""},
		{
			name: "one message per role, the first pod by name among equally recent ones, roles sorted",
			pods: []*corev1.Pod{
				pod("j-worker-1", "worker", unschedulable("other")),
				pod("j-worker-0", "worker", unschedulable(gpu)),
				pod("j-master-0", "master", unschedulable("0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.")),
			},
			want: "master: 0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.; worker: " + gpu,
		},
		{
			name: "the latest verdict of a role wins over an earlier, stale one",
			pods: []*corev1.Pod{
				pod("j-worker-0", "worker", unschedulableAt("pod group has not enough sibling pods", 100)),
				pod("j-worker-1", "worker", unschedulableAt(gpu, 160)),
			},
			want: "worker: " + gpu,
		},
		{
			name: "bound, terminating and gated pods do not count",
			pods: []*corev1.Pod{
				pod("j-worker-0", "worker", func(p *corev1.Pod) { unschedulable(gpu)(p); p.Spec.NodeName = "n1" }),
				pod("j-worker-1", "worker", func(p *corev1.Pod) { unschedulable(gpu)(p); p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }),
				pod("j-worker-2", "worker", func(p *corev1.Pod) {
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated, Message: "gated"}}
				}),
			},
			want: "",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := unschedulablePods(tc.pods); got != tc.want {
				t.Errorf("unschedulablePods = %q, want %q", got, tc.want)
			}
		})
	}
}
