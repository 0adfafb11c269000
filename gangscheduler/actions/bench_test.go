package actions_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/reservation"
)

// benchCluster is the design's benchmark workload: a fifth of the nodes
// CPU-only (node-pool=cpu), the rest with 8 GPUs; gangs of one CPU master
// pinned to the CPU pool and workers with 2 GPUs each (three in the
// design).
func benchCluster(nodes, gangs, workers int) cluster {
	return benchClusterWith(nodes, gangs, workers, false)
}

// benchClusterWith is benchCluster, and with rules the GPU nodes in 8
// zones and the workers carrying the test harness's S5 rules: one worker
// of the gang per node (required pod anti-affinity by hostname) and the
// gang's workers spread over the zones (DoNotSchedule, maxSkew 1).
func benchClusterWith(nodes, gangs, workers int, rules bool) cluster {
	var c cluster
	for i := range nodes {
		if i < nodes/5 {
			c.nodes = append(c.nodes, st.MakeNode(fmt.Sprintf("cpu-%05d", i)).Capacity("32", "128Gi", 0).Label("node-pool", "cpu").Obj())
			continue
		}
		n := st.MakeNode(fmt.Sprintf("gpu-%05d", i)).Capacity("64", "512Gi", 8).Label("node-pool", "gpu")
		if rules {
			n.Label(corev1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%8))
		}
		c.nodes = append(c.nodes, n.Obj())
	}
	for g := range gangs {
		name := fmt.Sprintf("job-%05d", g)
		c.jobs = append(c.jobs, st.MakeJob("bench", name).MinMember(int32(1+workers)).
			MinTaskMember("Master", 1).MinTaskMember("Worker", int32(workers)).Obj())
		c.pods = append(c.pods, st.MakePod("bench", name+"-master-0").Job(name).Role("Master").
			Req("1", "4Gi").NodeSelector("node-pool", "cpu").Obj())
		for w := range workers {
			p := st.MakePod("bench", fmt.Sprintf("%s-worker-%d", name, w)).Job(name).Role("Worker").
				Req("4", "16Gi").GPU(2).Labels("job", name, "role", "worker", "index", fmt.Sprint(w))
			if rules {
				p.PodAntiAffinity(corev1.LabelHostname, "job", name, "role", "worker").
					Spread(1, corev1.LabelTopologyZone, corev1.DoNotSchedule, nil, "job", name, "role", "worker")
			}
			c.pods = append(c.pods, p.Obj())
		}
	}
	return c
}

// BenchmarkAllocate times one allocate session (plugins, predicates with
// the class cache, scoring, statements) on a prepared snapshot, and reports
// how many static predicate evaluations it took next to classes x nodes
// and pods x nodes. The third size has bigger gangs (1 master + 15
// workers), where the two differ most.
//
//	go test -run=NONE -bench=. -benchtime=1x ./gangscheduler/actions/
func BenchmarkAllocate(b *testing.B) {
	benchSessions(b, plugins.Default, false, actions.NewAllocate())
}

// BenchmarkEnqueueAllocate is BenchmarkAllocate with every gang Pending and
// enqueue before allocate, with the queue-share plugins (proportion, drf):
// every gang is admitted by a node-by-node trial placement first, then
// placed. The trials share the session's predicate cache with allocate, so
// predicate evaluations stay at classes x nodes; the trials' cost shows in
// time per pod.
func BenchmarkEnqueueAllocate(b *testing.B) {
	benchSessions(b, plugins.WithQueueShare, true, actions.NewEnqueue(), actions.NewAllocate())
}

// BenchmarkEnqueueAllocateRules is BenchmarkEnqueueAllocate on the same
// gangs with placement rules (benchClusterWith): what the inter-pod
// affinity and topology spread plugins add per pod, gang-aware.
//
//	go test -run=NONE -bench='EnqueueAllocate' -benchtime=3x ./gangscheduler/actions/
func BenchmarkEnqueueAllocateRules(b *testing.B) {
	benchSessionsWith(b, true, plugins.WithQueueShare, true, actions.NewEnqueue(), actions.NewAllocate())
}

func benchSessions(b *testing.B, plugs func() []framework.Plugin, pending bool, acts ...framework.Action) {
	benchSessionsWith(b, false, plugs, pending, acts...)
}

