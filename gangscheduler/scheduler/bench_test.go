package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/config"
)

// scarceFit is scenario S4 (scarce fit) at the given node count: 200 CPU
// nodes (node-pool=cpu), 20 H100 nodes and the rest A100 nodes
// (nvidia.com/gpu.product), and 47 gangs of a master (1 CPU, on the CPU
// pool) and 3 workers (1 GPU each, on the H100s). Past 1000 nodes the
// added nodes are A100s that no pod can use: the cost they add to a cycle
// is the cost the scheduler pays per node rather than per pod.
func scarceFit(nodes int) cache.Objects {
	var o cache.Objects
	for i := range nodes {
		switch {
		case i < 200:
			o.Nodes = append(o.Nodes, st.MakeNode(fmt.Sprintf("cpu-%05d", i)).Capacity("16", "64Gi", 0).Label("node-pool", "cpu").Obj())
		case i < 220:
			o.Nodes = append(o.Nodes, st.MakeNode(fmt.Sprintf("h100-%05d", i)).Capacity("32", "256Gi", 8).Label("node-pool", "gpu").Label("nvidia.com/gpu.product", "H100").Obj())
		default:
			o.Nodes = append(o.Nodes, st.MakeNode(fmt.Sprintf("gpu-%05d", i)).Capacity("32", "256Gi", 8).Label("node-pool", "gpu").Label("nvidia.com/gpu.product", "A100").Obj())
		}
	}
	for g := range 47 {
		name := fmt.Sprintf("job-%03d", g)
		pods := []*st.PodWrapper{st.MakePod("bench", name+"-master-0").Role("Master").Req("1", "4Gi").NodeSelector("node-pool", "cpu")}
		for w := range 3 {
			pods = append(pods, st.MakePod("bench", fmt.Sprintf("%s-worker-%d", name, w)).Role("Worker").Req("4", "16Gi").GPU(1).NodeSelector("nvidia.com/gpu.product", "H100"))
		}
		addGang(&o, name, "Inqueue", pods)
	}
	return o
}

// addGang adds to o a PodGroup of name (minMember 4, the default queue)
// in phase, and pods as its members, troupe-scheduler's; and the default
// queue, if o has none.
func addGang(o *cache.Objects, name string, phase schedulingv1alpha1.PodGroupPhase, pods []*st.PodWrapper) {
	o.PodGroups = append(o.PodGroups, &schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID(name)},
		// Per-role minimums, as the operator writes them for a PyTorchJob.
		Spec:   schedulingv1alpha1.PodGroupSpec{MinMember: 4, MinTaskMember: map[string]int32{"Master": 1, "Worker": 3}, Queue: "default"},
		Status: schedulingv1alpha1.PodGroupStatus{Phase: phase},
	})
	for _, w := range pods {
		p := w.Job(name).Obj()
		p.Spec.SchedulerName = "troupe-scheduler"
		p.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] = name // beside the role
		o.Pods = append(o.Pods, p)
	}
	if len(o.Queues) == 0 {
		o.Queues = []*schedulingv1alpha1.Queue{{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: schedulingv1alpha1.QueueSpec{Weight: 1}}}
	}
}

