package actions

import (
	"fmt"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// placement is a gang's tentative placement with its topology policy, or
// why there is none.
type placement struct {
	stmt    *framework.Statement
	outcome framework.TopologyOutcome
	reason  string
	message string
	// roomWouldHelp says more free room on the nodes could place it
	// (topology.Result.RoomWouldHelp): only then may it hold nodes.
	roomWouldHelp bool
}

// placeWithTopology places tasks of a gang with a topology policy in one
// statement: the members its policy covers by the topology search
// (topology.Place), then the others each on its best node, as allocate
// places any task. Each task must fit queue (nil: no check). The
// statement is returned open for the caller to commit or discard; it is
// nil when the gang cannot be placed, with the reason and message in the
// PodGroup API's words.
func placeWithTopology(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo, tasks []*api.TaskInfo) placement {
	mayPlace := func(t *api.TaskInfo) bool { return queue == nil || ssn.Allocatable(queue, t) }
	var covered, others []*api.TaskInfo
	for _, t := range tasks {
		if job.Topology.Covers(t.Role) {
			covered = append(covered, t)
		} else {
			others = append(others, t)
		}
	}
	res := topology.Place(ssn, job, covered, mayPlace)
	if res.Stmt == nil {
		return placement{reason: res.Reason, message: res.Message, roomWouldHelp: res.RoomWouldHelp()}
	}
	for _, t := range others {
		if !mayPlace(t) {
			res.Stmt.Discard()
			return placement{reason: ReasonNotEnoughResources, message: fmt.Sprintf("queue %q has no share or capability left for pod %s", job.Queue, t.Key())}
		}
		node := ssn.BestNode(ssn.ClassOf(t), t)
		if node == nil {
			res.Stmt.Discard()
			return placement{reason: ReasonNotEnoughResources, message: refusalMessage("", t, ssn.Diagnose(t).String()), roomWouldHelp: true}
		}
		if err := res.Stmt.Allocate(t, node); err != nil {
			res.Stmt.Discard()
			return placement{reason: ReasonNotEnoughResources, message: err.Error(), roomWouldHelp: true}
		}
	}
	return placement{stmt: res.Stmt, outcome: res.Outcome}
}
