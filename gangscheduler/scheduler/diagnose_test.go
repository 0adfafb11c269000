package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

func mixedCluster() []*corev1.Node {
	return []*corev1.Node{
		st.MakeNode("cpu-0").Capacity("8", "32Gi", 0).Label("pool", "cpu").Obj(),
		st.MakeNode("gpu-0").Capacity("32", "128Gi", 4).Label("pool", "gpu").Obj(),
		st.MakeNode("gpu-1").Capacity("32", "128Gi", 4).Label("pool", "gpu").Obj(),
	}
}

func gangPods(job string, workers int, gpus int64) []*corev1.Pod {
	pods := []*corev1.Pod{st.MakePod("ns", job+"-master").Job(job).Role("Master").Req("1", "1Gi").NodeSelector("pool", "cpu").Obj()}
	for i := range workers {
		pods = append(pods, st.MakePod("ns", job+"-worker-"+string(rune('0'+i))).Job(job).Role("Worker").Req("1", "1Gi").GPU(gpus).Defaulted().Obj())
	}
	return pods
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name          string
		workers       int
		gpus          int64
		wantBound     map[string]string // pod -> node pool
		wantDiagnosis string
	}{
		{
			name:    "fits: master on the CPU node, workers on GPU nodes",
			workers: 4, gpus: 2,
			wantBound: map[string]string{"g-master": "cpu", "g-worker-0": "gpu", "g-worker-1": "gpu", "g-worker-2": "gpu", "g-worker-3": "gpu"},
		},
		{
			name:    "workers short of GPUs: nothing bound, the diagnosis names the role and the resource",
			workers: 3, gpus: 3,
			wantDiagnosis: "Worker: 2 of 3 pending pods fit; then 0/3 nodes are available: " +
				"3 Insufficient nvidia.com/gpu. " +
				"Master: 1 of 1 pending pods fit.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := st.MakeJob("ns", "g").MinMember(int32(tc.workers) + 1).Obj()
			snap := st.MustSnapshot(mixedCluster(), gangPods("g", tc.workers, tc.gpus), []*api.JobInfo{job})
			d := decide(snap, plugins.Default(), []framework.Action{actions.NewAllocate()}, nil)
			got := map[string]string{}
			for _, b := range d.bindings {
				got[b.Task.Name] = snap.Nodes[b.Node].Node.Labels["pool"]
			}
			if len(got) != len(tc.wantBound) {
				t.Errorf("bound %v, want %v", got, tc.wantBound)
			}
			for pod, pool := range tc.wantBound {
				if got[pod] != pool {
					t.Errorf("%s on a %q node, want %q", pod, got[pod], pool)
				}
			}
			if d.diagnoses["ns/g"] != tc.wantDiagnosis {
				t.Errorf("diagnosis\n%q\nwant\n%q", d.diagnoses["ns/g"], tc.wantDiagnosis)
			}
			if tc.wantDiagnosis == "" {
				return
			}
			if d.findings["ns/g"].Reason != actions.ReasonNotEnoughResources {
				t.Errorf("finding %+v", d.findings["ns/g"])
			}
			// Diagnosing places pods tentatively; it must leave nothing
			// behind for the commit.
			for _, n := range snap.NodeList {
				if !n.Used.IsZero() {
					t.Errorf("node %s left with %v used", n.Name, n.Used)
				}
			}
			for _, task := range snap.Jobs["ns/g"].Tasks {
				if task.Status != api.Pending {
					t.Errorf("%s left %v", task.Name, task.Status)
				}
			}
		})
	}
}

// A backlog of gangs of one shape is diagnosed once, and each gang gets
// that diagnosis; a gang of another shape gets its own. (Their workers fit
// no node, so allocate does not search for them again either.)
func TestDecideDiagnosesEachShapeOnce(t *testing.T) {
	backlog := func(gangs int) (decision, *api.Snapshot) {
		var pods []*corev1.Pod
		var jobs []*api.JobInfo
		for i := range gangs {
			name := fmt.Sprintf("g%02d", i)
			jobs = append(jobs, st.MakeJob("ns", name).MinMember(4).Obj())
			pods = append(pods, gangPods(name, 3, 5)...) // workers of 5 GPUs; nodes have 4
		}
		jobs = append(jobs, st.MakeJob("ns", "other").MinMember(2).Obj())
		pods = append(pods, gangPods("other", 1, 6)...)
		snap := st.MustSnapshot(mixedCluster(), pods, jobs)
		return decide(snap, plugins.Default(), []framework.Action{actions.NewAllocate()}, nil), snap
	}
	small, _ := backlog(2)
	large, snap := backlog(20)
	if small.stats.PredicateEvaluations != large.stats.PredicateEvaluations || small.stats.DynamicChecks != large.stats.DynamicChecks {
		t.Errorf("work grew with the backlog: 2 gangs %+v, 20 gangs %+v", small.stats, large.stats)
	}
	want := "Worker: 0 of 3 pending pods fit; then 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. Master: 1 of 1 pending pods fit."
	for i := range 20 {
		if got := large.diagnoses[api.JobID(fmt.Sprintf("ns/g%02d", i))]; got != want {
			t.Errorf("g%02d: %q, want %q", i, got, want)
		}
	}
	if got, own := large.diagnoses["ns/other"], Diagnose(framework.OpenSession(snap, plugins.Default()...), snap.Jobs["ns/other"]); got != own || got == want {
		t.Errorf("other: %q, want its own %q", got, own)
	}
}
