package actions_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// gpusByQueue sums the GPUs placed per queue.
func gpusByQueue(ssn *framework.Session) map[api.QueueID]int64 {
	m := map[api.QueueID]int64{}
	for _, d := range ssn.Bindings() {
		m[ssn.Jobs[d.Task.Job].Queue] += d.Task.Resreq.Scalar(st.GPU)
	}
	return m
}

// queueCluster: 4 nodes of 8 GPUs; per queue, jobs gangs of 2 pods x 2
// GPUs (4 GPUs a gang), all Pending.
func queueCluster(weights map[api.QueueID]int32, jobs map[api.QueueID]int) cluster {
	nodes, _ := gpuCluster(4, 0)
	c := cluster{nodes: nodes}
	for q, w := range weights {
		queue := st.MakeQueue(q)
		queue.Weight = w
		c.queues = append(c.queues, queue)
		for i := range jobs[q] {
			name := fmt.Sprintf("%s-%02d", q, i)
			c.pods = append(c.pods, gpuGang(name, 2, 2)...)
			c.jobs = append(c.jobs, withPhase(st.MakeJob("ns", name).MinMember(2).Queue(q).Obj(), api.JobPending))
		}
	}
	return c
}

// On a saturated cluster, queues of weight 1 and 3 end up with 1:3 of the
// GPUs, with enqueue+allocate and with allocate alone. Without the share
// plugins the first queue by name takes everything.
func TestQueueShareWeights(t *testing.T) {
	weights := map[api.QueueID]int32{"a": 1, "b": 3}
	c := queueCluster(weights, map[api.QueueID]int{"a": 12, "b": 12}) // 48 GPUs each, 32 in all
	const total = 4 * 8
	want := map[api.QueueID]int64{"a": total * 1 / 4, "b": total * 3 / 4}
	for name, acts := range map[string][]framework.Action{
		"enqueue+allocate": {actions.NewEnqueue(), actions.NewAllocate()},
		"allocate":         {actions.NewAllocate()},
		"pipeline":         actions.Pipeline(),
	} {
		t.Run(name, func(t *testing.T) {
			ssn := run(t, c, plugins.WithQueueShare(), acts...)
			checkInvariants(t, c, ssn.Bindings())
			if got := gpusByQueue(ssn); got["a"] != want["a"] || got["b"] != want["b"] {
				t.Errorf("GPUs placed %v, want %v", got, want)
			}
			if idle := idleGPUs(ssn); idle != 0 {
				t.Errorf("%d GPUs left idle on a saturated cluster", idle)
			}
		})
	}
	ssn := run(t, c, plugins.Default(), actions.NewEnqueue(), actions.NewAllocate())
	if got := gpusByQueue(ssn); got["a"] == want["a"] {
		t.Errorf("control: without the share plugins the split is %v too; the test proves nothing", got)
	}
}

// An idle queue's share flows to the busy one, whole or in part.
func TestQueueShareFlows(t *testing.T) {
	const total = 4 * 8
	tests := []struct {
		name string
		jobs map[api.QueueID]int
		want map[api.QueueID]int64
	}{
		{"idle queue", map[api.QueueID]int{"b": 12}, map[api.QueueID]int64{"a": 0, "b": total}},
		// a (weight 3) wants one gang, 4 GPUs, less than its 24.
		{"queue wanting less than its share", map[api.QueueID]int{"a": 1, "b": 12}, map[api.QueueID]int64{"a": 4, "b": total - 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := queueCluster(map[api.QueueID]int32{"a": 3, "b": 1}, tt.jobs)
			ssn := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...)
			checkInvariants(t, c, ssn.Bindings())
			if got := gpusByQueue(ssn); got["a"] != tt.want["a"] || got["b"] != tt.want["b"] {
				t.Errorf("GPUs placed %v, want %v", got, tt.want)
			}
		})
	}
}

// A queue that already holds more than it deserves gets nothing new.
func TestQueueShareOverusedGetsNothing(t *testing.T) {
	c := queueCluster(map[api.QueueID]int32{"a": 1, "b": 1}, map[api.QueueID]int{"a": 4, "b": 8})
	// a runs 24 of the 32 GPUs; it deserves 16.
	for i := range 3 {
		name := fmt.Sprintf("a-run-%d", i)
		c.pods = append(c.pods, st.MakePod("ns", name).Job(name).GPU(8).Node(c.nodes[i].Name).Phase(corev1.PodRunning).Obj())
		c.jobs = append(c.jobs, withPhase(st.MakeJob("ns", name).Queue("a").Obj(), api.JobRunning))
	}
	ssn := run(t, c, plugins.WithQueueShare(), actions.Pipeline()...)
	checkInvariants(t, c, ssn.Bindings())
	if got := gpusByQueue(ssn); got["a"] != 0 || got["b"] != 8 {
		t.Errorf("GPUs placed %v, want none for a and the last 8 for b", got)
	}
	if u := ssn.Unschedulable()["ns/a-00"]; u.Reason != actions.ReasonNotEnoughResources {
		t.Errorf("a's gang record %+v", u)
	}
}

// DRF: at equal priority the job holding the smaller dominant share gets
// the one free slot, although the bigger one is older; a higher priority
// still wins over DRF.
func TestDRFOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	build := func(bigPriority int32) cluster {
		// 10 CPUs; big runs 6, small runs 1: room for one more 2-CPU pod.
		c := cluster{nodes: []*corev1.Node{st.MakeNode("n1").Capacity("10", "64Gi", 0).Obj()}}
		for i := range 3 {
			c.pods = append(c.pods, st.MakePod("ns", fmt.Sprintf("big-run-%d", i)).Job("big").Req("2", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj())
		}
		c.pods = append(c.pods,
			st.MakePod("ns", "small-run-0").Job("small").Req("1", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj(),
			st.MakePod("ns", "big-more").Job("big").Req("2", "1Gi").Obj(),
			st.MakePod("ns", "small-more").Job("small").Req("2", "1Gi").Obj())
		c.jobs = []*api.JobInfo{
			withPhase(st.MakeJob("ns", "big").Priority(bigPriority).Created(t0).Obj(), api.JobRunning),
			withPhase(st.MakeJob("ns", "small").Created(t0.Add(time.Hour)).Obj(), api.JobRunning),
		}
		return c
	}
	tests := []struct {
		name    string
		plugins []framework.Plugin
		bigPrio int32
		winner  api.JobID
	}{
		{"drf: small before big", plugins.WithQueueShare(), 0, "ns/small"},
		{"without drf: older first", plugins.Default(), 0, "ns/big"},
		{"priority beats drf", plugins.WithQueueShare(), 10, "ns/big"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := build(tt.bigPrio)
			ssn := run(t, c, tt.plugins, actions.Pipeline()...)
			checkInvariants(t, c, ssn.Bindings())
			got := placed(ssn)
			if len(ssn.Bindings()) != 1 || len(got[tt.winner]) != 1 {
				t.Errorf("placed %v, want the one free slot for %s", got, tt.winner)
			}
		})
	}
}
