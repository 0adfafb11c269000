package actions_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// run opens a session with plugins on a fresh snapshot of c and runs acts.
func run(t testing.TB, c cluster, plugins []framework.Plugin, acts ...framework.Action) *framework.Session {
	t.Helper()
	jobs := make([]*api.JobInfo, len(c.jobs))
	for i, j := range c.jobs {
		cp := *j
		cp.Tasks = nil
		jobs[i] = &cp
	}
	snap := st.MustSnapshot(c.nodes, c.pods, jobs, c.queues...)
	snap.Now = c.now
	snap.Topologies = map[string]*api.TopologyInfo{}
	for _, t := range c.topologies {
		snap.Topologies[t.Name] = t
	}
	ssn := framework.OpenSession(snap, plugins...)
	ssn.Run(acts...)
	return ssn
}

// withPhase sets a job's PodGroup phase.
func withPhase(j *api.JobInfo, p api.JobPhase) *api.JobInfo {
	j.Phase = p
	return j
}

// gpuNode is a node with 64 CPU, 256Gi and gpus GPUs, of which used are
// taken by a running pod of another scheduler (nil if used is 0).
func gpuNode(name string, gpus, used int64) (*corev1.Node, *corev1.Pod) {
	n := st.MakeNode(name).Capacity("64", "256Gi", gpus).Obj()
	if used == 0 {
		return n, nil
	}
	return n, st.MakePod("other", "used-"+name).GPU(used).Node(name).Phase(corev1.PodRunning).Obj()
}

// gpuGang returns n pending pods of job name with 1 CPU and gpus GPUs each.
func gpuGang(name string, n int, gpus int64) []*corev1.Pod {
	return makeGang(name, n, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(gpus) })
}

// refuse is a test plugin whose admission check refuses the named jobs.
type refuse []api.JobID

func (refuse) Name() string { return "refuse" }
func (r refuse) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobEnqueueableFn(func(j *api.JobInfo, _ *api.Resource) *framework.ValidateResult {
		for _, id := range r {
			if j.UID == id {
				return &framework.ValidateResult{Reason: "Refused", Message: fmt.Sprintf("test refuses %s", id)}
			}
		}
		return nil
	})
}

// idleGPUs sums the idle GPUs of every node of a session.
func idleGPUs(ssn *framework.Session) int64 {
	var n int64
	for _, node := range ssn.NodeList {
		n += node.Idle.Scalar(st.GPU)
	}
	return n
}

// nodeState captures every node's idle resources and task count.
func nodeState(ssn *framework.Session) map[string]string {
	m := map[string]string{}
	for _, n := range ssn.NodeList {
		m[n.Name] = fmt.Sprintf("%v tasks=%d", n.Idle, len(n.Tasks))
	}
	return m
}