// BenchmarkCycleScarceFit times one scheduling cycle of scarceFit at 1000
// and 4000 nodes, in its two parts:
//
//   - snapshot: the cycle's state from the objects, by a Builder that built
//     the same objects before and whose last state was released (a
//     scheduler's steady state: its informers replace only the nodes that
//     changed, and each cycle releases its state for the next);
//   - snapshot-cold: the same by Build, with nothing carried over (the
//     first cycle);
//   - decide: a session with the default configuration over such a state,
//     from opening it to the bindings (all 188 pods bind).
//
// The goal is a per-pod cost independent of the node count: 4000 nodes
// should cost a cycle little more than 1000. Run with
//
//	go test -run=NONE -bench=CycleScarce -benchmem ./gangscheduler/scheduler/
func BenchmarkCycleScarceFit(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			o := scarceFit(n)
			acts, plugs, err := config.Default().Build()
			if err != nil {
				b.Fatal(err)
			}
			b.Run("snapshot", func(b *testing.B) {
				builder := cache.Builder{SchedulerName: "troupe-scheduler"}
				for range b.N {
					s, err := builder.Build(o)
					if err != nil {
						b.Fatal(err)
					}
					s.Snapshot.Release()
				}
			})
			b.Run("snapshot-cold", func(b *testing.B) {
				for range b.N {
					if _, err := cache.Build(o, "troupe-scheduler"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("decide", func(b *testing.B) {
				builder := cache.Builder{SchedulerName: "troupe-scheduler"}
				var d decision
				for range b.N {
					b.StopTimer()
					s, err := builder.Build(o)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					d = decide(s.Snapshot, plugs, acts, nil)
					if len(d.bindings) != 188 {
						b.Fatalf("bound %d of 188 pods", len(d.bindings))
					}
					b.StopTimer()
					s.Snapshot.Release()
					b.StartTimer()
				}
				b.ReportMetric(float64(d.stats.PredicateEvaluations), "predicate-evals/op")
			})
		})
	}
}

// backlog is scenario S3 (oversubscribed backlog) at its steady state:
// 100 CPU nodes (node-pool=cpu) and 100 GPU nodes with 8 GPUs each
// (tainted), 133 gangs of a CPU master and 3 workers with 2 GPUs each
// running (every GPU node holds 4 workers of 133 gangs, 4 GPUs short of
// full on one node), and waiting gangs of the same shape, Pending: what
// a cycle reads while S3's backlog drains, with nothing able to fit.
func backlog(waiting int) cache.Objects {
	var o cache.Objects
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	for i := range 100 {
		o.Nodes = append(o.Nodes, st.MakeNode(fmt.Sprintf("cpu-%03d", i)).Capacity("16", "64Gi", 0).Label("node-pool", "cpu").Obj())
		o.Nodes = append(o.Nodes, st.MakeNode(fmt.Sprintf("gpu-%03d", i)).Capacity("32", "256Gi", 8).Label("node-pool", "gpu").Taint(gpuTaint.Key, gpuTaint.Value, gpuTaint.Effect).Obj())
	}
	const running = 133
	for g := range running + waiting {
		name := fmt.Sprintf("job-%04d", g)
		pods := []*st.PodWrapper{st.MakePod("bench", name+"-master-0").Role("Master").Req("1", "4Gi").NodeSelector("node-pool", "cpu")}
		for w := range 3 {
			pods = append(pods, st.MakePod("bench", fmt.Sprintf("%s-worker-%d", name, w)).Role("Worker").Req("4", "16Gi").GPU(2).
				Toleration(gpuTaint.Key, corev1.TolerationOpExists, "", gpuTaint.Effect))
		}
		phase := schedulingv1alpha1.PodGroupPhase("Pending")
		if g < running {
			phase = "Running"
			pods[0].Node(fmt.Sprintf("cpu-%03d", g%100)).Phase(corev1.PodRunning)
			for w, worker := range pods[1:] {
				worker.Node(fmt.Sprintf("gpu-%03d", (3*g+w)/4)).Phase(corev1.PodRunning)
			}
		}
		addGang(&o, name, phase, pods)
	}
	return o
}

// BenchmarkCycleBacklog times one steady-state cycle of S3's backlog
// (snapshot by a Builder that built the same objects before, then the
// decision, as the scheduler's decision CPU counts it) with no gang, 67,
// 133, 267 and 1000 gangs waiting (S3 at scale 2 waits with up to about
// 580): S3's goal is a cycle whose cost does not grow with the backlog.
//
//	go test -run=NONE -bench=CycleBacklog -benchmem ./gangscheduler/scheduler/
func BenchmarkCycleBacklog(b *testing.B) {
	acts, plugs, err := config.Default().Build()
	if err != nil {
		b.Fatal(err)
	}
	for _, waiting := range []int{0, 67, 133, 267, 1000} {
		b.Run(fmt.Sprintf("waiting=%d", waiting), func(b *testing.B) {
			o := backlog(waiting)
			builder := cache.Builder{SchedulerName: "troupe-scheduler"}
			for range b.N {
				s, err := builder.Build(o)
				if err != nil {
					b.Fatal(err)
				}
				d := decide(s.Snapshot, plugs, acts, nil)
				if len(d.bindings) != 0 || len(d.findings) != waiting {
					b.Fatalf("bound %d pods, %d gangs refused; want 0 and %d", len(d.bindings), len(d.findings), waiting)
				}
				s.Snapshot.Release()
			}
		})
	}
}
