package check

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// gpuPod asks for cpu CPUs and gpus GPUs on the GPU pool, tolerating its
// taint, as the soak's GPU members do.
func gpuPod(name string, cpu, gpus string) Pod {
	return Pod{Name: name, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), "nvidia.com/gpu": resource.MustParse(gpus)},
		NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
}

// gpuRoom is a GPU node with this much free.
func gpuRoom(name, cpu, gpus string) room {
	return room{node: Node{Name: name, Labels: map[string]string{"pool": "gpu"},
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), "nvidia.com/gpu": resource.MustParse(gpus)}}
}

func (r room) with(f func(*room)) room { f(&r); return r }

func TestPlacement(t *testing.T) {
	cases := []struct {
		name string
		pods []Pod
		room []room
		// can: some placement fits; always: every greedy one does.
		can, always bool
	}{
		{name: "two pods on one node with room for both",
			pods: []Pod{gpuPod("a", "2", "4"), gpuPod("b", "2", "4")}, room: []room{gpuRoom("n1", "8", "8")}, can: true, always: true},
		{name: "enough GPUs in aggregate, not node by node",
			pods: []Pod{gpuPod("a", "2", "4"), gpuPod("b", "2", "4")}, room: []room{gpuRoom("n1", "8", "3"), gpuRoom("n2", "8", "5")}},
		{name: "CPU is short where the GPUs are",
			pods: []Pod{gpuPod("a", "6", "2")}, room: []room{gpuRoom("n1", "4", "8")}},
		{name: "a resource the node does not have",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{{node: Node{Name: "n1", Labels: map[string]string{"pool": "gpu"}}, free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}},
		{name: "the node's labels do not match the selector",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) { r.node.Labels = map[string]string{"pool": "cpu"} })}},
		{name: "a taint the pod does not tolerate",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) {
				r.node.Taints = append(r.node.Taints, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute})
			})}},
		{name: "a PreferNoSchedule taint does not keep a pod off",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) {
				r.node.Taints = append(r.node.Taints, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule})
			})}, can: true, always: true},
		{name: "a cordoned node",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) { r.node.Unschedulable = true })}},
		{name: "no pod left of the node's allocatable count",
			pods: []Pod{gpuPod("a", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) { r.free[corev1.ResourcePods] = resource.MustParse("0") })}},
		{name: "one pod left of the node's allocatable count, two pods",
			pods: []Pod{gpuPod("a", "1", "1"), gpuPod("b", "1", "1")}, room: []room{gpuRoom("n1", "8", "8").with(func(r *room) { r.free[corev1.ResourcePods] = resource.MustParse("1") })}},
		{name: "a CPU master and GPU workers, each on its pool",
			pods: []Pod{{Name: "m", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, NodeSelector: map[string]string{"pool": "cpu"}},
				gpuPod("w0", "2", "4"), gpuPod("w1", "2", "4")},
			room: []room{{node: Node{Name: "c1", Labels: map[string]string{"pool": "cpu"}}, free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
				gpuRoom("n1", "8", "4"), gpuRoom("n2", "8", "4")},
			can: true, always: true},
		{
			// 2 GPUs then 4: the 2 on the node of 4 leaves no room for
			// the 4, a dead end a greedy scheduler may walk into.
			name: "fits one way only",
			pods: []Pod{gpuPod("a", "1", "2"), gpuPod("b", "1", "4")}, room: []room{gpuRoom("n1", "8", "4"), gpuRoom("n2", "8", "2")},
			can: true,
		},
		{name: "nothing to place", room: []room{gpuRoom("n1", "8", "8")}, can: true, always: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := canPlace(tc.pods, tc.room); got != tc.can {
				t.Errorf("canPlace = %v, want %v", got, tc.can)
			}
			if got := alwaysPlaces(tc.pods, tc.room); got != tc.always {
				t.Errorf("alwaysPlaces = %v, want %v", got, tc.always)
			}
		})
	}
}

