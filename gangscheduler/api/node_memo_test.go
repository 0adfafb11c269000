package api_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// A snapshot built with a NodeMemo equals one built afresh, whatever
// happened to the nodes since the memo's last snapshot.
func TestNodeMemo(t *testing.T) {
	node := func(name, cpu string) *corev1.Node { return st.MakeNode(name).Capacity(cpu, "8Gi", 2).Obj() }
	a, b, c := node("a", "4"), node("b", "4"), node("c", "4")
	heartbeat := a.DeepCopy() // a new object, same allocatable
	resized := node("b", "8")
	tests := []struct {
		name   string
		cycles [][]*corev1.Node // the nodes listed, cycle after cycle
	}{
		{"unchanged, listed in another order", [][]*corev1.Node{{b, a, c}, {c, a, b}}},
		{"a node deleted", [][]*corev1.Node{{a, b, c}, {a, c}}},
		{"a node added", [][]*corev1.Node{{b, c}, {c, b, a}}},
		{"a node replaced, same allocatable", [][]*corev1.Node{{a, b}, {heartbeat, b}}},
		{"a node replaced, other allocatable", [][]*corev1.Node{{a, b}, {a, resized}}},
		{"replaced and back", [][]*corev1.Node{{a, b}, {a, resized}, {a, b}}},
		{"a duplicate name, then a good list", [][]*corev1.Node{{a, b}, {a, b, heartbeat}, {a, c}}},
		{"all gone", [][]*corev1.Node{{a, b}, {}}},
	}
	// Each case runs twice: snapshots kept, and each released after a
	// task was placed on its first node, so that the next one reuses and
	// makes over its nodes.
	for _, tt := range tests {
		for _, release := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/release=%v", tt.name, release), func(t *testing.T) {
				checkNodeMemo(t, tt.cycles, release)
			})
		}
	}
}

func checkNodeMemo(t *testing.T, cycles [][]*corev1.Node, release bool) {
	var memo api.NodeMemo
	var got *api.Snapshot
	for i, nodes := range cycles {
		if release && got != nil {
			if len(got.NodeList) > 0 {
				pod := st.MakePod("ns", fmt.Sprintf("p%d", i)).Req("1", "1Gi").GPU(1).Obj()
				if err := got.NodeList[0].AddTask(api.NewTaskInfo("", pod)); err != nil {
					t.Fatal(err)
				}
			}
			got.Release()
		}
		s, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Memo: &memo})
		if _, fresh := api.NewSnapshot(api.Cluster{Nodes: nodes}); (err != nil) != (fresh != nil) {
			t.Fatalf("memo error %v, fresh error %v", err, fresh)
		}
		if err == nil {
			got = s
		}
	}
	last := cycles[len(cycles)-1]
	want, err := api.NewSnapshot(api.Cluster{Nodes: last})
	if err != nil {
		t.Fatal(err)
	}
	if memo.Len() != len(last) {
		t.Errorf("memo holds %d nodes, want %d", memo.Len(), len(last))
	}
	if len(got.NodeList) != len(want.NodeList) {
		t.Fatalf("%d nodes, want %d", len(got.NodeList), len(want.NodeList))
	}
	for i, n := range got.NodeList {
		w := want.NodeList[i]
		if n.Node != w.Node || n.Index != i || got.Nodes[n.Name] != n || !n.Allocatable.Equal(&w.Allocatable) || !n.Idle.Equal(&w.Idle) {
			t.Errorf("node %d: %s (index %d) allocatable %v idle %v, want %s allocatable %v", i, n.Name, n.Index, n.Allocatable, n.Idle, w.Name, w.Allocatable)
		}
		if n.Tasks != nil || !n.Used.IsZero() {
			t.Errorf("node %s holds %d tasks (used %v) of an earlier snapshot", n.Name, len(n.Tasks), n.Used)
		}
	}
	if total, wantTotal := got.TotalAllocatable(), want.TotalAllocatable(); !total.Equal(&wantTotal) {
		t.Errorf("total %v, want %v", total, wantTotal)
	}
}

