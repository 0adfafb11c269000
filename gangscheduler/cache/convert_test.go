package cache

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

var created = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func podGroup(mutate func(*schedulingv1alpha1.PodGroup)) *schedulingv1alpha1.PodGroup {
	pg := &schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", CreationTimestamp: metav1.NewTime(created)},
		Spec:       schedulingv1alpha1.PodGroupSpec{MinMember: 3, Queue: "default"},
	}
	if mutate != nil {
		mutate(pg)
	}
	return pg
}

func priorityClass(name string, value int32, globalDefault bool) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault}
}

func TestJobInfoFromPodGroup(t *testing.T) {
	classes := NewPriorities([]*schedulingv1.PriorityClass{
		priorityClass("high", 1000, false),
		priorityClass("low-default", 5, true),
	})
	base := func() *api.JobInfo {
		j := api.NewJobInfo("ns", "pg")
		j.MinMember = 3
		j.Priority = 5 // the global default class
		j.CreationTimestamp = created
		j.Phase = api.JobPending
		return j
	}
	cases := []struct {
		name  string
		pg    *schedulingv1alpha1.PodGroup
		prio  Priorities
		want  func(*api.JobInfo)
		extra func(t *testing.T, got *api.JobInfo)
	}{
		{
			name: "minimal: default queue, global default priority, phase Pending",
			pg:   podGroup(nil),
			want: func(*api.JobInfo) {},
		},
		{
			name: "empty queue is the default queue",
			pg:   podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.Queue = "" }),
			want: func(j *api.JobInfo) { j.Queue = api.DefaultQueue },
		},
		{
			name: "queue, minTaskMember, priority class, phase and minResources",
			pg: podGroup(func(pg *schedulingv1alpha1.PodGroup) {
				pg.Spec.Queue = "team-a"
				pg.Spec.MinTaskMember = map[string]int32{"Master": 1, "Worker": 2}
				pg.Spec.PriorityClassName = "high"
				pg.Spec.MinResources = corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("2500m"),
					"nvidia.com/gpu":   resource.MustParse("8"),
				}
				pg.Status.Phase = schedulingv1alpha1.PodGroupInqueue
			}),
			want: func(j *api.JobInfo) {
				j.Queue = "team-a"
				j.MinTaskMember = map[string]int32{"Master": 1, "Worker": 2}
				j.Priority = 1000
				j.Phase = api.JobInqueue
				j.MinResources = api.Resource{MilliCPU: 2500, Scalars: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}}
			},
		},
		{
			name: "a missing priority class reads as 0, not the default",
			pg:   podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.PriorityClassName = "gone" }),
			want: func(j *api.JobInfo) { j.Priority = 0 },
		},
		{
			name: "no PriorityClasses at all",
			pg:   podGroup(nil),
			prio: NewPriorities(nil),
			want: func(j *api.JobInfo) { j.Priority = 0 },
		},
		{
			name: "Running phase is carried",
			pg:   podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Status.Phase = schedulingv1alpha1.PodGroupRunning }),
			want: func(j *api.JobInfo) { j.Phase = api.JobRunning },
		},
		{
			name: "minTaskMember is copied, not shared with the informer's object",
			pg:   podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.MinTaskMember = map[string]int32{"Worker": 2} }),
			want: func(j *api.JobInfo) { j.MinTaskMember = map[string]int32{"Worker": 2} },
			extra: func(t *testing.T, got *api.JobInfo) {
				got.MinTaskMember["Worker"] = 99
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prio := classes
			if tc.prio.byName != nil {
				prio = tc.prio
			}
			want := base()
			tc.want(want)
			got := JobInfoFromPodGroup(tc.pg, prio)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("JobInfoFromPodGroup =\n%+v\nwant\n%+v", got, want)
			}
			if tc.extra != nil {
				tc.extra(t, got)
				if tc.pg.Spec.MinTaskMember["Worker"] != 2 {
					t.Error("changing the job changed the PodGroup")
				}
			}
		})
	}
}

func TestPrioritiesGlobalDefault(t *testing.T) {
	// Two classes claiming to be the default (a race the API server can
	// let through): admission takes the lowest value, and so does this.
	p := NewPriorities([]*schedulingv1.PriorityClass{
		priorityClass("a", 100, true), priorityClass("b", 10, true), priorityClass("c", 1, false),
	})
	if got := p.Value(""); got != 10 {
		t.Errorf("default = %d, want 10", got)
	}
	if got := p.Value("c"); got != 1 {
		t.Errorf("c = %d, want 1", got)
	}
}

