package framework_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
)

func cpuNodes(n int, cpu string) []*corev1.Node {
	var nodes []*corev1.Node
	for i := range n {
		nodes = append(nodes, st.MakeNode(fmt.Sprintf("n%02d", i)).Capacity(cpu, "64Gi", 0).Label("pool", []string{"a", "b"}[i%2]).Obj())
	}
	return nodes
}

func TestStatementAllocateDiscardCommit(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(2, "4"),
		[]*corev1.Pod{
			st.MakePod("ns", "p0").Job("j").Req("1", "1Gi").HostPort("", "", 80).Obj(),
			st.MakePod("ns", "p1").Job("j").Req("2", "").Obj(),
			st.MakePod("ns", "p2").Job("j").Req("1", "").Obj(),
		},
		[]*api.JobInfo{st.MakeJob("ns", "j").MinMember(3).Obj()})
	ssn := framework.OpenSession(snap)
	n0, n1 := snap.NodeList[0], snap.NodeList[1]
	idle0, idle1 := n0.Idle.Clone(), n1.Idle.Clone()
	job := snap.Jobs["ns/j"]
	tasks := job.PendingTasks()

	stmt := ssn.Statement()
	for i, task := range tasks {
		if err := stmt.Allocate(task, snap.NodeList[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.Allocate(tasks[0], n1); err == nil {
		t.Error("allocating an allocated task is not an error")
	}
	foreign := api.NewNodeInfo(st.MakeNode("n00").Obj())
	if err := ssn.Statement().Allocate(api.NewTaskInfo(job.UID, st.MakePod("ns", "x").Obj()), foreign); err == nil {
		t.Error("allocating on a node of another snapshot is not an error")
	}
	if job.ReadyCount() != 3 || tasks[0].Status != api.Allocated || tasks[0].NodeName != n0.Name {
		t.Fatalf("after Allocate: ready %d, task0 %v on %q", job.ReadyCount(), tasks[0].Status, tasks[0].NodeName)
	}
	if n0.Idle.Equal(&idle0) || !n0.PortsConflict(tasks[0].HostPorts) {
		t.Fatal("Allocate did not take resources and ports on the node")
	}

	stmt.Discard()
	if !n0.Idle.Equal(&idle0) || !n1.Idle.Equal(&idle1) || len(n0.Tasks)+len(n1.Tasks) != 0 || n0.PortsConflict(tasks[0].HostPorts) {
		t.Errorf("Discard did not restore nodes: %v / %v", n0.Idle, n1.Idle)
	}
	for _, task := range tasks {
		if task.Status != api.Pending || task.NodeName != "" {
			t.Errorf("Discard left %s %v on %q", task.Name, task.Status, task.NodeName)
		}
	}
	if err := stmt.Allocate(tasks[0], n0); !errors.Is(err, framework.ErrStatementClosed) {
		t.Errorf("Allocate after Discard = %v, want ErrStatementClosed", err)
	}
	if len(ssn.Bindings()) != 0 {
		t.Error("discarded statement produced bindings")
	}

	stmt = ssn.Statement()
	for _, task := range tasks[:2] {
		if err := stmt.Allocate(task, n1); err != nil {
			t.Fatal(err)
		}
	}
	got := stmt.Commit()
	if len(got) != 2 || got[0].Task != tasks[0] || got[1].Node != n1.Name {
		t.Errorf("Commit = %v", got)
	}
	stmt.Discard() // no effect after Commit
	if tasks[0].Status != api.Allocated || len(ssn.Bindings()) != 2 {
		t.Errorf("Discard after Commit undid it: %v, %d bindings", tasks[0].Status, len(ssn.Bindings()))
	}
}

// The predicate cache: one static evaluation per (class, node), shared by
// every task of the class, and classes split by job, role and constraints.
func TestPredicateCacheClasses(t *testing.T) {
	nodes := cpuNodes(6, "8")
	worker := func(name string) *st.PodWrapper {
		return st.MakePod("ns", name).Job("j").Role("worker").Req("1", "1Gi")
	}
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		classes int
	}{
		{"two pods of one role, same constraints", []*corev1.Pod{worker("w0").Obj(), worker("w1").Obj()}, 1},
		{"same role, another nodeSelector", []*corev1.Pod{worker("w0").Obj(), worker("w1").NodeSelector("pool", "b").Obj()}, 2},
		{"same role, another request", []*corev1.Pod{worker("w0").Obj(), worker("w1").Req("2", "").Obj()}, 2},
		{"master and worker with identical specs", []*corev1.Pod{worker("w0").Obj(), worker("m0").Role("master").Obj()}, 2},
		{"same spec in two jobs", []*corev1.Pod{worker("w0").Obj(), worker("w1").Job("k").Obj()}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := st.MustSnapshot(nodes, tt.pods, []*api.JobInfo{st.MakeJob("ns", "j").Obj(), st.MakeJob("ns", "k").Obj()})
			ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
			var tasks []*api.TaskInfo
			for _, id := range []api.JobID{"ns/j", "ns/k"} {
				tasks = append(tasks, snap.Jobs[id].PendingTasks()...)
			}
			want := map[string]framework.Status{}
			for _, task := range tasks {
				for _, n := range snap.NodeList {
					want[task.Name+"@"+n.Name] = ssn.Predicate(task, n)
				}
			}
			stats := ssn.Stats()
			if stats.Classes != tt.classes {
				t.Errorf("classes = %d, want %d", stats.Classes, tt.classes)
			}
			if want := int64(tt.classes * len(nodes)); stats.PredicateEvaluations != want {
				t.Errorf("predicate evaluations = %d, want classes x nodes = %d (pods x nodes = %d)",
					stats.PredicateEvaluations, want, len(tasks)*len(nodes))
			}
			if want := int64((len(tasks) - tt.classes) * len(nodes)); stats.CacheHits != want {
				t.Errorf("cache hits = %d, want %d", stats.CacheHits, want)
			}
			// A cached answer equals a fresh one: a new session per task
			// evaluates everything.
			for _, task := range tasks {
				fresh := framework.OpenSession(snap, predicates.New(predicates.Config{}))
				for _, n := range snap.NodeList {
					if got := fresh.Predicate(task, n); got != want[task.Name+"@"+n.Name] {
						t.Errorf("%s on %s: cached %v, fresh %v", task.Name, n.Name, want[task.Name+"@"+n.Name], got)
					}
				}
			}
		})
	}
}

