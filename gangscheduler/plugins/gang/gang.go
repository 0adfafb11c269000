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
// Such a job waits for its controller to create pods; trying it would only
// take and give back resources.
func JobValid(job *api.JobInfo) *framework.ValidateResult {
	if n := job.ValidCount(); n < job.MinMember {
		return &framework.ValidateResult{
			Reason:  ReasonNotEnoughPods,
			Message: fmt.Sprintf("%d pods can run, minMember is %d", n, job.MinMember),
		}
	}
	if len(job.MinTaskMember) == 0 {
		return nil
	}
	byRole := job.ValidCountByRole()
	var short []string
	for role, min := range job.MinTaskMember {
		if byRole[role] < min {
			short = append(short, fmt.Sprintf("%s: %d of %d", role, byRole[role], min))
		}
	}
	if len(short) == 0 {
		return nil
	}
	slices.Sort(short)
	return &framework.ValidateResult{
		Reason:  ReasonNotEnoughPodsOfTask,
		Message: "not enough pods per role (" + strings.Join(short, ", ") + ")",
	}
}
