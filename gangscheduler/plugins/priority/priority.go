// Package priority orders jobs and tasks: higher priority first.
//
// The job order it registers compares PodGroup priority only and has no
// opinion on jobs of equal priority, so that later job orders (the drf
// plugin's dominant resource share) decide between them before the
// session's own fallback does (older first, then namespace/name; see
// framework.Session.JobCompare). A session with this plugin alone orders
// jobs exactly as JobOrder does.
//
// Job order, first decisive answer wins:
//
//  1. priority: higher PodGroup priority first;
//  2. drf (if configured): lower dominant resource share first (drf abstains
//     between jobs of different priority, so its place in the plugin list
//     cannot put it above priority);
//  3. session fallback: older first, then namespace/name.
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
	ssn.AddJobOrderFn(JobPriority)
	ssn.AddTaskOrderFn(TaskOrder)
}

// JobPriority is the job order the plugin registers: higher PodGroup
// priority first, 0 between jobs of equal priority.
func JobPriority(l, r *api.JobInfo) int {
	return cmp.Compare(r.Priority, l.Priority)
}

// JobOrder is the whole order a session with only this plugin gives:
// higher PodGroup priority, then earlier creation, then namespace/name. It
// is for sorting jobs outside a session.
func JobOrder(l, r *api.JobInfo) int {
	if c := JobPriority(l, r); c != 0 {
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
