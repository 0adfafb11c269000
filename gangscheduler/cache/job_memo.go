package cache

import (
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// jobMemo carries what a gang derives from its PodGroup object
// (JobInfoFromPodGroup) from one cycle to the next, as api.TaskMemo does
// for pods: a backlog of gangs that wait for many cycles is then not
// converted again in each.
//
// An informer never changes a PodGroup object in place, so entries are
// kept by the object itself and stay valid for as long as it is listed;
// one whose object a build does not list is dropped. So it only saves work
// when given the informer's own objects (Cache reads them from the
// informer's store): the copies a List makes are new every cycle, and
// would be converted every cycle. Each build gets its
// own JobInfos, copies of the entries': the scheduler and its sessions set
// a job's phase, times and tasks, never what it derives from the spec
// (minimums, minResources, topology policy), which the copies share
// read-only. The priority is looked up again in every build: it follows
// the PriorityClass objects, which change apart from the PodGroup.
//
// The zero value is ready to use; not safe for concurrent use.
type jobMemo struct {
	byPodGroup map[*schedulingv1alpha1.PodGroup]*jobEntry
	gen        uint64
}

type jobEntry struct {
	job  api.JobInfo
	seen uint64
}

// jobs returns the gangs of pgs, in their order, as JobInfoFromPodGroup
// makes them.
func (m *jobMemo) jobs(pgs []*schedulingv1alpha1.PodGroup, prio Priorities) []*api.JobInfo {
	out := make([]*api.JobInfo, len(pgs))
	if m == nil {
		for i, pg := range pgs {
			out[i] = JobInfoFromPodGroup(pg, prio)
		}
		return out
	}
	if m.byPodGroup == nil {
		m.byPodGroup = map[*schedulingv1alpha1.PodGroup]*jobEntry{}
	}
	m.gen++
	slab := make([]api.JobInfo, len(pgs)) // one allocation for the build's jobs
	for i, pg := range pgs {
		e := m.byPodGroup[pg]
		if e == nil {
			e = &jobEntry{job: *JobInfoFromPodGroup(pg, prio)}
			m.byPodGroup[pg] = e
		}
		e.seen = m.gen
		slab[i] = e.job
		slab[i].Priority = prio.Value(pg.Spec.PriorityClassName)
		out[i] = &slab[i]
	}
	if len(m.byPodGroup) != len(pgs) {
		for pg, e := range m.byPodGroup {
			if e.seen != m.gen {
				delete(m.byPodGroup, pg)
			}
		}
	}
	return out
}