// Equal hashes with different signatures must not share a class.
func TestPredicateCacheHashCollision(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(2, "8"), []*corev1.Pod{
		st.MakePod("ns", "a").Job("j").Role("worker").NodeSelector("pool", "a").Obj(),
		st.MakePod("ns", "b").Job("j").Role("worker").NodeSelector("pool", "b").Obj(),
	}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
	tasks := snap.Jobs["ns/j"].PendingTasks()
	tasks[1].ClassHash = tasks[0].ClassHash // forge a collision
	if ssn.ClassOf(tasks[0]) == ssn.ClassOf(tasks[1]) {
		t.Fatal("colliding hashes share a class")
	}
	if first, again := ssn.ClassOf(tasks[0]), ssn.ClassOf(tasks[0]); first != again {
		t.Fatal("ClassOf is not stable")
	}
	na := snap.NodeList[0] // pool a
	if !ssn.Predicate(tasks[0], na).Fit || ssn.Predicate(tasks[1], na).Fit {
		t.Errorf("answers leaked across colliding classes: a %v, b %v", ssn.Predicate(tasks[0], na), ssn.Predicate(tasks[1], na))
	}
}

// Dynamic predicates see placements made in the session; static ones are
// not re-evaluated for them.
func TestPredicateDynamicPartSeesPlacements(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(1, "2"), []*corev1.Pod{
		st.MakePod("ns", "a").Job("j").Req("1", "").HostPort("", "", 80).Obj(),
		st.MakePod("ns", "b").Job("j").Req("1", "").HostPort("", "", 80).Obj(),
	}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
	tasks, n := snap.Jobs["ns/j"].PendingTasks(), snap.NodeList[0]
	if !ssn.Predicate(tasks[0], n).Fit || !ssn.Predicate(tasks[1], n).Fit {
		t.Fatal("empty node does not fit")
	}
	if err := ssn.Statement().Allocate(tasks[0], n); err != nil {
		t.Fatal(err)
	}
	if s := ssn.Predicate(tasks[1], n); s.Fit || s.Reason != predicates.ReasonHostPorts {
		t.Errorf("second pod of the class on the same host port: %v", s)
	}
	if got := ssn.Stats().PredicateEvaluations; got != 1 {
		t.Errorf("static evaluations = %d, want 1", got)
	}
}

func TestFitSummary(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("a").Capacity("8", "8Gi", 0).Obj(),
		st.MakeNode("b").Capacity("8", "8Gi", 0).Obj(),
		st.MakeNode("c").Capacity("8", "8Gi", 4).Taint("gpu", "", corev1.TaintEffectNoSchedule).Obj(),
		st.MakeNode("d").Capacity("8", "8Gi", 4).Obj(),
	}
	snap := st.MustSnapshot(nodes, []*corev1.Pod{st.MakePod("ns", "p").Job("j").GPU(2).Obj()},
		[]*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, predicates.New(predicates.Config{}))
	f := ssn.Diagnose(snap.Jobs["ns/j"].PendingTasks()[0])
	want := "1/4 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
	if f.String() != want {
		t.Errorf("summary = %q, want %q", f.String(), want)
	}
}

type orderPlugin struct{ jobs, tasks, queues bool }

