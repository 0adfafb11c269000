package actions_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
)

// makeGang returns n pending pods name-0..name-(n-1) of job name, role worker.
func makeGang(name string, n int, mod func(*st.PodWrapper)) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := st.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Job(name).Role("worker")
		mod(p)
		pods = append(pods, p.Obj())
	}
	return pods
}

func cpu(q string) func(*st.PodWrapper) { return func(p *st.PodWrapper) { p.Req(q, "") } }

// Two gangs compete for room for one: exactly one is placed whole, the
// other gets nothing, and what it tried to take is free again.
func TestAllocateAllOrNothing(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		used  []*corev1.Pod // other schedulers' pods
		size  int           // pods per gang, 1 CPU each
	}{{
		// 8 - 0.9 = 7.1 CPUs: room for 7 one-CPU pods, one gang of 5 and two
		// more. A scheduler without gangs would start 5 + 2.
		name:  "8-CPU node with 0.9 CPU used, two gangs of 5",
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("8", "32Gi", 0).Obj()},
		used:  []*corev1.Pod{st.MakePod("kube-system", "agent").Req("900m", "").Node("n1").Phase(corev1.PodRunning).Obj()},
		size:  5,
	}, {
		name: "two jobs of 10 workers on a cluster that fits 10",
		nodes: []*corev1.Node{
			st.MakeNode("n1").Capacity("2", "8Gi", 0).Obj(), st.MakeNode("n2").Capacity("2", "8Gi", 0).Obj(),
			st.MakeNode("n3").Capacity("2", "8Gi", 0).Obj(), st.MakeNode("n4").Capacity("2", "8Gi", 0).Obj(),
			st.MakeNode("n5").Capacity("2", "8Gi", 0).Obj(),
		},
		size: 10,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{
				nodes: tt.nodes,
				pods:  append(append(makeGang("a", tt.size, cpu("1")), makeGang("b", tt.size, cpu("1"))...), tt.used...),
				jobs: []*api.JobInfo{
					st.MakeJob("ns", "a").MinMember(int32(tt.size)).Obj(),
					st.MakeJob("ns", "b").MinMember(int32(tt.size)).Obj(),
				},
			}
			ssn := schedule(t, c)
			checkInvariants(t, c, ssn.Bindings())
			got := placed(ssn)
			// Equal jobs go in name order: a wins.
			if len(got["ns/a"]) != tt.size || len(got["ns/b"]) != 0 {
				t.Fatalf("placed a: %d, b: %d; want %d and 0", len(got["ns/a"]), len(got["ns/b"]), tt.size)
			}
			for _, task := range ssn.Jobs["ns/b"].Tasks {
				if task.Status != api.Pending || task.NodeName != "" {
					t.Errorf("loser's task %s is %v on %q", task.Name, task.Status, task.NodeName)
				}
			}
			// The loser's tentative placements were given back: every node
			// holds exactly the winner's pods and the pods already there.
			for _, n := range ssn.NodeList {
				want := api.Resource{}
				for _, p := range tt.used {
					if p.Spec.NodeName == n.Name {
						r := api.PodRequests(p)
						want.Add(&r)
					}
				}
				for _, node := range got["ns/a"] {
					if node == n.Name {
						want.Add(&api.Resource{MilliCPU: 1000, Pods: 1})
					}
				}
				if !n.Used.Equal(&want) {
					t.Errorf("node %s uses %v, want %v", n.Name, n.Used, want)
				}
			}
			if u := ssn.Unschedulable()["ns/b"]; u.Reason != actions.ReasonNotEnoughResources || !strings.Contains(u.Message, "Insufficient cpu") {
				t.Errorf("loser's record %+v does not say why", u)
			}
		})
	}
}