// Snapshots that share a memo share no mutable state: placing tasks in one
// changes neither the memo nor the next snapshot.
func TestNodeMemoSnapshotsOwnTheirNodes(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("gpu").Capacity("8", "8Gi", 4).Obj()}
	var memo api.NodeMemo
	first, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Memo: &memo})
	if err != nil {
		t.Fatal(err)
	}
	n := first.NodeList[0]
	for _, pod := range []*corev1.Pod{
		st.MakePod("ns", "cpu").Req("1", "").Obj(), // no scalar: Idle keeps sharing
		st.MakePod("ns", "gpu").Req("1", "").GPU(3).Obj(),
	} {
		if err := n.AddTask(api.NewTaskInfo("", pod)); err != nil {
			t.Fatal(err)
		}
	}
	if n.Idle.Scalar(st.GPU) != 1 || n.Allocatable.Scalar(st.GPU) != 4 {
		t.Errorf("after placing 3 GPUs: idle %d, allocatable %d; want 1, 4", n.Idle.Scalar(st.GPU), n.Allocatable.Scalar(st.GPU))
	}
	second, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Memo: &memo})
	if err != nil {
		t.Fatal(err)
	}
	m := second.NodeList[0]
	if m == n || m.Idle.Scalar(st.GPU) != 4 || m.Idle.MilliCPU != 8000 || len(m.Tasks) != 0 {
		t.Errorf("next snapshot sees the last one's placements: idle %v, %d tasks", m.Idle, len(m.Tasks))
	}
	total := second.TotalAllocatable()
	total.AddScalar(st.GPU, 10) // a copy: changes nothing shared
	if again := second.TotalAllocatable(); again.Scalar(st.GPU) != 4 {
		t.Errorf("TotalAllocatable shares its scalars: %v", again)
	}
}

// memoSnapshots returns a function that builds snapshots of nodes, one
// after another, with one NodeMemo.
func memoSnapshots(t *testing.T) func(nodes ...*corev1.Node) *api.Snapshot {
	var memo api.NodeMemo
	return func(nodes ...*corev1.Node) *api.Snapshot {
		t.Helper()
		s, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Memo: &memo})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// A released snapshot's nodes are the next snapshot's, made over, when the
// node set is the same; a kept snapshot's never are.
func TestNodeMemoReusesReleasedNodes(t *testing.T) {
	a, b := st.MakeNode("a").Capacity("8", "8Gi", 4).Obj(), st.MakeNode("b").Capacity("8", "8Gi", 4).Obj()
	bResized := st.MakeNode("b").Capacity("16", "8Gi", 4).Obj()
	c := st.MakeNode("c").Capacity("8", "8Gi", 4).Obj()
	snap := memoSnapshots(t)
	first := snap(a, b)
	na := first.Nodes["a"]
	if err := na.AddTask(api.NewTaskInfo("", st.MakePod("ns", "p").Req("2", "1Gi").GPU(3).Obj())); err != nil {
		t.Fatal(err)
	}
	first.Release()
	if first.Nodes != nil || first.NodeList != nil {
		t.Error("a released snapshot still lists its nodes")
	}

	second := snap(b, a)
	if second.Nodes["a"] != na {
		t.Error("the released nodes were not reused for the same node set")
	}
	if na.Tasks != nil || na.Idle.Scalar(st.GPU) != 4 || na.Idle.MilliCPU != 8000 || !na.Used.IsZero() || na.Index != 0 {
		t.Errorf("reused node a not made over: idle %v, used %v, %d tasks, index %d", na.Idle, na.Used, len(na.Tasks), na.Index)
	}
	if na.Allocatable.Scalar(st.GPU) != 4 {
		t.Errorf("placing a task changed the shared allocatable: %v", na.Allocatable)
	}

	kept := second // not released: the next snapshot must not touch it
	third := snap(a, bResized)
	if third.Nodes["a"] == na {
		t.Error("a snapshot still in use lent its nodes")
	}
	if kept.Nodes["a"] != na || kept.NodeList[1].Node != b {
		t.Error("building a snapshot changed one still in use")
	}
	// The same names with a node object replaced: reused, and the
	// replaced node made from its new object.
	thirdB := third.Nodes["b"]
	third.Release()
	fourth := snap(a, b)
	if nb := fourth.Nodes["b"]; nb != thirdB || nb.Node != b || nb.Allocatable.MilliCPU != 8000 || nb.Idle.MilliCPU != 8000 {
		t.Errorf("node b after its object was replaced: reused %v, allocatable %v, idle %v", nb == thirdB, nb.Allocatable, nb.Idle)
	}
	reused := fourth.Nodes["a"]
	fourth.Release()
	if fifth := snap(a, b, c); len(fifth.NodeList) != 3 || fifth.Nodes["c"].Index != 2 || fifth.Nodes["a"] == reused {
		t.Errorf("a changed node set reused the old nodes: %d nodes", len(fifth.NodeList))
	}
}

