package api_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

func TestTaskStatus(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want api.TaskStatus
	}{
		{"unassigned", st.MakePod("ns", "p").Obj(), api.Pending},
		{"assigned, not started", st.MakePod("ns", "p").Node("n1").Obj(), api.Bound},
		{"running", st.MakePod("ns", "p").Node("n1").Phase(corev1.PodRunning).Obj(), api.Running},
		{"terminating", st.MakePod("ns", "p").Node("n1").Phase(corev1.PodRunning).Terminating().Obj(), api.Releasing},
		{"succeeded", st.MakePod("ns", "p").Node("n1").Phase(corev1.PodSucceeded).Obj(), api.Succeeded},
		{"failed and terminating", st.MakePod("ns", "p").Node("n1").Phase(corev1.PodFailed).Terminating().Obj(), api.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := api.NewTaskInfo("", tt.pod).Status; got != tt.want {
				t.Errorf("status = %v, want %v", got, tt.want)
			}
		})
	}
}

// The node's accounting is every non-terminal pod assigned to it, whoever
// scheduled it; idle is allocatable minus that.
func TestSnapshotNodeAccounting(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("n2").Capacity("8", "32Gi", 8).Obj(),
		st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj(),
	}
	pods := []*corev1.Pod{
		// another scheduler's running pod
		st.MakePod("other", "a").Req("1", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj(),
		// a terminating pod still holds its resources
		st.MakePod("other", "b").Req("500m", "").Node("n1").Phase(corev1.PodRunning).Terminating().Obj(),
		// terminal pods hold nothing
		st.MakePod("other", "c").Req("2", "").Node("n1").Phase(corev1.PodSucceeded).Obj(),
		st.MakePod("other", "d").Req("2", "").Node("n1").Phase(corev1.PodFailed).Obj(),
		// a pending pod of no gang holds nothing and is not a task
		st.MakePod("other", "e").Req("2", "").Obj(),
		// a pod on a node that is not in the snapshot is ignored
		st.MakePod("other", "f").Req("2", "").Node("gone").Phase(corev1.PodRunning).Obj(),
		// a gang's bound worker is a task and holds its resources
		st.MakePod("ml", "w0").Job("j").Role("worker").Req("1", "").GPU(2).Node("n2").Obj(),
		st.MakePod("ml", "w1").Job("j").Role("worker").Req("1", "").GPU(2).Obj(),
	}
	s := st.MustSnapshot(nodes, pods, []*api.JobInfo{st.MakeJob("ml", "j").MinMember(2).Obj()})

	if got := []string{s.NodeList[0].Name, s.NodeList[1].Name}; !slices.Equal(got, []string{"n1", "n2"}) || s.NodeList[1].Index != 1 {
		t.Fatalf("NodeList not sorted with indexes: %v", got)
	}
	n1, n2 := s.Nodes["n1"], s.Nodes["n2"]
	if want := (api.Resource{MilliCPU: 1500, Memory: 1 << 30, Pods: 2}); !n1.Used.Equal(&want) {
		t.Errorf("n1 used = %v, want %v", n1.Used, want)
	}
	idle := n1.Allocatable.Clone()
	idle.Sub(&n1.Used)
	if !n1.Idle.Equal(&idle) {
		t.Errorf("n1 idle = %v, want allocatable - used = %v", n1.Idle, idle)
	}
	if got := n2.Idle.Scalar(st.GPU); got != 6 {
		t.Errorf("n2 idle gpu = %d, want 8 - 2", got)
	}
	job := s.Jobs["ml/j"]
	if len(job.Tasks) != 2 || job.ReadyCount() != 1 || len(job.PendingTasks()) != 1 {
		t.Errorf("job tasks = %d, ready %d, pending %d; want 2, 1, 1", len(job.Tasks), job.ReadyCount(), len(job.PendingTasks()))
	}
	if len(n2.Tasks) != 1 {
		t.Errorf("n2 tasks = %d, want 1", len(n2.Tasks))
	}
}

