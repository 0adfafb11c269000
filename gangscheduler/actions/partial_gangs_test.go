package actions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

var cycleTime = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// runCycle runs the default pipeline and then PartialGangs with grace, as
// a scheduler cycle at cycleTime does.
func runCycle(t *testing.T, c cluster, grace time.Duration) *framework.Session {
	t.Helper()
	jobs := make([]*api.JobInfo, len(c.jobs))
	for i, j := range c.jobs {
		cp := *j
		cp.Tasks = nil
		jobs[i] = &cp
	}
	snap := st.MustSnapshot(c.nodes, c.pods, jobs, c.queues...)
	snap.Now = cycleTime
	ssn := framework.OpenSession(snap, plugins.WithQueueShare()...)
	ssn.Run(append(actions.Pipeline(), actions.NewPartialGangs(grace))...)
	return ssn
}

// member is a controlled pod of gang job with gpus GPUs, on node if not "".
func member(job string, i int, gpus int64, node string) *st.PodWrapper {
	p := st.MakePod("ns", fmt.Sprintf("%s-%d", job, i)).Job(job).Role("worker").Req("1", "1Gi").GPU(gpus).Controlled()
	if node != "" {
		p.Node(node).Phase(corev1.PodRunning)
	}
	return p
}

func evictedAt(ssn *framework.Session) []string {
	var out []string
	for _, e := range ssn.Evictions() {
		out = append(out, e.Task.Name+"@"+e.Node)
	}
	slices.Sort(out)
	return out
}