// With NodesUnchanged the memo's nodes are the snapshot's, unlisted, and
// a reused snapshot makes over exactly the nodes that took a task.
func TestNodesUnchanged(t *testing.T) {
	a, b := st.MakeNode("a").Capacity("8", "8Gi", 4).Obj(), st.MakeNode("b").Capacity("8", "8Gi", 4).Obj()
	onB := st.MakePod("ns", "on-b").Req("2", "1Gi").GPU(1).Node("b").Phase(corev1.PodRunning).Obj()
	var memo api.NodeMemo
	first, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{a, b}, Memo: &memo})
	if err != nil {
		t.Fatal(err)
	}
	na, nb := first.Nodes["a"], first.Nodes["b"]
	if err := na.AddTask(api.NewTaskInfo("", st.MakePod("ns", "trial").Req("4", "1Gi").GPU(4).Obj())); err != nil {
		t.Fatal(err)
	}
	first.Release()
	for i, pods := range [][]*corev1.Pod{{onB}, nil, {onB}} {
		s, err := api.NewSnapshot(api.Cluster{Pods: pods, Memo: &memo, NodesUnchanged: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.NodeList) != 2 || s.Nodes["a"] != na || s.Nodes["b"] != nb || s.NodeList[1] != nb {
			t.Fatalf("snapshot %d: not the memo's nodes, reused: %v", i, s.NodeList)
		}
		if na.Tasks != nil || na.Idle.Scalar(st.GPU) != 4 || na.Idle.MilliCPU != 8000 {
			t.Errorf("snapshot %d: node a not made over: idle %v, %d tasks", i, na.Idle, len(na.Tasks))
		}
		wantGPUs := int64(4 - len(pods))
		if nb.Idle.Scalar(st.GPU) != wantGPUs || len(nb.Tasks) != len(pods) {
			t.Errorf("snapshot %d: node b idle %v with %d tasks, want %d GPUs idle", i, nb.Idle, len(nb.Tasks), wantGPUs)
		}
		s.Release()
	}
}

// An empty node needs no task map; every reader copes with nil.
func TestNodeInfoNilTasks(t *testing.T) {
	n := api.NewNodeInfo(st.MakeNode("n1").Capacity("4", "8Gi", 0).Obj())
	task := api.NewTaskInfo("", st.MakePod("ns", "p").Req("1", "").Obj())
	if n.Tasks != nil || len(n.Tasks) != 0 || n.Tasks[task.UID] != nil {
		t.Fatalf("empty node has tasks %v", n.Tasks)
	}
	for range n.Tasks {
		t.Error("ranged over a task of an empty node")
	}
	if err := n.RemoveTask(task); err == nil {
		t.Error("removing from an empty node is not an error")
	}
	if err := n.AddTask(task); err != nil || n.Tasks[task.UID] != task {
		t.Fatalf("AddTask on an empty node: %v, tasks %v", err, n.Tasks)
	}
}

