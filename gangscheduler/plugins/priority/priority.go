// Package priority orders jobs and tasks: higher priority first, then older
// first, then by name, so that equal jobs keep a stable order cycle after
// cycle.
package priority

import (
	"cmp"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "priority"

type plugin struct{}

// New returns the priority plugin.
func New() framework.Plugin { return plugin{} }

func (plugin) Name() string { return Name }

func (plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobOrderFn(JobOrder)
	ssn.AddTaskOrderFn(TaskOrder)
}

// JobOrder: higher PodGroup priority, then earlier creation, then
// namespace/name.
func JobOrder(l, r *api.JobInfo) int {
	if c := cmp.Compare(r.Priority, l.Priority); c != 0 {
		return c
	}
	if c := l.CreationTimestamp.Compare(r.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(l.UID, r.UID)
}

// TaskOrder: higher pod priority, then namespace/name.
func TaskOrder(l, r *api.TaskInfo) int {
	if c := cmp.Compare(r.Priority, l.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(l.Namespace, r.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(l.Name, r.Name)
}
