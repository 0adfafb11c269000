package engine

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

func TestGangBackoff(t *testing.T) {
	cases := []struct {
		name             string
		initial, max     int32
		restart          int32
		want             time.Duration
		backoffUnsetInCR bool
	}{
		{name: "first restart waits the initial time", initial: 10, max: 300, restart: 1, want: 10 * time.Second},
		{name: "doubles each restart", initial: 10, max: 300, restart: 3, want: 40 * time.Second},
		{name: "capped", initial: 10, max: 300, restart: 9, want: 300 * time.Second},
		{name: "cap below initial wins", initial: 60, max: 30, restart: 1, want: 30 * time.Second},
		{name: "zero initial restarts at once", initial: 0, max: 300, restart: 5, want: 0},
		{name: "large restart counts do not overflow", initial: 1, max: 600, restart: 1 << 30, want: 600 * time.Second},
		{name: "defaults: 10s then doubling up to 300s", backoffUnsetInCR: true, restart: 2, want: 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gp := &kubeflowv1.GangPolicy{RestartPolicy: kubeflowv1.GangRestartPolicyGang}
			if !tc.backoffUnsetInCR {
				gp.Backoff = &kubeflowv1.GangBackoff{InitialSeconds: ptr.To(tc.initial), MaxSeconds: ptr.To(tc.max)}
			}
			job := &kubeflowv1.TFJob{}
			job.Spec.RunPolicy.GangPolicy = gp
			if got := gangRestartPolicy(job).backoff(tc.restart); got != tc.want {
				t.Errorf("backoff(%d) = %s, want %s", tc.restart, got, tc.want)
			}
		})
	}
}

func TestGangRestartPolicyDefaults(t *testing.T) {
	cases := []struct {
		name string
		gp   *kubeflowv1.GangPolicy
		want *gangRestarts
	}{
		{name: "no gang policy: per-pod restarts", gp: nil, want: nil},
		{name: "restartPolicy Pod: per-pod restarts", gp: &kubeflowv1.GangPolicy{RestartPolicy: kubeflowv1.GangRestartPolicyPod, MaxRestarts: ptr.To[int32](9)}, want: nil},
		{name: "Gang with nothing else: every trigger, the documented defaults", gp: &kubeflowv1.GangPolicy{RestartPolicy: kubeflowv1.GangRestartPolicyGang}, want: &gangRestarts{
			triggers: kubeflowv1.AllGangRestartTriggers, maxRestarts: 3, backoffInitial: 10 * time.Second, backoffMax: 300 * time.Second,
			partialTimeout: 300 * time.Second, nodeLostTimeout: 60 * time.Second,
		}},
		{name: "Gang with everything set", gp: &kubeflowv1.GangPolicy{
			RestartPolicy: kubeflowv1.GangRestartPolicyGang, RestartOn: []kubeflowv1.GangRestartTrigger{kubeflowv1.GangRestartOnNodeLost},
			MaxRestarts: ptr.To[int32](0), MaxDisruptions: ptr.To[int32](2), PartialGangTimeoutSeconds: ptr.To[int32](7), NodeLostTimeoutSeconds: ptr.To[int32](0),
			Backoff: &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](1)},
		}, want: &gangRestarts{
			triggers: []kubeflowv1.GangRestartTrigger{kubeflowv1.GangRestartOnNodeLost}, maxRestarts: 0, maxDisruptions: ptr.To[int32](2),
			backoffInitial: time.Second, backoffMax: 300 * time.Second, partialTimeout: 7 * time.Second, nodeLostTimeout: 0,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &kubeflowv1.PyTorchJob{}
			job.Spec.RunPolicy.GangPolicy = tc.gp
			got := gangRestartPolicy(job)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got a gang restart policy %+v, want none", got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("got no gang restart policy, want %+v", tc.want)
			}
			if got.maxRestarts != tc.want.maxRestarts || ptr.Deref(got.maxDisruptions, -1) != ptr.Deref(tc.want.maxDisruptions, -1) ||
				got.backoffInitial != tc.want.backoffInitial || got.backoffMax != tc.want.backoffMax ||
				got.partialTimeout != tc.want.partialTimeout || got.nodeLostTimeout != tc.want.nodeLostTimeout ||
				len(got.triggers) != len(tc.want.triggers) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			for _, tr := range tc.want.triggers {
				if !got.restartsOn(tr) {
					t.Errorf("does not restart on %s", tr)
				}
			}
		})
	}
}

func TestIsDisruption(t *testing.T) {
	withCondition := failedPod("", nil)
	withCondition.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"kubelet eviction", failedPod("Evicted", nil), true},
		{"preempted (DisruptionTarget condition)", withCondition, true},
		{"node shutdown", failedPod("Shutdown", nil), true},
		{"program error", failedPod("", map[string]int32{"pytorch": 1}), false},
		{"OOM-killed container", failedPod("", map[string]int32{"pytorch": 137}), false},
		{"active deadline of the pod", failedPod("DeadlineExceeded", nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isDisruption(tc.pod); got != tc.want {
				t.Errorf("isDisruption = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeLostBy(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	cases := []struct {
		name     string
		node     nodeHealth
		wantLost bool
		wantWait time.Duration
	}{
		{"Ready", nodeHealth{}, false, 0},
		{"gone", nodeHealth{gone: true}, true, 0},
		{"not Ready for less than the timeout", nodeHealth{notReadySince: ago(20 * time.Second)}, false, 40 * time.Second},
		{"not Ready for exactly the timeout", nodeHealth{notReadySince: ago(time.Minute)}, true, 0},
		{"not Ready for longer", nodeHealth{notReadySince: ago(time.Hour)}, true, -59 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lost, wait := tc.node.lostBy(now, time.Minute)
			if lost != tc.wantLost || wait != tc.wantWait {
				t.Errorf("lostBy = %v, %s; want %v, %s", lost, wait, tc.wantLost, tc.wantWait)
			}
		})
	}
}