func benchSessionsWith(b *testing.B, rules bool, plugs func() []framework.Plugin, pending bool, acts ...framework.Action) {
	for _, size := range []struct{ nodes, gangs, workers int }{{1000, 500, 3}, {5000, 2000, 3}, {1000, 100, 15}} {
		b.Run(fmt.Sprintf("nodes=%d/gangs=%d/workers=%d", size.nodes, size.gangs, size.workers), func(b *testing.B) {
			c := benchClusterWith(size.nodes, size.gangs, size.workers, rules)
			var stats framework.Stats
			var bound, admitted int
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				snap := st.MustSnapshot(c.nodes, c.pods, copyJobs(c.jobs, pending))
				b.StartTimer()

				ssn := framework.OpenSession(snap, plugs()...)
				ssn.Run(acts...)

				b.StopTimer()
				stats, bound, admitted = ssn.Stats(), len(ssn.Bindings()), len(ssn.Admitted())
				if bound != len(c.pods) {
					b.Fatalf("bound %d of %d pods: %v", bound, len(c.pods), firstN(ssn.Unschedulable(), 3))
				}
				if pending && admitted != len(c.jobs) {
					b.Fatalf("admitted %d of %d gangs: %v", admitted, len(c.jobs), firstN(ssn.Unschedulable(), 3))
				}
				b.StartTimer()
			}
			pods := len(c.pods)
			b.ReportMetric(float64(stats.PredicateEvaluations), "predicate-evals/op")
			b.ReportMetric(float64(stats.Classes), "classes/op")
			b.ReportMetric(float64(stats.Classes*size.nodes), "classes*nodes/op")
			b.ReportMetric(float64(pods*size.nodes), "pods*nodes/op")
			b.ReportMetric(float64(bound), "pods-bound/op")
			if pending {
				b.ReportMetric(float64(admitted), "gangs-admitted/op")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pods), "ns/pod")
		})
	}
}

// copyJobs copies jobs for a fresh snapshot (it adds tasks to them),
// Pending when pending.
func copyJobs(jobs []*api.JobInfo, pending bool) []*api.JobInfo {
	out := make([]*api.JobInfo, len(jobs))
	for i, j := range jobs {
		cp := *j
		if pending {
			cp.Phase = api.JobPending
		}
		out[i] = &cp
	}
	return out
}

func firstN(m map[api.JobID]framework.Unschedulable, n int) []string {
	var out []string
	for k, v := range m {
		if len(out) == n {
			break
		}
		out = append(out, string(k)+": "+v.Message)
	}
	return out
}

// BenchmarkEnqueueBacklog times one enqueue+allocate session on 200 nodes
// (160 with 8 GPUs) with a backlog: the design's gangs, once, three times
// and six times what the GPU nodes hold (213 gangs). The first 213 are
// admitted and placed; the others are refused. A refused gang whose pods
// fit no node costs no search once the first of its shape found none
// (noFit), so the session's time should grow with what is placed, not
// with the backlog.
//
//	go test -run=NONE -bench=Backlog -benchtime=1x ./gangscheduler/actions/
func BenchmarkEnqueueBacklog(b *testing.B) {
	const nodes, fit = 200, 213
	for _, gangs := range []int{fit, 3 * fit, 6 * fit} {
		b.Run(fmt.Sprintf("nodes=%d/gangs=%d", nodes, gangs), func(b *testing.B) {
			c := benchCluster(nodes, gangs, 3)
			var stats framework.Stats
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				snap := st.MustSnapshot(c.nodes, c.pods, copyJobs(c.jobs, true))
				b.StartTimer()

				ssn := framework.OpenSession(snap, plugins.Default()...)
				ssn.Run(actions.NewEnqueue(), actions.NewAllocate())

				b.StopTimer()
				stats = ssn.Stats()
				if admitted, bound := len(ssn.Admitted()), len(ssn.Bindings()); admitted != fit || bound != 4*fit {
					b.Fatalf("admitted %d gangs and bound %d pods; want %d and %d", admitted, bound, fit, 4*fit)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(stats.PredicateEvaluations), "predicate-evals/op")
			b.ReportMetric(float64(stats.DynamicChecks), "dynamic-checks/op")
		})
	}
}

// BenchmarkAllocateHold times one allocate session in which a gang of 64
// whole-GPU-node workers does not fit (every GPU node has a GPU taken) and
// holds the nodes it lacks (reservation, after 0), against the same
// session without the plugin: what finding the nodes to hold costs, per
// node of the cluster.
//
//	go test -run=NONE -bench=AllocateHold -benchtime=20x ./gangscheduler/actions/
func BenchmarkAllocateHold(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		var c cluster
		for i := range nodes {
			name := fmt.Sprintf("gpu-%05d", i)
			c.nodes = append(c.nodes, st.MakeNode(name).Capacity("64", "512Gi", 8).Obj())
			c.pods = append(c.pods, st.MakePod("other", "used-"+name).GPU(1).Node(name).Phase(corev1.PodRunning).Obj())
		}
		c.jobs = append(c.jobs, st.MakeJob("ns", "big").MinMember(64).Obj())
		c.pods = append(c.pods, gpuGang("big", 64, 8)...)
		for _, hold := range []bool{false, true} {
			plugs := plugins.Default()
			if hold {
				plugs = append(plugs, reservation.New(reservation.Config{After: &metav1.Duration{}}))
			}
			b.Run(fmt.Sprintf("nodes=%d/hold=%v", nodes, hold), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					snap := st.MustSnapshot(c.nodes, c.pods, copyJobs(c.jobs, false))
					b.StartTimer()
					ssn := framework.OpenSession(snap, plugs...)
					ssn.Run(actions.NewAllocate())
					b.StopTimer()
					if held := len(ssn.Holds()["ns/big"]); hold != (held == 64) || len(ssn.Bindings()) != 0 {
						b.Fatalf("held %d nodes, bound %d pods: %v", held, len(ssn.Bindings()), ssn.Unschedulable())
					}
					b.StartTimer()
				}
			})
		}
	}
}