func TestTolerates(t *testing.T) {
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"Exists on the key", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}, true},
		{"Exists with no key tolerates all", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{"Equal with the value", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v"}, true},
		{"Equal is the default operator", corev1.Toleration{Key: "k", Value: "v"}, true},
		{"Equal with another value", corev1.Toleration{Key: "k", Value: "w"}, false},
		{"another key", corev1.Toleration{Key: "j", Operator: corev1.TolerationOpExists}, false},
		{"another effect", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
		{"the same effect", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tolerates(tc.tol, taint); got != tc.want {
				t.Errorf("tolerates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFreeRoom(t *testing.T) {
	nodes := []Node{{Name: "n1", Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("8")}}}
	got := freeRoom(nodes, func(string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m"), "nvidia.com/gpu": resource.MustParse("6")}
	})
	cpu, gpu := got[0].free[corev1.ResourceCPU], got[0].free["nvidia.com/gpu"]
	if cpu.String() != "5500m" || gpu.String() != "2" {
		t.Errorf("free cpu %s, gpu %s; want 5500m, 2", cpu.String(), gpu.String())
	}
}

// pendingGang is j1's gang of three workers, none bound, on two nodes
// that hold them however they are placed.
var pendingGang = []step{
	at(0, node("n1", "32", "8")), at(0, node("n2", "32", "8")), at(0, job(gangJob(1, 0, 0, 0))), at(0, group(g1)),
	at(0, pod(member("w0", "0", 0, 2))), at(0, pod(member("w1", "1", 0, 3))), at(0, pod(member("w2", "2", 0, 4))),
}

// bindAll binds the pending gang at s seconds.
func bindAll(s float64) []step {
	return []step{at(s, pod(member("w0", "0", 0, 5).on("n1"))), at(s, pod(member("w1", "1", 0, 6).on("n1"))), at(s, pod(member("w2", "2", 0, 7).on("n2")))}
}

// ticks ticks at every given second.
func ticks(secs ...float64) []step {
	var out []step
	for _, s := range secs {
		out = append(out, at(s, tick))
	}
	return out
}

func TestWaits(t *testing.T) {
	cfg := Config{PartialGrace: time.Minute, WaitLimit: 10 * time.Second}
	// j2's gang of one, waiting for a node that does not fit it.
	otherWaits := []step{
		at(0, job(Job{UID: "j2", Key: JobKey{Kind: "TFJob", Namespace: "soak", Name: "j2"}, RV: 8, Running: true})),
		at(0, group(PodGroup{Namespace: "soak", Name: "g2", OwnerUID: "j2", MinMember: 1})),
		at(0, pod(Pod{UID: "x0", Namespace: "soak", Name: "x0", RV: 9, JobUID: "j2", Group: "g2", Phase: corev1.PodPending,
			Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")}})),
	}
	cases := []struct {
		name  string
		steps []step
		want  []string
		// longest is the longest wait with room (led), alone the longest
		// with nothing ahead.
		longest, alone time.Duration
		job            string
	}{
		{
			name:    "bound 4 s after it could be",
			steps:   seq(pendingGang, ticks(0, 2), bindAll(4), ticks(5, 20)),
			longest: 4 * time.Second, alone: 4 * time.Second, job: "PyTorchJob soak/j1",
		},
		{
			name:    "waits with room, nothing ahead, past the limit",
			steps:   seq(pendingGang, ticks(0, 5, 11)),
			want:    []string{WaitedWithRoom},
			longest: 11 * time.Second, alone: 11 * time.Second, job: "PyTorchJob soak/j1",
		},
		{
			name:    "another gang waits too: a figure, not a violation",
			steps:   seq(pendingGang, otherWaits, ticks(0, 5, 11)),
			longest: 11 * time.Second, job: "PyTorchJob soak/j1",
		},
		{
			name: "no scheduler led for most of it",
			steps: seq(pendingGang, ticks(0), []step{at(1, func(c *Checker, t time.Time) { c.SchedulerDown(t) }),
				at(19, func(c *Checker, t time.Time) { c.SchedulerUp(t) })}, ticks(5, 19, 20)),
			longest: 2 * time.Second, alone: 2 * time.Second, job: "PyTorchJob soak/j1",
		},
		{
			name:  "short of its minimum: its controller is still creating it",
			steps: seq(pendingGang[:6], ticks(0, 5, 11)),
		},
		{
			name:  "no room: waits, but not with room",
			steps: seq(pendingGang[:1], pendingGang[2:], ticks(0, 5, 11)),
		},
		{
			name:  "its job has finished",
			steps: seq(pendingGang, []step{at(0, job(gangJob(2, 0, 0, 0).failedWith("TFJobFailed")))}, ticks(0, 5, 11)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, got := play(cfg, tc.steps)
			if !slices.Equal(got, tc.want) {
				t.Errorf("flagged %v, want %v: %v", got, tc.want, c.Violations())
			}
			w := c.Stats().Waits
			if w.LongestLed != tc.longest || w.LongestAloneLed != tc.alone || (tc.longest > 0 && w.Job != tc.job) {
				t.Errorf("longest wait %v of %q, alone %v; want %v of %q, alone %v", w.LongestLed, w.Job, w.LongestAloneLed, tc.longest, tc.job, tc.alone)
			}
		})
	}
}