// A TFJob-like gang: a CPU-only master pinned to the CPU pool and GPU
// workers, on a cluster with both kinds of nodes.
func TestAllocateTFJobMixedCluster(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("cpu-1").Capacity("16", "64Gi", 0).Label("node-pool", "cpu").Obj(),
		st.MakeNode("cpu-2").Capacity("16", "64Gi", 0).Label("node-pool", "cpu").Obj(),
		// GPU nodes have more CPU: without the selector and the GPU-node
		// penalty, the master would go there.
		st.MakeNode("gpu-1").Capacity("64", "512Gi", 8).Label("node-pool", "gpu").Obj(),
		st.MakeNode("gpu-2").Capacity("64", "512Gi", 8).Label("node-pool", "gpu").Obj(),
	}
	pods := []*corev1.Pod{st.MakePod("ns", "tf-master-0").Job("tf").Role("Master").Req("2", "4Gi").NodeSelector("node-pool", "cpu").Obj()}
	for i := range 4 {
		pods = append(pods, st.MakePod("ns", fmt.Sprintf("tf-worker-%d", i)).Job("tf").Role("Worker").Req("4", "16Gi").GPU(2).Obj())
	}
	c := cluster{nodes: nodes, pods: pods, jobs: []*api.JobInfo{
		st.MakeJob("ns", "tf").MinMember(5).MinTaskMember("Master", 1).MinTaskMember("Worker", 4).Obj(),
	}}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)["ns/tf"]
	if len(got) != 5 {
		t.Fatalf("placed %d pods, want the whole gang of 5: %v", len(got), ssn.Unschedulable())
	}
	for pod, node := range got {
		pool := ssn.Nodes[node].Node.Labels["node-pool"]
		if want := map[bool]string{true: "cpu", false: "gpu"}[strings.Contains(pod, "master")]; pool != want {
			t.Errorf("%s on %s (pool %s), want pool %s", pod, node, pool, want)
		}
	}
	// Bin-packing: 4 x 2 GPUs fill one 8-GPU node and leave the other whole.
	if idle := []int64{ssn.Nodes["gpu-1"].Idle.Scalar(st.GPU), ssn.Nodes["gpu-2"].Idle.Scalar(st.GPU)}; idle[0]*idle[1] != 0 || idle[0]+idle[1] != 8 {
		t.Errorf("idle GPUs after placement = %v, want one node full and one whole", idle)
	}
}

// CPU-only pods stay off GPU nodes while CPU nodes have room, and use GPU
// nodes only for what does not fit elsewhere. The GPU node sorts first by
// name and has more room, so it would win every tie.
func TestAllocateCPUTasksAvoidGPUNodes(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("a-gpu").Capacity("64", "256Gi", 8).Obj(),
		st.MakeNode("b-cpu").Capacity("4", "16Gi", 0).Obj(),
	}
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		onCPU int
		onGPU int
	}{
		{"fit on the cpu node", makeGang("j", 4, cpu("1")), 4, 0},
		{"overflow to the gpu node only once the cpu node is full", makeGang("j", 6, cpu("1")), 4, 2},
		{"too big for any cpu node", makeGang("j", 1, cpu("8")), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: nodes, pods: tt.pods, jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(int32(len(tt.pods))).Obj()}}
			ssn := schedule(t, c)
			checkInvariants(t, c, ssn.Bindings())
			count := map[string]int{}
			for _, node := range placed(ssn)["ns/j"] {
				count[node]++
			}
			if count["b-cpu"] != tt.onCPU || count["a-gpu"] != tt.onGPU {
				t.Errorf("on cpu node %d, on gpu node %d; want %d and %d", count["b-cpu"], count["a-gpu"], tt.onCPU, tt.onGPU)
			}
		})
	}
}

// Two 2-GPU tasks go to the node with 4 free GPUs, leaving the node with 8
// free whole. The 8-GPU node sorts first and has more CPU, so only
// bin-packing sends them to the other one.
func TestAllocateGPUBinPacking(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("a-8free").Capacity("64", "256Gi", 8).Obj(),
		st.MakeNode("b-4free").Capacity("32", "128Gi", 8).Obj(),
	}
	used := st.MakePod("other", "x").GPU(4).Node("b-4free").Phase(corev1.PodRunning).Obj()
	c := cluster{
		nodes: nodes,
		pods:  append(makeGang("j", 2, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(2) }), used),
		jobs:  []*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).Obj()},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	for pod, node := range placed(ssn)["ns/j"] {
		if node != "b-4free" {
			t.Errorf("%s on %s, want b-4free", pod, node)
		}
	}
	if len(placed(ssn)["ns/j"]) != 2 {
		t.Fatalf("placed %v", placed(ssn))
	}
	if idle := ssn.Nodes["a-8free"].Idle.Scalar(st.GPU); idle != 8 {
		t.Errorf("a-8free has %d idle GPUs, want 8 (whole)", idle)
	}
}