// A partial gang is completed if it can be, and otherwise reclaimed once
// the grace period has passed since it was first seen partial; never
// before, and never a gang that is whole or done.
func TestPartialGangs(t *testing.T) {
	const grace = 30 * time.Second
	fullNode := func(name string) (*corev1.Node, *corev1.Pod) { return gpuNode(name, 4, 4) }
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		job        *api.JobInfo
		wantEvict  []string
		wantBind   []string
		wantReason string // the PartialGang record's reason, "" for none
		wantMsg    string
	}{
		{
			name:  "completable: the missing member is placed, nothing reclaimed",
			nodes: []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj(), st.MakeNode("n2").Capacity("64", "256Gi", 4).Obj()},
			pods:  []*corev1.Pod{member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "").Obj()},
			job:   st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
			// Long past its grace, but it can be completed: it is.
			wantBind: []string{"g-1@n2"},
		},
		{
			name: "completable, avoiding the node that refused its bind",
			nodes: []*corev1.Node{
				st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj(), st.MakeNode("n2").Capacity("64", "256Gi", 4).Obj(),
				st.MakeNode("n3").Capacity("64", "256Gi", 4).Obj(),
			},
			pods: []*corev1.Pod{member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "").Obj()},
			job: func() *api.JobInfo {
				j := st.MakeJob("ns", "g").MinMember(2).Obj()
				j.RefusedNodes = map[string]bool{"n2": true}
				return j
			}(),
			wantBind: []string{"g-1@n3"},
		},
		{
			name:       "not completable, within the grace: waits, MembersMissing since now",
			nodes:      []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj()},
			pods:       []*corev1.Pod{member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "").Obj()},
			job:        st.MakeJob("ns", "g").MinMember(2).Obj(),
			wantReason: "MembersMissing", wantMsg: "1 of minMember 2 members bound, running or done; the missing members are placed first of all, and the members on nodes are deleted at 2026-11-23T12:00:30Z",
		},
		{
			name:       "not completable, grace not yet over",
			nodes:      []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj()},
			pods:       []*corev1.Pod{member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "").Obj()},
			job:        st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-grace + time.Second)).Obj(),
			wantReason: "MembersMissing",
		},
		{
			name: "not completable, grace over: every member on a node is deleted",
			nodes: []*corev1.Node{
				st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj(), st.MakeNode("n2").Capacity("64", "256Gi", 4).Obj(),
				st.MakeNode("n3").Capacity("64", "256Gi", 4).Obj(),
			},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "n2").Phase(corev1.PodPending).Obj(), // bound, not yet running
				member("g", 2, 8, "").Obj(), // fits no node
			},
			job:        st.MakeJob("ns", "g").MinMember(3).PartialSince(cycleTime.Add(-grace)).Obj(),
			wantEvict:  []string{"g-0@n1", "g-1@n2"},
			wantReason: "Reclaimed", wantMsg: "Gang ns/g was partial for 30s (2 of minMember 3 members bound, running or done) and could not be completed (NotEnoughResources:",
		},
		{
			name:  "a role short of its minimum is partial too",
			nodes: []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 8).Obj()},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "n1").Obj(),
				st.MakePod("ns", "g-master").Job("g").Role("master").Req("100", "").Controlled().Obj(), // fits nowhere
			},
			job:        st.MakeJob("ns", "g").MinMember(2).MinTaskMember("master", 1).PartialSince(cycleTime.Add(-time.Minute)).Obj(),
			wantEvict:  []string{"g-0@n1", "g-1@n1"},
			wantReason: "Reclaimed", wantMsg: "(2 of minMember 2 members bound, running or done (master: 0 of minTaskMember 1))",
		},
		{
			name:       "a member without a controller: nothing deleted, Stuck",
			nodes:      []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj()},
			pods:       []*corev1.Pod{st.MakePod("ns", "g-0").Job("g").Req("1", "1Gi").GPU(4).Node("n1").Phase(corev1.PodRunning).Obj(), member("g", 1, 4, "").Obj()},
			job:        st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
			wantReason: "Stuck", wantMsg: "pod ns/g-0 has no controller to recreate it, so nothing is deleted",
		},
		{
			name: "a preempted member: the rest is deleted at once, within the grace, and nothing of it is placed",
			nodes: []*corev1.Node{
				st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj(), st.MakeNode("n2").Capacity("64", "256Gi", 4).Obj(),
				st.MakeNode("n3").Capacity("64", "256Gi", 4).Obj(),
			},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").PreemptedBy("troupe-scheduler").Terminating().Obj(), // its deletion went through
				member("g", 1, 4, "n2").PreemptedBy("troupe-scheduler").Obj(),               // its deletion failed
				member("g", 2, 4, "n3").Obj(),                                               // not reached
				member("g", 3, 4, "").Obj(),                                                 // recreated by its controller
			},
			job:        st.MakeJob("ns", "g").MinMember(3).Obj(),
			wantEvict:  []string{"g-1@n2", "g-2@n3"},
			wantReason: "Preempted", wantMsg: "Member ns/g-0 of gang ns/g was preempted; deleting the rest of the gang",
		},
		{
			name: "a member on a node deleted since: reclaimed with the others",
			nodes: []*corev1.Node{
				st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj(),
			},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").Obj(), member("g", 1, 4, "gone").Obj(), member("g", 2, 8, "").Obj(),
			},
			job:        st.MakeJob("ns", "g").MinMember(3).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
			wantEvict:  []string{"g-0@n1", "g-1@gone"},
			wantReason: "Reclaimed",
		},
		{
			name:  "whole: the first members finished, the others run",
			nodes: []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj()},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").Phase(corev1.PodSucceeded).Obj(), member("g", 1, 4, "n1").Obj(),
			},
			job: st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
		},
		{
			name:  "done: a member failed and too few can succeed; the controller decides",
			nodes: []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 4).Obj()},
			pods: []*corev1.Pod{
				member("g", 0, 4, "n1").Phase(corev1.PodFailed).Obj(), member("g", 1, 4, "n1").Obj(),
			},
			job: st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
		},
		{
			name: "a member's node taken by another gang since: not completable, reclaimed",
			nodes: func() []*corev1.Node {
				n1, _ := fullNode("n1")
				return []*corev1.Node{n1, st.MakeNode("n2").Capacity("64", "256Gi", 4).Obj()}
			}(),
			pods: func() []*corev1.Pod {
				_, used := fullNode("n1")
				return []*corev1.Pod{used, member("g", 0, 4, "n2").Obj(), member("g", 1, 4, "").Obj()}
			}(),
			job:        st.MakeJob("ns", "g").MinMember(2).PartialSince(cycleTime.Add(-time.Hour)).Obj(),
			wantEvict:  []string{"g-0@n2"},
			wantReason: "Reclaimed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: tt.nodes, pods: tt.pods, jobs: []*api.JobInfo{withPhase(tt.job, api.JobRunning)}}
			ssn := runCycle(t, c, grace)
			if got := evictedAt(ssn); !slices.Equal(got, tt.wantEvict) {
				t.Errorf("evicted %v, want %v", got, tt.wantEvict)
			}
			for _, e := range ssn.Evictions() {
				if e.Cause != framework.CauseReclaim {
					t.Errorf("eviction of %s has cause %v, want CauseReclaim", e.Task.Name, e.Cause)
				}
			}
			var binds []string
			for _, d := range ssn.Bindings() {
				binds = append(binds, d.Task.Name+"@"+d.Node)
			}
			if !slices.Equal(binds, tt.wantBind) {
				t.Errorf("bound %v, want %v", binds, tt.wantBind)
			}
			rec, ok := ssn.PartialGangs()[tt.job.UID]
			switch {
			case tt.wantReason == "" && ok:
				t.Errorf("recorded %+v, want no record", rec)
			case tt.wantReason != "" && (!ok || rec.Reason != tt.wantReason):
				t.Errorf("recorded %+v (%v), want reason %s", rec, ok, tt.wantReason)
			case !strings.Contains(rec.Message, tt.wantMsg):
				t.Errorf("message %q, want it to contain %q", rec.Message, tt.wantMsg)
			}
			if ok {
				want := cycleTime
				if tt.job.PartialSince != nil {
					want = *tt.job.PartialSince
				}
				if !rec.Since.Equal(want) {
					t.Errorf("since %v, want %v", rec.Since, want)
				}
			}
		})
	}
}

