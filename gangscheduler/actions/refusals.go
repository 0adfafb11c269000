package actions

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// refusals remembers, for one pass of an action over the session's jobs,
// the gang shapes it could not place, so that a backlog of gangs of one
// shape costs one search per pass, not one per gang: a cycle's decision
// time then stays flat as the backlog grows.
//
// A shape is what the placement of a gang depends on besides the nodes:
// its queue, its minimums and what of it already runs, and its pending
// pods' roles and class signatures (api.TaskInfo.ClassSignature) in the
// order they are placed. The framework.Session's predicates read nothing else
// of a pod (static ones the node and the class signature, dynamic ones
// what placements change on the node), so two gangs of one shape are
// placed alike on the same nodes.
//
// During a pass the nodes only fill: placements are committed or held,
// and a refused gang's own are taken back. So a gang refused at one point
// of the pass would, with rare exceptions, be refused at any later point;
// the exception is a greedy placement that finds room on fuller nodes
// where it did not on emptier ones. Refusing the later gang of the shape
// is right regardless: it must not jump ahead of an earlier gang of the
// same shape, which waits. The next cycle's pass starts afresh.
type refusals struct {
	by map[string]refusal
	// withLabels keys shapes by the pods' labels too: some predicate
	// matches selectors against them (framework.Session.LabelSensitive).
	withLabels bool
}

// refusal is how the first gang of a shape was refused, in words that
// hold for every gang of the shape: the message's prefix, the position
// among the gang's ordered tasks of the pod that found no room (-1 for
// none), and why it found none.
type refusal struct {
	prefix string
	pod    int
	why    string
}

// refusalMessage is the message of a refusal, naming pod (nil for none).
func refusalMessage(prefix string, pod *api.TaskInfo, why string) string {
	if pod == nil {
		return prefix + why
	}
	return prefix + "pod " + pod.Key() + ": " + why
}

func newRefusals(ssn *framework.Session) *refusals {
	return &refusals{by: map[string]refusal{}, withLabels: ssn.LabelSensitive()}
}

// shape keys a gang about to be placed with tasks (ordered as they will
// be placed) in queue; false when a pod has no class signature.
func shape(queue api.QueueID, job *api.JobInfo, tasks []*api.TaskInfo, withLabels bool) (string, bool) {
	pods, ok := api.Shape(tasks, withLabels)
	if !ok {
		return "", false
	}
	var b strings.Builder
	ready := job.ReadyCountByRole()
	fmt.Fprintf(&b, "%s|%d|", queue, job.MinMember)
	for _, role := range slices.Sorted(maps.Keys(job.MinTaskMember)) {
		fmt.Fprintf(&b, "%s=%d/%d,", role, job.MinTaskMember[role], ready[role])
	}
	fmt.Fprintf(&b, "|%d|%s", job.ReadyCount(), pods)
	return b.String(), true
}

// lookup returns the message of the refusal of an earlier gang of this
// shape, naming this gang's own pod, if there was one in the pass.
func (r *refusals) lookup(queue api.QueueID, job *api.JobInfo, tasks []*api.TaskInfo) (string, bool) {
	key, ok := shape(queue, job, tasks, r.withLabels)
	if !ok {
		return "", false
	}
	f, ok := r.by[key]
	if !ok {
		return "", false
	}
	var pod *api.TaskInfo
	if f.pod >= 0 {
		pod = tasks[f.pod]
	}
	return refusalMessage(f.prefix, pod, f.why), true
}

// record remembers that the gang with tasks was refused with
// refusalMessage(prefix, pod, why), and returns that message.
func (r *refusals) record(queue api.QueueID, job *api.JobInfo, tasks []*api.TaskInfo, prefix string, pod *api.TaskInfo, why string) string {
	if key, ok := shape(queue, job, tasks, r.withLabels); ok {
		r.by[key] = refusal{prefix: prefix, pod: slices.Index(tasks, pod), why: why}
	}
	return refusalMessage(prefix, pod, why)
}