// minTaskMember: the workers alone would meet minMember, but the master
// cannot fit, so nothing is bound.
func TestAllocateMinTaskMemberUnmet(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("cpu").Capacity("2", "8Gi", 0).Label("pool", "cpu").Obj(),
		st.MakeNode("gpu").Capacity("32", "128Gi", 8).Label("pool", "gpu").Obj(),
	}
	pods := []*corev1.Pod{st.MakePod("ns", "master").Job("j").Role("master").Req("4", "").NodeSelector("pool", "cpu").Obj()}
	pods = append(pods, makeGang("j", 3, func(p *st.PodWrapper) { p.Req("1", "").GPU(2) })...)
	tests := []struct {
		name    string
		job     *api.JobInfo
		placed  int
		comment string
	}{
		{"master required", st.MakeJob("ns", "j").MinMember(3).MinTaskMember("master", 1).Obj(), 0, "nothing bound"},
		// The control: without the role minimum the same workers are placed,
		// so it is minTaskMember that holds them back above.
		{"no role minimum", st.MakeJob("ns", "j").MinMember(3).Obj(), 3, "workers bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: nodes, pods: pods, jobs: []*api.JobInfo{tt.job}}
			ssn := schedule(t, c)
			checkInvariants(t, c, ssn.Bindings())
			if got := len(ssn.Bindings()); got != tt.placed {
				t.Fatalf("%d placed, want %d (%s)", got, tt.placed, tt.comment)
			}
			if tt.placed == 0 {
				if idle := ssn.Nodes["gpu"].Idle.Scalar(st.GPU); idle != 8 {
					t.Errorf("gpu node has %d idle GPUs after discard, want 8", idle)
				}
				if u := ssn.Unschedulable()["ns/j"]; !strings.Contains(u.Message, "master") {
					t.Errorf("message %q does not name the master", u.Message)
				}
			}
		})
	}
}

// The higher-priority gang goes first when only one fits, although the
// other is older and sorts first by name.
func TestAllocatePriorityOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()},
		pods:  append(makeGang("a-low", 4, cpu("1")), makeGang("z-high", 4, cpu("1"))...),
		jobs: []*api.JobInfo{
			st.MakeJob("ns", "a-low").MinMember(4).Priority(1).Created(t0).Obj(),
			st.MakeJob("ns", "z-high").MinMember(4).Priority(10).Created(t0.Add(time.Hour)).Obj(),
		},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)
	if len(got["ns/z-high"]) != 4 || len(got["ns/a-low"]) != 0 {
		t.Errorf("placed high: %d, low: %d; want 4 and 0", len(got["ns/z-high"]), len(got["ns/a-low"]))
	}
}

// Jobs that cannot run this cycle are skipped with a reason, and do not
// stop the others.
func TestAllocateSkips(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("n1").Capacity("8", "16Gi", 0).Obj()}
	c := cluster{
		nodes: nodes,
		pods: append(append(append(makeGang("short", 2, cpu("1")), makeGang("closed", 1, cpu("1"))...),
			makeGang("noqueue", 1, cpu("1"))...), makeGang("ok", 2, cpu("1"))...),
		jobs: []*api.JobInfo{
			st.MakeJob("ns", "short").MinMember(3).Obj(),
			st.MakeJob("ns", "closed").Queue("closed").Obj(),
			st.MakeJob("ns", "noqueue").Queue("missing").Obj(),
			st.MakeJob("ns", "ok").MinMember(2).Obj(),
		},
		queues: []*api.QueueInfo{st.MakeQueue(api.DefaultQueue), {Name: "closed", Weight: 1, State: api.QueueClosed}},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)
	if len(got) != 1 || len(got["ns/ok"]) != 2 {
		t.Errorf("placed %v, want only ns/ok's 2 pods", got)
	}
	records := ssn.Unschedulable()
	for job, want := range map[api.JobID]string{
		"ns/short": gang.ReasonNotEnoughPods, "ns/closed": actions.ReasonQueueClosed, "ns/noqueue": actions.ReasonQueueNotFound,
	} {
		if records[job].Reason != want || records[job].Message == "" {
			t.Errorf("%s: record %+v, want reason %s and a message", job, records[job], want)
		}
	}
	if stats := ssn.Stats(); stats.Classes != 1 {
		t.Errorf("skipped jobs were evaluated: %d classes, want 1", stats.Classes)
	}
}