func (orderPlugin) Name() string { return "order" }
func (p orderPlugin) OnSessionOpen(ssn *framework.Session) {
	// Prefer larger names, the reverse of the default tie-break.
	if p.jobs {
		ssn.AddJobOrderFn(func(l, r *api.JobInfo) int { return strings.Compare(r.Name, l.Name) })
	}
	if p.tasks {
		ssn.AddTaskOrderFn(func(l, r *api.TaskInfo) int { return strings.Compare(r.Name, l.Name) })
	}
	if p.queues {
		ssn.AddQueueOrderFn(func(l, r *api.QueueInfo) int { return strings.Compare(string(r.Name), string(l.Name)) })
	}
}

func TestOrderFallbacks(t *testing.T) {
	j1, j2 := st.MakeJob("ns", "a").Obj(), st.MakeJob("ns", "b").Obj()
	t1 := api.NewTaskInfo("", st.MakePod("ns", "a").Obj())
	t2 := api.NewTaskInfo("", st.MakePod("ns", "b").Obj())
	q1, q2 := st.MakeQueue("a"), st.MakeQueue("b")
	snap := st.MustSnapshot(nil, nil, nil)
	plain := framework.OpenSession(snap)
	if plain.JobCompare(j1, j2) >= 0 || plain.TaskCompare(t1, t2) >= 0 || plain.QueueCompare(q1, q2) >= 0 {
		t.Error("default tie-breaks are not by name")
	}
	custom := framework.OpenSession(snap, orderPlugin{true, true, true})
	if custom.JobCompare(j1, j2) <= 0 || custom.TaskCompare(t1, t2) <= 0 || custom.QueueCompare(q1, q2) <= 0 {
		t.Error("registered orders are not used")
	}
}

type reasonPerNode struct{}

func (reasonPerNode) Name() string { return "reason-per-node" }
func (reasonPerNode) OnSessionOpen(ssn *framework.Session) {
	ssn.AddStaticPredicateFn(func(_ *api.TaskInfo, n *api.NodeInfo) framework.Status {
		return framework.Unfit(framework.Reason("no " + n.Name))
	})
}

// The cache keeps one byte per (class, node): past 253 distinct reasons it
// still answers "unfit", with a generic reason.
func TestPredicateCacheReasonOverflow(t *testing.T) {
	nodes := cpuNodes(300, "1")
	snap := st.MustSnapshot(nodes, []*corev1.Pod{st.MakePod("ns", "p").Job("j").Obj()}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, reasonPerNode{})
	task := snap.Jobs["ns/j"].PendingTasks()[0]
	for pass := range 2 { // the second pass reads the cache
		for _, n := range snap.NodeList {
			s := ssn.Predicate(task, n)
			if s.Fit {
				t.Fatalf("pass %d: %s fits", pass, n.Name)
			}
			if n.Index < 253 && s.Reason != framework.Reason("no "+n.Name) {
				t.Errorf("pass %d: %s reason %q", pass, n.Name, s.Reason)
			}
		}
	}
	if got := ssn.Stats().PredicateEvaluations; got != 300 {
		t.Errorf("evaluations = %d, want 300", got)
	}
}

// TestOnCommit: each committed statement's placements reach the hook at
// its commit, in order; a discarded or empty statement sends nothing; the
// hook's decisions are what Bindings returns.
func TestOnCommit(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(2, "8"),
		[]*corev1.Pod{
			st.MakePod("ns", "a0").Job("a").Req("1", "").Obj(),
			st.MakePod("ns", "a1").Job("a").Req("1", "").Obj(),
			st.MakePod("ns", "b0").Job("b").Req("1", "").Obj(),
			st.MakePod("ns", "c0").Job("c").Req("1", "").Obj(),
		},
		[]*api.JobInfo{st.MakeJob("ns", "a").MinMember(2).Obj(), st.MakeJob("ns", "b").Obj(), st.MakeJob("ns", "c").Obj()})
	ssn := framework.OpenSession(snap)
	var got [][]string
	ssn.OnCommit(func(ds []framework.Decision) {
		var names []string
		for _, d := range ds {
			names = append(names, d.Task.Name+"@"+d.Node)
		}
		got = append(got, names)
	})
	place := func(job string, commit bool) {
		stmt := ssn.Statement()
		for i, task := range snap.Jobs[api.JobID("ns/"+job)].PendingTasks() {
			if err := stmt.Allocate(task, snap.NodeList[i%2]); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			stmt.Commit()
		} else {
			stmt.Discard()
		}
	}
	place("b", false)
	ssn.Statement().Commit() // empty
	if len(got) != 0 {
		t.Fatalf("discarded or empty statements reached the hook: %v", got)
	}
	place("a", true)
	place("c", true)
	want := [][]string{{"a0@n00", "a1@n01"}, {"c0@n00"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hook got %v, want %v", got, want)
	}
	var bound []string
	for _, d := range ssn.Bindings() {
		bound = append(bound, d.Task.Name+"@"+d.Node)
	}
	if fmt.Sprint(bound) != "[a0@n00 a1@n01 c0@n00]" {
		t.Errorf("Bindings %v", bound)
	}
}
