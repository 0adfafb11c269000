// Package gang is the all-or-nothing rule: a job binds only when enough of
// its tasks are placed, in total (minMember) and per role (minTaskMember).
package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "gang"

// Reasons a job is not valid, in the PodGroup API's words.
const (
	ReasonNotEnoughPods       = "NotEnoughPods"
	ReasonNotEnoughPodsOfTask = "NotEnoughPodsOfTask"
	ReasonSchedulingGated     = "SchedulingGated"
)

type plugin struct{}

// New returns the gang plugin.
func New() framework.Plugin { return plugin{} }

func (plugin) Name() string { return Name }

func (plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobReadyFn(JobReady)
	ssn.AddJobValidFn(JobValid)
}

// JobReady: minMember and every minTaskMember are met by allocated, bound
// and running tasks.
func JobReady(job *api.JobInfo) bool { return job.IsReady() }

// JobValid rejects a job that can never become ready with the pods it has:
// fewer pending-or-placed tasks than minMember, in total or for some role.
// Such a job waits for its controller to create pods, or for the gates of
// its gated pods to be removed (SchedulingGated); trying it would only
// take and give back resources. Its gated pods are never placed, so a gang
// that needs them waits whole: none of its pods is bound before the last
// gate it needs is gone.
func JobValid(job *api.JobInfo) *framework.ValidateResult {
	short := job.ValidCount() < job.MinMember
	var shortRoles []string
	for role, min := range job.MinTaskMember {
		if n := job.ValidCountOfRole(role); n < min {
			shortRoles = append(shortRoles, fmt.Sprintf("%s: %d of %d", role, n, min))
		}
	}
	slices.Sort(shortRoles)
	switch {
	case !short && len(shortRoles) == 0:
		return nil
	case job.GatedCount() > 0:
		return &framework.ValidateResult{Reason: ReasonSchedulingGated, Message: gatedMessage(job)}
	case short:
		return &framework.ValidateResult{
			Reason:  ReasonNotEnoughPods,
			Message: fmt.Sprintf("%d pods can run, minMember is %d", job.ValidCount(), job.MinMember),
		}
	}
	return &framework.ValidateResult{
		Reason:  ReasonNotEnoughPodsOfTask,
		Message: "not enough pods per role (" + strings.Join(shortRoles, ", ") + ")",
	}
}

// gatedMessage says how many members wait for which gates, e.g. "2 of 3
// members are waiting for scheduling gates: example.com/hold; the gang
// needs minMember 3, so none is placed until they are removed".
func gatedMessage(job *api.JobInfo) string {
	gated := job.GatedTasks()
	var gates []string
	for _, t := range gated {
		for _, g := range t.Pod.Spec.SchedulingGates {
			if !slices.Contains(gates, g.Name) {
				gates = append(gates, g.Name)
			}
		}
	}
	slices.Sort(gates)
	members := job.ValidCount() + int32(len(gated))
	return fmt.Sprintf("%d of %d members are waiting for scheduling gates: %s; the gang needs minMember %d, so none is placed until they are removed",
		len(gated), members, strings.Join(gates, ", "), job.MinMember)
}