// A gang already running that lost a pod needs only the replacement; a
// gang whose minMember is met by running pods places what fits.
func TestAllocateCountsRunningTasks(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()}
	pods := makeGang("j", 4, cpu("1"))
	pods[0].Spec.NodeName, pods[0].Status.Phase = "n1", corev1.PodRunning
	pods[1].Spec.NodeName, pods[1].Status.Phase = "n1", corev1.PodRunning
	pods[2].Spec.NodeName, pods[2].Status.Phase = "n1", corev1.PodRunning
	c := cluster{nodes: nodes, pods: pods, jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(4).Obj()}}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	if got := placed(ssn)["ns/j"]; len(got) != 1 || got["j-3"] != "n1" {
		t.Errorf("placed %v, want j-3 on n1", got)
	}
}

// A member recreated beside one that succeeded is placed on its own: the
// finished member counts toward minMember (as Volcano counts it), so a
// gang whose worker finished before its master was restarted is not stuck.
func TestAllocatePlacesAMemberBesideASucceededOne(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()}
	pods := makeGang("j", 2, cpu("1"))
	pods[1].Spec.NodeName, pods[1].Status.Phase = "n1", corev1.PodSucceeded
	c := cluster{nodes: nodes, pods: pods, jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).Obj()}}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	if got := placed(ssn)["ns/j"]; len(got) != 1 || got["j-0"] != "n1" {
		t.Errorf("placed %v, want j-0 on n1", got)
	}
}

// The same input gives the same decisions in the same order.
func TestAllocateDeterministic(t *testing.T) {
	c := randomCluster(42, 12, 10)
	var first []string
	for i := range 5 {
		var got []string
		for _, d := range schedule(t, c).Bindings() {
			got = append(got, d.Task.Key()+"@"+d.Node)
		}
		if i == 0 {
			first = got
			if len(first) == 0 {
				t.Fatal("nothing placed; the test would prove nothing")
			}
			continue
		}
		if strings.Join(got, ",") != strings.Join(first, ",") {
			t.Fatalf("run %d differs:\n%v\n%v", i, got, first)
		}
	}
}

// What a gang took tentatively and gave back is there for the next job:
// "a" goes first (by name), takes 4 CPUs, fails on its fifth pod and is
// discarded; "b" then fits in the same 4 CPUs.
func TestAllocateDiscardFreesForNextJob(t *testing.T) {
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()},
		pods:  append(makeGang("a", 5, cpu("1")), makeGang("b", 4, cpu("1"))...),
		jobs:  []*api.JobInfo{st.MakeJob("ns", "a").MinMember(5).Obj(), st.MakeJob("ns", "b").MinMember(4).Obj()},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)
	if len(got["ns/a"]) != 0 || len(got["ns/b"]) != 4 {
		t.Errorf("placed a: %d, b: %d; want 0 and 4", len(got["ns/a"]), len(got["ns/b"]))
	}
	if u := ssn.Unschedulable()["ns/a"]; !strings.Contains(u.Message, "4 pods placed") {
		t.Errorf("a's message %q does not say it was discarded after placing 4", u.Message)
	}
}

// A gang larger than its minMember binds as many pods as fit once the
// minimum is met.
func TestAllocateBeyondMinMember(t *testing.T) {
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()},
		pods:  makeGang("j", 6, cpu("1")),
		jobs:  []*api.JobInfo{st.MakeJob("ns", "j").MinMember(3).Obj()},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	if got := len(placed(ssn)["ns/j"]); got != 4 {
		t.Errorf("placed %d, want the 4 that fit", got)
	}
	if u := ssn.Unschedulable()["ns/j"]; !strings.Contains(u.Message, "some pods were not placed") {
		t.Errorf("message %q does not report the pods left pending", u.Message)
	}
}

// A gang's minimal members are placed before its extras: the master (first
// in task order) would otherwise take one of the two nodes' host port
// 2222, and the two workers minTaskMember requires would not both fit.
func TestAllocatePlacesTheMinimalGangFirst(t *testing.T) {
	pod := func(name, role string) *corev1.Pod {
		return st.MakePod("ns", name).Job("j").Role(role).Req("1", "1Gi").HostPort("", corev1.ProtocolTCP, 2222).Obj()
	}
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj(), st.MakeNode("n2").Capacity("4", "16Gi", 0).Obj()},
		pods:  []*corev1.Pod{pod("j-0", "master"), pod("j-1", "worker"), pod("j-2", "worker")},
		jobs:  []*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).MinTaskMember("worker", 2).Obj()},
	}
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)["ns/j"]
	if len(got) != 2 || got["j-1"] == "" || got["j-2"] == "" {
		t.Errorf("placed %v, want the two workers", got)
	}
}
