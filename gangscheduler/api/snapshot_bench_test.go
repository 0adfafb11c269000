package api_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// BenchmarkNewSnapshot times building a cycle's snapshot of the benchmark
// harness's S6x5 (5000 nodes: 1000 CPU-only, 4000 with 8 GPUs; 3000 gangs of
// a CPU master and 2 GPU workers, all pending), and of S6 at 1000 nodes.
// cold is the first cycle after the caches synced: no memo has seen a node
// or pod yet, so everything is derived. warm is every cycle after: the
// memos carry what each node and pod alone gives, and the nodes are
// unchanged. primed is cold with every pod's task derived by the pod
// informer's handler (api.TaskPrimer) before the caches report synced: the
// first cycle's latency (a backlog's first bind after the caches synced)
// starts with it.
//
//	go test -run=NONE -bench=NewSnapshot -benchtime=5x ./gangscheduler/api/
func BenchmarkNewSnapshot(b *testing.B) {
	for _, size := range []struct{ nodes, gangs int }{{1000, 600}, {5000, 3000}} {
		nodes, pods, jobs := gangCluster(size.nodes, size.gangs)
		cluster := func(memo *api.NodeMemo, tasks *api.TaskMemo, unchanged bool) api.Cluster {
			return api.Cluster{Nodes: nodes, Pods: pods, Jobs: freshJobs(jobs), Queues: []*api.QueueInfo{st.MakeQueue(api.DefaultQueue)},
				JobOf: st.JobOf, Memo: memo, Tasks: tasks, NodesUnchanged: unchanged}
		}
		name := fmt.Sprintf("nodes=%d/pods=%d", size.nodes, len(pods))
		b.Run(name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var memo api.NodeMemo
				var tasks api.TaskMemo
				if _, err := api.NewSnapshot(cluster(&memo, &tasks, false)); err != nil {
					b.Fatal(err)
				}
			}
		})
		// primed is cold with the pod informer's handler ahead of it
		// (api.TaskPrimer): the first cycle after the caches synced, now.
		b.Run(name+"/primed", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				primer := api.NewTaskPrimer(st.JobOf)
				for _, pod := range pods {
					primer.Prime(pod)
				}
				var memo api.NodeMemo
				tasks := api.TaskMemo{Primer: primer}
				b.StartTimer()
				if _, err := api.NewSnapshot(cluster(&memo, &tasks, false)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/warm", func(b *testing.B) {
			var memo api.NodeMemo
			var tasks api.TaskMemo
			s, err := api.NewSnapshot(cluster(&memo, &tasks, false))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.Release()
				if s, err = api.NewSnapshot(cluster(&memo, &tasks, true)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// gangCluster is the harness's S6 shape at the given size (a fifth of the
// nodes CPU-only), every pod pending.
func gangCluster(nodes, gangs int) ([]*corev1.Node, []*corev1.Pod, []*api.JobInfo) {
	var ns []*corev1.Node
	var ps []*corev1.Pod
	var js []*api.JobInfo
	for i := range nodes {
		if i < nodes/5 {
			ns = append(ns, st.MakeNode(fmt.Sprintf("cpu-%05d", i)).Capacity("32", "128Gi", 0).Label("node-pool", "cpu").Obj())
			continue
		}
		ns = append(ns, st.MakeNode(fmt.Sprintf("gpu-%05d", i)).Capacity("64", "512Gi", 8).Label("node-pool", "gpu").Obj())
	}
	for g := range gangs {
		name := fmt.Sprintf("job-%05d", g)
		js = append(js, st.MakeJob("bench", name).MinMember(3).MinTaskMember("Master", 1).MinTaskMember("Worker", 2).Obj())
		ps = append(ps, st.MakePod("bench", name+"-master-0").Job(name).Role("Master").Req("1", "4Gi").NodeSelector("node-pool", "cpu").Obj())
		for w := range 2 {
			ps = append(ps, st.MakePod("bench", fmt.Sprintf("%s-worker-%d", name, w)).Job(name).Role("Worker").Req("4", "16Gi").GPU(2).Obj())
		}
	}
	return ns, ps, js
}

// freshJobs copies jobs without tasks: a snapshot adds its tasks to them.
func freshJobs(jobs []*api.JobInfo) []*api.JobInfo {
	out := make([]*api.JobInfo, len(jobs))
	for i, j := range jobs {
		cp := *j
		out[i] = &cp
	}
	return out
}