func TestQueueInfoFromQueue(t *testing.T) {
	cases := []struct {
		name string
		spec schedulingv1alpha1.QueueSpec
		want api.QueueInfo
	}{
		{"defaults", schedulingv1alpha1.QueueSpec{Weight: 1, State: schedulingv1alpha1.QueueStateOpen},
			api.QueueInfo{Name: "q", Weight: 1, State: api.QueueOpen}},
		{"unset weight and state read as the defaults", schedulingv1alpha1.QueueSpec{},
			api.QueueInfo{Name: "q", Weight: 1, State: api.QueueOpen}},
		{"closed, weighted, capped", schedulingv1alpha1.QueueSpec{
			Weight: 3, State: schedulingv1alpha1.QueueStateClosed,
			Capability: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}, api.QueueInfo{Name: "q", Weight: 3, State: api.QueueClosed, Capability: api.Resource{Memory: 1 << 30}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := QueueInfoFromQueue(&schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: tc.spec})
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func gangPod(name, scheduler, group string) *st.PodWrapper {
	p := st.MakePod("ns", name).Req("1", "1Gi")
	p.Spec.SchedulerName = scheduler
	if group != "" {
		p.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] = group
	}
	return p
}

func TestJobOf(t *testing.T) {
	jobOf := JobOf("troupe-scheduler")
	cases := []struct {
		name   string
		pod    *corev1.Pod
		want   api.JobID
		wantOK bool
	}{
		{"ours, with a group", gangPod("p", "troupe-scheduler", "pg").Obj(), "ns/pg", true},
		{"ours, no group", gangPod("p", "troupe-scheduler", "").Obj(), "", false},
		{"another scheduler's, with a group", gangPod("p", "volcano", "pg").Obj(), "", false},
		{"default scheduler's", gangPod("p", "", "pg").Obj(), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := jobOf(tc.pod)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("JobOf = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// Build: gang pods of this scheduler become tasks; another scheduler's pod
// in the same group only takes room on its node, and so does a terminating
// pod; a terminal pod takes none.
func TestBuild(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 0).Obj()
	objs := Objects{
		Nodes: []*corev1.Node{node},
		Pods: []*corev1.Pod{
			gangPod("ours-pending", "troupe-scheduler", "pg").Obj(),
			gangPod("ours-bound", "troupe-scheduler", "pg").Node("n1").Obj(),
			gangPod("theirs-bound", "other", "pg").Node("n1").Obj(),
			gangPod("theirs-pending", "other", "pg").Obj(),
			gangPod("terminating", "other", "").Node("n1").Terminating().Obj(),
			gangPod("done", "other", "").Node("n1").Phase(corev1.PodSucceeded).Obj(),
			gangPod("orphan", "troupe-scheduler", "no-such-group").Obj(),
		},
		PodGroups: []*schedulingv1alpha1.PodGroup{podGroup(nil)},
		Queues:    []*schedulingv1alpha1.Queue{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
	}
	state, err := Build(objs, "troupe-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	job := state.Snapshot.Jobs["ns/pg"]
	if job == nil || state.PodGroups["ns/pg"] != objs.PodGroups[0] || state.Queues["default"] == nil {
		t.Fatalf("state = %+v", state)
	}
	var tasks []string
	for _, task := range job.Tasks {
		tasks = append(tasks, task.Name+"="+task.Status.String())
	}
	if want := []string{"ours-bound=Bound", "ours-pending=Pending"}; !sameSet(tasks, want) {
		t.Errorf("tasks %v, want %v", tasks, want)
	}
	n := state.Snapshot.Nodes["n1"]
	var onNode []string
	for _, task := range n.Tasks {
		onNode = append(onNode, task.Name)
	}
	if want := []string{"ours-bound", "theirs-bound", "terminating"}; !sameSet(onNode, want) {
		t.Errorf("on the node: %v, want %v", onNode, want)
	}
	if n.Used.MilliCPU != 3000 {
		t.Errorf("used CPU %dm, want 3000m (three pods of 1 CPU)", n.Used.MilliCPU)
	}
}

func TestBuildRejectsDuplicatePods(t *testing.T) {
	p := gangPod("p", "troupe-scheduler", "pg").Obj()
	if _, err := Build(Objects{Pods: []*corev1.Pod{p, p}}, "troupe-scheduler"); err == nil {
		t.Error("a pod listed twice must be an error: it would be counted twice")
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// buildBoth builds objs with builder, for the next cycle, and afresh.
func buildBoth(t *testing.T, builder *Builder, objs Objects) (got, want *State) {
	t.Helper()
	got, err := builder.Build(objs)
	if err != nil {
		t.Fatal(err)
	}
	want, err = Build(objs, "troupe-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}

// A Builder's states are Build's, cycle after cycle, as nodes change, each
// state released after use as a scheduling cycle does: its node memo and
// the nodes it reuses only save work.
func TestBuilderFollowsNodes(t *testing.T) {
	a, b := st.MakeNode("a").Capacity("8", "32Gi", 0).Obj(), st.MakeNode("b").Capacity("8", "32Gi", 4).Obj()
	bigger := st.MakeNode("b").Capacity("16", "32Gi", 8).Obj()
	c := st.MakeNode("c").Capacity("4", "8Gi", 0).Obj()
	pod := gangPod("bound", "troupe-scheduler", "pg").Node("b").Obj()
	builder := Builder{SchedulerName: "troupe-scheduler"}
	for i, nodes := range [][]*corev1.Node{{a, b}, {b, a}, {a, bigger}, {bigger, c}} {
		objs := Objects{Nodes: nodes, Pods: []*corev1.Pod{pod}, PodGroups: []*schedulingv1alpha1.PodGroup{podGroup(nil)}}
		got, want := buildBoth(t, &builder, objs)
		if len(got.Snapshot.NodeList) != len(want.Snapshot.NodeList) {
			t.Fatalf("cycle %d: %d nodes, want %d", i, len(got.Snapshot.NodeList), len(want.Snapshot.NodeList))
		}
		for j, n := range got.Snapshot.NodeList {
			w := want.Snapshot.NodeList[j]
			if n.Node != w.Node || !n.Idle.Equal(&w.Idle) || len(n.Tasks) != len(w.Tasks) {
				t.Errorf("cycle %d, node %s: idle %v with %d tasks, want %s: idle %v with %d", i, n.Name, n.Idle, len(n.Tasks), w.Name, w.Idle, len(w.Tasks))
			}
		}
		got.Snapshot.Release()
	}
}

// A Builder's gangs are Build's, cycle after cycle, as PodGroups and
// PriorityClasses change, although it carries each PodGroup's conversion
// from one cycle to the next; what a cycle sets on its gangs (phase,
// times) does not reach the next one's.
func TestBuilderFollowsPodGroups(t *testing.T) {
	pg := podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.PriorityClassName = "high" })
	resized := podGroup(func(pg *schedulingv1alpha1.PodGroup) {
		pg.Spec.PriorityClassName = "high"
		pg.Spec.MinMember = 5
		pg.Spec.MinTaskMember = map[string]int32{"worker": 4}
	})
	other := podGroup(func(pg *schedulingv1alpha1.PodGroup) { pg.Name = "other" })
	pod := gangPod("p", "troupe-scheduler", "pg").Obj()
	high := func(v int32) []*schedulingv1.PriorityClass {
		return []*schedulingv1.PriorityClass{priorityClass("high", v, false)}
	}
	cycles := []struct {
		name    string
		groups  []*schedulingv1alpha1.PodGroup
		classes []*schedulingv1.PriorityClass
		// memo is how many PodGroups the builder carries to the next cycle.
		memo int
	}{
		{name: "first", groups: []*schedulingv1alpha1.PodGroup{pg}, classes: high(1000), memo: 1},
		{name: "the same objects", groups: []*schedulingv1alpha1.PodGroup{pg}, classes: high(1000), memo: 1},
		{name: "its priority class changed", groups: []*schedulingv1alpha1.PodGroup{pg}, classes: high(2000), memo: 1},
		{name: "the PodGroup changed", groups: []*schedulingv1alpha1.PodGroup{resized}, classes: high(2000), memo: 1},
		{name: "another PodGroup", groups: []*schedulingv1alpha1.PodGroup{other, resized}, classes: high(2000), memo: 2},
		{name: "one deleted", groups: []*schedulingv1alpha1.PodGroup{other}, classes: high(2000), memo: 1},
	}
	builder := Builder{SchedulerName: "troupe-scheduler"}
	for _, c := range cycles {
		objs := Objects{Pods: []*corev1.Pod{pod}, PodGroups: c.groups, PriorityClasses: c.classes}
		got, want := buildBoth(t, &builder, objs)
		if len(got.Snapshot.Jobs) != len(want.Snapshot.Jobs) {
			t.Fatalf("%s: %d jobs, want %d", c.name, len(got.Snapshot.Jobs), len(want.Snapshot.Jobs))
		}
		for id, w := range want.Snapshot.Jobs {
			g := got.Snapshot.Jobs[id]
			if g == nil || len(g.Tasks) != len(w.Tasks) || got.PodGroups[id] != want.PodGroups[id] {
				t.Fatalf("%s: job %s = %+v, want %+v", c.name, id, g, w)
			}
			gj, wj := *g, *w
			gj.Tasks, wj.Tasks = nil, nil
			if !reflect.DeepEqual(gj, wj) {
				t.Errorf("%s: job %s =\n%+v\nwant\n%+v", c.name, id, gj, wj)
			}
		}
		if n := len(builder.jobs.byPodGroup); n != c.memo {
			t.Errorf("%s: the builder carries %d PodGroups, want %d", c.name, n, c.memo)
		}
		// What a cycle sets on its gangs.
		now := time.Now()
		for _, job := range got.Snapshot.Jobs {
			job.Phase, job.PartialSince, job.WaitingSince = api.JobRunning, &now, &now
			job.RefusedNodes = map[string]bool{"n1": true}
		}
		got.Snapshot.Release()
	}
}