// The starvation a scheduler killed in the middle of a commit once caused:
// a gang with 3 of its 5 members bound sorted behind every waiting gang
// (it holds resources, so its dominant share is the largest), and newer
// gangs took the GPUs it still needed. A partial gang goes first, ahead of
// fair share, and is completed.
func TestPartialGangCompletedBeforeFairShare(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 5 {
		nodes = append(nodes, st.MakeNode(fmt.Sprintf("n%d", i)).Capacity("64", "256Gi", 1).Obj())
	}
	var pods []*corev1.Pod
	for i := range 5 {
		node := ""
		if i < 3 {
			node = fmt.Sprintf("n%d", i)
		}
		pods = append(pods, member("partial", i, 1, node).Obj())
	}
	jobs := []*api.JobInfo{withPhase(st.MakeJob("ns", "partial").MinMember(5).Created(cycleTime.Add(-time.Hour)).Obj(), api.JobPending)}
	// Four newer single-GPU gangs that drf orders before the partial one.
	for k := range 4 {
		name := fmt.Sprintf("newer-%d", k)
		pods = append(pods, member(name, 0, 1, "").Obj())
		jobs = append(jobs, withPhase(st.MakeJob("ns", name).MinMember(1).Created(cycleTime.Add(-time.Minute)).Obj(), api.JobPending))
	}
	ssn := runCycle(t, cluster{nodes: nodes, pods: pods, jobs: jobs}, time.Minute)
	var binds []string
	for _, d := range ssn.Bindings() {
		binds = append(binds, d.Task.Name)
	}
	slices.Sort(binds)
	if want := []string{"partial-3", "partial-4"}; !slices.Equal(binds, want) {
		t.Errorf("bound %v, want %v: the partial gang completed before any newer gang", binds, want)
	}
	if !ssn.Jobs["ns/partial"].IsReady() {
		t.Errorf("partial gang not whole after the cycle")
	}
}

// A gang whose minimum needs gated pods binds nothing; gated pods beyond
// the minimum wait while the others are placed.
func TestGatedPodsAreNeverPlaced(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("n1").Capacity("64", "256Gi", 8).Obj()}
	pods := []*corev1.Pod{
		member("short", 0, 1, "").Obj(), member("short", 1, 1, "").Gate("example.com/hold").Obj(),
		member("extra", 0, 1, "").Obj(), member("extra", 1, 1, "").Obj(), member("extra", 2, 1, "").Gate("example.com/hold").Obj(),
	}
	jobs := []*api.JobInfo{
		withPhase(st.MakeJob("ns", "short").MinMember(2).Obj(), api.JobPending),
		withPhase(st.MakeJob("ns", "extra").MinMember(2).Obj(), api.JobPending),
	}
	ssn := runCycle(t, cluster{nodes: nodes, pods: pods, jobs: jobs}, time.Minute)
	var binds []string
	for _, d := range ssn.Bindings() {
		binds = append(binds, d.Task.Name)
	}
	slices.Sort(binds)
	if want := []string{"extra-0", "extra-1"}; !slices.Equal(binds, want) {
		t.Errorf("bound %v, want %v", binds, want)
	}
	f, ok := ssn.Unschedulable()["ns/short"]
	if !ok || f.Reason != "SchedulingGated" || !strings.Contains(f.Message, "1 of 2 members are waiting for scheduling gates: example.com/hold") {
		t.Errorf("short gang's finding = %+v (%v), want SchedulingGated naming the gate", f, ok)
	}
}