// Label indexes are shared by the snapshots of an unchanged node set and
// rebuilt for a key whose value changed on some node.
func TestNodesByLabel(t *testing.T) {
	node := func(name, pool, zone string) *corev1.Node {
		return st.MakeNode(name).Label("pool", pool).Label("zone", zone).Obj()
	}
	a, b, c := node("a", "cpu", "z1"), node("b", "gpu", "z1"), node("c", "gpu", "z2")
	aHeartbeat := a.DeepCopy()
	bMoved := node("b", "gpu", "z2")
	snap := memoSnapshots(t)

	s1 := snap(a, b, c)
	pool, zone := s1.NodesByLabel("pool"), s1.NodesByLabel("zone")
	if got := pool.ByValue["gpu"]; !slices.Equal(got, []int32{1, 2}) || !slices.Equal(pool.Pos, []int32{0, 0, 1}) {
		t.Errorf("pool=gpu at %v, positions %v; want [1 2], [0 0 1]", got, pool.Pos)
	}
	if none := s1.NodesByLabel("absent"); len(none.ByValue) != 0 || !slices.Equal(none.Pos, []int32{-1, -1, -1}) {
		t.Errorf("absent key indexed as %v", none)
	}

	s2 := snap(aHeartbeat, b, c)
	if s2.NodesByLabel("pool") != pool || s2.NodesByLabel("zone") != zone {
		t.Error("a heartbeat (new object, same labels) rebuilt the indexes")
	}
	s3 := snap(aHeartbeat, bMoved, c)
	if s3.NodesByLabel("pool") != pool {
		t.Error("a zone change rebuilt the pool index")
	}
	if got := s3.NodesByLabel("zone").ByValue["z2"]; !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("zone=z2 at %v after b moved, want [1 2]", got)
	}
	if got := zone.ByValue["z2"]; !slices.Equal(got, []int32{2}) {
		t.Errorf("the index of an earlier snapshot changed: zone=z2 at %v", got)
	}
	s4 := snap(bMoved, c)
	if got := s4.NodesByLabel("pool").ByValue["gpu"]; !slices.Equal(got, []int32{0, 1}) {
		t.Errorf("pool=gpu at %v after a was deleted, want [0 1]", got)
	}
}

// A hold leaves a node only its pod slots, once; the next snapshot that
// reuses the node has it empty and unheld again, and lists it among the
// nodes taken once. So with a reservation.
func TestNodeHoldIsMadeOver(t *testing.T) {
	a, b := st.MakeNode("a").Capacity("8", "8Gi", 4).Obj(), st.MakeNode("b").Capacity("8", "8Gi", 4).Obj()
	c := st.MakeNode("c").Capacity("8", "8Gi", 4).Obj()
	snap := memoSnapshots(t)
	first := snap(a, b, c)
	na := first.Nodes["a"]
	if err := na.AddTask(api.NewTaskInfo("", st.MakePod("ns", "p").Req("2", "1Gi").GPU(1).Obj())); err != nil {
		t.Fatal(err)
	}
	na.Hold("ns/big")
	na.Hold("ns/other")
	if na.HeldFor != "ns/big" || na.Idle.MilliCPU != 0 || na.Idle.Memory != 0 || na.Idle.Scalar(st.GPU) != 0 || na.Idle.Pods != na.Allocatable.Pods-1 {
		t.Errorf("held node a: held for %q, idle %v; want ns/big, only pod slots", na.HeldFor, na.Idle)
	}
	if na.Allocatable.Scalar(st.GPU) != 4 {
		t.Errorf("the hold changed the shared allocatable: %v", na.Allocatable)
	}
	na.Unhold()
	if na.HeldFor != "" || na.Idle.Scalar(st.GPU) != 3 || na.Idle.MilliCPU != 6000 {
		t.Errorf("unheld node a: held for %q, idle %v; want 3 GPUs and 6 CPUs idle", na.HeldFor, na.Idle)
	}
	na.Hold("ns/big")
	nb := first.Nodes["b"]
	nb.Hold("ns/big") // a node that took no task
	first.Nodes["c"].Reserve(&api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: 2}}, nil)
	first.Nodes["c"].AddStandIn(api.NewTaskInfo("ns/big", st.MakePod("ns", "big-0").Job("big").Obj()).StandInOn("c", api.Resource{}))
	if taken := first.NodesTaken(); len(taken) != 3 {
		t.Errorf("nodes taken = %d, want a, b and c once each", len(taken))
	}
	first.Release()

	second := snap(a, b, c)
	for _, n := range []*api.NodeInfo{second.Nodes["a"], second.Nodes["b"], second.Nodes["c"]} {
		if n.HeldFor != "" || n.Idle.Scalar(st.GPU) != 4 || n.Idle.MilliCPU != 8000 || len(n.StandIns) != 0 {
			t.Errorf("reused node %s not made over: held for %q, idle %v, stand-ins %v", n.Name, n.HeldFor, n.Idle, n.StandIns)
		}
	}
}
