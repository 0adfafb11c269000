package actions_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// cluster is a test's input, kept as plain objects so the checks below can
// recompute everything from it without trusting the scheduler's accounting.
type cluster struct {
	nodes      []*corev1.Node
	pods       []*corev1.Pod
	jobs       []*api.JobInfo
	queues     []*api.QueueInfo
	topologies []*api.TopologyInfo
	// now is the time of the decisions (api.Snapshot.Now).
	now time.Time
}

// schedule runs one allocate session with the default plugins on a fresh
// snapshot of c.
func schedule(t testing.TB, c cluster) *framework.Session {
	t.Helper()
	// Jobs are copied: the snapshot adds tasks to them.
	jobs := make([]*api.JobInfo, len(c.jobs))
	for i, j := range c.jobs {
		cp := *j
		cp.Tasks = nil
		jobs[i] = &cp
	}
	snap := st.MustSnapshot(c.nodes, c.pods, jobs, c.queues...)
	ssn := framework.OpenSession(snap, plugins.Default()...)
	ssn.Run(actions.NewAllocate())
	return ssn
}

// placed maps job -> pod name -> node of the committed decisions.
func placed(ssn *framework.Session) map[api.JobID]map[string]string {
	m := map[api.JobID]map[string]string{}
	for _, d := range ssn.Bindings() {
		if m[d.Task.Job] == nil {
			m[d.Task.Job] = map[string]string{}
		}
		m[d.Task.Job][d.Task.Name] = d.Node
	}
	return m
}

func occupies(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func pendingPod(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// checkInvariants recomputes, from the input objects and the decisions
// alone, what must hold after any allocate session:
//   - only pending pods of known jobs are placed, each once;
//   - no node holds more than its allocatable of any resource or pods;
//   - every placement passes node affinity, taints and cordon as the
//     Kubernetes helpers judge them, and no two pods share a host port;
//   - every gang that got anything has minMember and every minTaskMember
//     met by what runs and what was placed: never a partial gang.
func checkInvariants(t testing.TB, c cluster, decisions []framework.Decision) {
	t.Helper()
	pods := map[string]*corev1.Pod{}
	for _, p := range c.pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range c.nodes {
		nodes[n.Name] = n
	}
	onNode := map[string][]*corev1.Pod{}
	for _, p := range c.pods {
		if occupies(p) {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		}
	}
	placedByJob := map[api.JobID][]*corev1.Pod{}
	seen := map[string]bool{}
	for _, d := range decisions {
		key := d.Task.Key()
		p, ok := pods[key]
		switch {
		case !ok:
			t.Errorf("placed unknown pod %s", key)
			continue
		case seen[key]:
			t.Errorf("pod %s placed twice", key)
		case !pendingPod(p):
			t.Errorf("pod %s placed but was not pending", key)
		}
		seen[key] = true
		job, ok := st.JobOf(p)
		if !ok {
			t.Errorf("pod %s of no gang placed", key)
		}
		placedByJob[job] = append(placedByJob[job], p)
		n, ok := nodes[d.Node]
		if !ok {
			t.Errorf("pod %s placed on unknown node %s", key, d.Node)
			continue
		}
		onNode[d.Node] = append(onNode[d.Node], p)
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); !ok {
			t.Errorf("pod %s on %s breaks its node affinity/selector", key, n.Name)
		}
		if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations,
			func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}, false); bad {
			t.Errorf("pod %s on %s does not tolerate %v", key, n.Name, taint)
		}
		if n.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations,
			&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
			t.Errorf("pod %s on cordoned node %s", key, n.Name)
		}
	}

	for name, ps := range onNode {
		n, ok := nodes[name]
		if !ok {
			continue
		}
		var used api.Resource
		ports := map[string]string{}
		for _, p := range ps {
			r := api.PodRequests(p)
			used.Add(&r)
			for _, c := range p.Spec.Containers {
				for _, hp := range c.Ports {
					if hp.HostPort == 0 {
						continue
					}
					k := fmt.Sprintf("%s/%d", hp.Protocol, hp.HostPort) // tests use 0.0.0.0 only
					if other, dup := ports[k]; dup {
						t.Errorf("node %s: host port %s used by %s and %s", name, k, other, p.Name)
					}
					ports[k] = p.Name
				}
			}
		}
		alloc := api.NewResource(n.Status.Allocatable)
		over := used.MilliCPU > alloc.MilliCPU || used.Memory > alloc.Memory ||
			used.EphemeralStorage > alloc.EphemeralStorage || used.Pods > alloc.Pods
		for k, v := range used.Scalars {
			over = over || v > alloc.Scalars[k]
		}
		if over {
			t.Errorf("node %s over-committed: uses %v of %v", name, used, alloc)
		}
	}

	for _, j := range c.jobs {
		got := placedByJob[j.UID]
		if len(got) == 0 {
			continue
		}
		total := int32(0)
		byRole := map[string]int32{}
		count := func(p *corev1.Pod) {
			total++
			byRole[p.Annotations[api.TaskRoleAnnotation]]++
		}
		for _, p := range c.pods {
			// Members that hold a node or are done count toward the
			// gang's minimum.
			if id, ok := st.JobOf(p); ok && id == j.UID && (occupies(p) || p.Status.Phase == corev1.PodSucceeded) && p.DeletionTimestamp == nil {
				count(p)
			}
		}
		for _, p := range got {
			count(p)
		}
		if total < j.MinMember {
			t.Errorf("partial gang %s: %d placed, %d with those running or done, minMember %d", j.UID, len(got), total, j.MinMember)
		}
		for role, min := range j.MinTaskMember {
			if byRole[role] < min {
				t.Errorf("partial gang %s: role %s has %d, minTaskMember %d", j.UID, role, byRole[role], min)
			}
		}
	}
}