func TestNewSnapshotRejectsDuplicates(t *testing.T) {
	n := st.MakeNode("n1").Obj()
	p := st.MakePod("ns", "p").Obj()
	noUID := st.MakePod("ns", "q").Obj()
	noUID.UID = ""
	cases := map[string]api.Cluster{
		"node twice":  {Nodes: []*corev1.Node{n, n}},
		"pod twice":   {Pods: []*corev1.Pod{p, p}},
		"pod no UID":  {Pods: []*corev1.Pod{noUID}},
		"job twice":   {Jobs: []*api.JobInfo{st.MakeJob("ns", "j").Obj(), st.MakeJob("ns", "j").Obj()}},
		"queue twice": {Queues: []*api.QueueInfo{st.MakeQueue("q"), st.MakeQueue("q")}},
	}
	for name, c := range cases {
		if _, err := api.NewSnapshot(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNodeAddRemoveTask(t *testing.T) {
	n := api.NewNodeInfo(st.MakeNode("n1").Capacity("4", "8Gi", 4).Obj())
	before := n.Idle.Clone()
	task := api.NewTaskInfo("ns/j", st.MakePod("ns", "p").Req("1", "1Gi").GPU(1).HostPort("", "", 8080).Obj())
	if err := n.AddTask(task); err != nil {
		t.Fatal(err)
	}
	if n.Idle.MilliCPU != before.MilliCPU-1000 || n.Idle.Scalar(st.GPU) != 3 || n.Idle.Pods != before.Pods-1 {
		t.Errorf("idle after add = %v", n.Idle)
	}
	if !n.PortsConflict(task.HostPorts) {
		t.Error("port of added task not in use")
	}
	if err := n.AddTask(task); err == nil {
		t.Error("adding a task twice is not an error")
	}
	if err := n.RemoveTask(task); err != nil {
		t.Fatal(err)
	}
	if !n.Idle.Equal(&before) || !n.Used.IsZero() || n.PortsConflict(task.HostPorts) {
		t.Errorf("remove did not restore: idle %v used %v", n.Idle, n.Used)
	}
	if err := n.RemoveTask(task); err == nil {
		t.Error("removing an absent task is not an error")
	}
}

// Kubernetes' host port rules (kube-scheduler's HostPortInfo.CheckConflict).
func TestPortsConflict(t *testing.T) {
	port := func(ip string, proto corev1.Protocol, p int32) corev1.ContainerPort {
		return corev1.ContainerPort{HostIP: ip, Protocol: proto, HostPort: p}
	}
	tests := []struct {
		name     string
		used     []corev1.ContainerPort
		want     corev1.ContainerPort
		conflict bool
	}{
		{"free node", nil, port("", "", 80), false},
		{"same port, defaults", []corev1.ContainerPort{port("", "", 80)}, port("", "TCP", 80), true},
		{"other port", []corev1.ContainerPort{port("", "", 80)}, port("", "", 81), false},
		{"other protocol", []corev1.ContainerPort{port("", "TCP", 80)}, port("", "UDP", 80), false},
		{"want all IPs, used on one", []corev1.ContainerPort{port("10.0.0.1", "", 80)}, port("0.0.0.0", "", 80), true},
		{"want one IP, used on all", []corev1.ContainerPort{port("", "", 80)}, port("10.0.0.1", "", 80), true},
		{"want one IP, used on the same", []corev1.ContainerPort{port("10.0.0.1", "", 80)}, port("10.0.0.1", "", 80), true},
		{"want one IP, used on another", []corev1.ContainerPort{port("10.0.0.2", "", 80)}, port("10.0.0.1", "", 80), false},
		{"hostPort 0 never conflicts", []corev1.ContainerPort{port("", "", 80)}, port("", "", 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := api.NewNodeInfo(st.MakeNode("n1").Obj())
			other := st.MakePod("ns", "other").Node("n1").Obj()
			other.Spec.Containers[0].Ports = append(other.Spec.Containers[0].Ports, tt.used...)
			if err := n.AddTask(api.NewTaskInfo("", other)); err != nil {
				t.Fatal(err)
			}
			if got := n.PortsConflict([]corev1.ContainerPort{tt.want}); got != tt.conflict {
				t.Errorf("PortsConflict = %v, want %v", got, tt.conflict)
			}
		})
	}
}

func TestHostPortsIncludeSidecarsOnly(t *testing.T) {
	p := st.MakePod("ns", "p").HostPort("", "", 80).Obj()
	sidecar := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init", Ports: []corev1.ContainerPort{{HostPort: 81}}},
		{Name: "sidecar", RestartPolicy: &sidecar, Ports: []corev1.ContainerPort{{HostPort: 82}, {ContainerPort: 9000}}},
	}
	var got []int32
	for _, hp := range api.NewTaskInfo("", p).HostPorts {
		got = append(got, hp.HostPort)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int32{80, 82}) {
		t.Errorf("host ports = %v, want [80 82]", got)
	}
}

func TestJobReadiness(t *testing.T) {
	job := func(statuses map[string][]api.TaskStatus, min int32, minRole map[string]int32) *api.JobInfo {
		j := api.NewJobInfo("ns", "j")
		j.MinMember, j.MinTaskMember = min, minRole
		i := 0
		for _, role := range []string{"master", "worker"} {
			for _, s := range statuses[role] {
				task := api.NewTaskInfo(j.UID, st.MakePod("ns", role+string(rune('a'+i))).Role(role).Obj())
				task.Status = s
				i++
				if err := j.AddTask(task); err != nil {
					t.Fatal(err)
				}
			}
		}
		return j
	}
	P, A, B, R, S, F, X := api.Pending, api.Allocated, api.Bound, api.Running, api.Succeeded, api.Failed, api.Releasing
	tests := []struct {
		name          string
		statuses      map[string][]api.TaskStatus
		min           int32
		minRole       map[string]int32
		ready         int32
		valid         int32
		isReady       bool
		validByWorker int32
	}{
		{"all pending", map[string][]api.TaskStatus{"worker": {P, P}}, 2, nil, 0, 2, false, 2},
		{"allocated, bound, running count", map[string][]api.TaskStatus{"worker": {A, B, R}}, 3, nil, 3, 3, true, 3},
		{"failed and releasing do not count, succeeded does", map[string][]api.TaskStatus{"worker": {R, S, F, X}}, 2, nil, 2, 2, true, 2},
		{"failed and releasing do not count", map[string][]api.TaskStatus{"worker": {R, F, X}}, 2, nil, 1, 1, false, 1},
		{"minMember met, role minimum not", map[string][]api.TaskStatus{"master": {P}, "worker": {A, A}}, 2, map[string]int32{"master": 1}, 2, 3, false, 2},
		{"minMember and role minimum met", map[string][]api.TaskStatus{"master": {A}, "worker": {A, P}}, 2, map[string]int32{"master": 1, "worker": 1}, 2, 3, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job(tt.statuses, tt.min, tt.minRole)
			if got := j.ReadyCount(); got != tt.ready {
				t.Errorf("ReadyCount = %d, want %d", got, tt.ready)
			}
			if got := j.ValidCount(); got != tt.valid {
				t.Errorf("ValidCount = %d, want %d", got, tt.valid)
			}
			if got := j.ValidCountOfRole("worker"); got != tt.validByWorker {
				t.Errorf("ValidCountOfRole(worker) = %d, want %d", got, tt.validByWorker)
			}
			if got := j.IsReady(); got != tt.isReady {
				t.Errorf("IsReady = %v, want %v", got, tt.isReady)
			}
		})
	}
}

func TestPendingTasksOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	j := api.NewJobInfo("ns", "j")
	pods := []*corev1.Pod{
		st.MakePod("ns", "b-old").Job("j").Created(t0).Obj(),
		st.MakePod("ns", "a-new").Job("j").Created(t0.Add(time.Second)).Obj(),
		st.MakePod("ns", "a-old").Job("j").Created(t0).Obj(),
		st.MakePod("ns", "z-high").Job("j").Priority(10).Created(t0.Add(time.Hour)).Obj(),
		st.MakePod("ns", "bound").Job("j").Node("n1").Obj(),
	}
	for _, p := range pods {
		if err := j.AddTask(api.NewTaskInfo(j.UID, p)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, task := range j.PendingTasks() {
		got = append(got, task.Name)
	}
	// priority first, then age, then name; bound tasks are not pending
	if want := []string{"z-high", "a-old", "b-old", "a-new"}; !slices.Equal(got, want) {
		t.Errorf("PendingTasks = %v, want %v", got, want)
	}
	if err := j.AddTask(api.NewTaskInfo(j.UID, pods[0])); err == nil {
		t.Error("adding a task twice is not an error")
	}
	if err := j.AddTask(api.NewTaskInfo("ns/other", pods[0])); err == nil {
		t.Error("adding another job's task is not an error")
	}
}

// Pods with the same scheduling constraints share a class signature; any
// difference in a field a predicate reads gives another one.
func TestClassSignature(t *testing.T) {
	base := func(name string) *st.PodWrapper {
		return st.MakePod("ns", name).Role("worker").Req("1", "1Gi").GPU(2).
			NodeSelector("pool", "gpu").NodeSelector("zone", "a").
			Toleration("gpu", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule)
	}
	sig := func(p *corev1.Pod) (uint64, string) {
		task := api.NewTaskInfo("ns/j", p)
		return task.ClassHash, task.ClassSignature
	}
	h0, s0 := sig(base("w0").Obj())
	if s0 == "" || h0 == 0 {
		t.Fatal("pending task has no class signature")
	}
	if h, s := sig(base("w1").Priority(5).Obj()); h != h0 || s != s0 {
		t.Error("identical constraints (name and priority differ) give another class")
	}
	different := map[string]*corev1.Pod{
		"request":       base("x").Req("2", "").Obj(),
		"gpu count":     base("x").GPU(1).Obj(),
		"nodeSelector":  base("x").NodeSelector("zone", "b").Obj(),
		"affinity":      base("x").NodeAffinity("rack", corev1.NodeSelectorOpIn, "r1").Obj(),
		"toleration":    base("x").Toleration("spot", corev1.TolerationOpExists, "", "").Obj(),
		"host port":     base("x").HostPort("", "", 8080).Obj(),
		"host port IP":  base("x").HostPort("10.0.0.1", "", 8080).Obj(),
		"more selector": base("x").NodeSelector("rack", "1").Obj(),
	}
	for name, p := range different {
		if h, s := sig(p); s == s0 || h == h0 {
			t.Errorf("%s: same class signature as the base pod", name)
		}
	}
	// Claims: the volumes they are bound to decide where a pod may go.
	claimSig := func(p *corev1.Pod) string { _, s := sig(p); return s }
	shared := claimSig(base("a").Claim("data", "dataset").Obj())
	if claimSig(base("b").Claim("data", "dataset").Obj()) != shared {
		t.Error("two members mounting the same claim are in different classes")
	}
	for name, p := range map[string]*corev1.Pod{
		"no claim":                    base("a").Obj(),
		"another claim":               base("a").Claim("data", "dataset-1").Obj(),
		"the claim in a namespace":    st.MakePod("other", "a").Role("worker").Req("1", "1Gi").GPU(2).NodeSelector("pool", "gpu").NodeSelector("zone", "a").Toleration("gpu", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule).Claim("data", "dataset").Obj(),
		"a second claim":              base("a").Claim("data", "dataset").Claim("ckpt", "ckpt").Obj(),
		"an ephemeral volume":         base("dataset").Ephemeral("data", "local").Obj(),
		"the claim as p-v, not p's v": base("a").Claim("data", "a-scratch").Obj(),
	} {
		if s := claimSig(p); s == shared {
			t.Errorf("%s: same class as the pod with claim dataset", name)
		}
	}
	if claimSig(base("a").Ephemeral("scratch", "local").Obj()) == claimSig(base("b").Ephemeral("scratch", "local").Obj()) {
		t.Error("two pods' ephemeral volumes of one name share a class: their claims are <pod>-scratch, each its own")
	}
	if claimSig(base("a").Ephemeral("scratch", "local").Obj()) == claimSig(base("a").Claim("scratch", "a-scratch").Obj()) {
		t.Error("pod a's ephemeral volume scratch and a claim named a-scratch share a class: only one must be the pod's own")
	}

	if task := api.NewTaskInfo("ns/j", base("bound").Node("n1").Obj()); task.ClassSignature != s0 {
		t.Error("a bound gang task has another class signature than its pending twin")
	}
	if task := api.NewTaskInfo("", base("other").Node("n1").Obj()); task.ClassSignature != "" {
		t.Error("another scheduler's bound pod got a class signature it never needs")
	}
}

// NodesTaken are the nodes that took a task, loaded or placed, in
// NodeList order, whether or not they still hold one; every other node is
// empty. A reused snapshot starts the list afresh.
func TestNodesTaken(t *testing.T) {
	var nodes []*corev1.Node
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, st.MakeNode(name).Capacity("8", "32Gi", 0).Obj())
	}
	pods := []*corev1.Pod{
		st.MakePod("ns", "on-d").Req("1", "").Node("d").Phase(corev1.PodRunning).Obj(),
		st.MakePod("ns", "on-b").Req("1", "").Node("b").Phase(corev1.PodRunning).Obj(),
		st.MakePod("ns", "done-on-c").Req("1", "").Node("c").Phase(corev1.PodSucceeded).Obj(),
	}
	names := func(ns []*api.NodeInfo) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	var memo api.NodeMemo
	s, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Pods: pods, Memo: &memo})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s.NodesTaken()); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("after loading: %v, want [b d] (a finished pod takes nothing)", got)
	}
	trial := api.NewTaskInfo("", st.MakePod("ns", "trial").Req("1", "").Obj())
	if err := s.Nodes["a"].AddTask(trial); err != nil {
		t.Fatal(err)
	}
	if err := s.Nodes["a"].RemoveTask(trial); err != nil {
		t.Fatal(err)
	}
	if got := names(s.NodesTaken()); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("after a trial on a: %v, want [a b d]", got)
	}
	for _, n := range s.NodeList {
		if !slices.Contains(names(s.NodesTaken()), n.Name) && (n.Tasks != nil || !n.Idle.Equal(&n.Allocatable)) {
			t.Errorf("node %s not taken but not empty: idle %v of %v", n.Name, n.Idle, n.Allocatable)
		}
	}
	s.Release()
	again, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Pods: pods[:1], Memo: &memo})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(again.NodesTaken()); !slices.Equal(got, []string{"d"}) {
		t.Errorf("reused snapshot: %v, want [d]", got)
	}
}
