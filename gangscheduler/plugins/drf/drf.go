// Package drf orders jobs by dominant resource share (DRF): between two jobs
// of equal PodGroup priority, the one holding the smaller share of the
// cluster in its most used resource goes first.
//
// A job's share is what its tasks hold (allocated, bound, running or
// releasing) divided by the cluster's allocatable, in the dimension where
// that ratio is largest (cpu, memory, ephemeral-storage, each extended
// resource; pods do not count). It follows the session: placements and
// discards update it through the session's events. A job that holds nothing
// has share 0, so among gangs that are all still pending DRF has no
// opinion and the next order decides; DRF matters for jobs that already
// run and want more (elastic jobs above minMember, gangs replacing lost
// members), which it keeps from crowding out jobs that hold less.
//
// Priority still wins: the job order returns 0 for jobs of different
// priority, whatever the plugin's place in the list, so the priority plugin
// (or the session's age fallback) decides between them. The resulting job
// order, first decisive answer wins, is: PodGroup priority (priority
// plugin), dominant share (this plugin), older first then namespace/name
// (the session's fallback).
package drf

import (
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/internal/share"
)

// Name is the plugin's name.
const Name = "drf"

// Config configures the plugin. It has no options yet; the zero value is
// the default.
type Config struct{}

type plugin struct{}

// New returns the drf plugin.
func New(Config) framework.Plugin { return plugin{} }

func (plugin) Name() string { return Name }

type jobAttr struct {
	held  api.Resource
	share float64
}

// state is the plugin's accounting for one session.
type state struct {
	ssn   *framework.Session
	total api.Resource
	// jobs are keyed by the session's JobInfo, not by UID: the job order
	// looks both jobs up in every comparison, and sorting a backlog of
	// thousands of gangs makes tens of thousands of comparisons a cycle,
	// where hashing a pointer costs a fraction of hashing a UID.
	jobs map[*api.JobInfo]*jobAttr
}

func (plugin) OnSessionOpen(ssn *framework.Session) {
	s := &state{ssn: ssn, total: ssn.TotalAllocatable(), jobs: make(map[*api.JobInfo]*jobAttr, len(ssn.Jobs))}
	attrs := make([]jobAttr, len(ssn.Jobs)) // one allocation for every job's
	i := 0
	for _, job := range ssn.Jobs {
		a := &attrs[i]
		i++
		for _, t := range job.Tasks {
			if t.Status.OccupiesNode() {
				t.AddRequestsTo(&a.held)
			}
		}
		a.share = share.Dominant(&a.held, &s.total)
		s.jobs[job] = a
	}
	ssn.AddJobOrderFn(s.jobOrder)
	ssn.AddEventHandler(framework.EventHandler{AllocateFunc: s.allocate, DeallocateFunc: s.deallocate})
}

// Share returns job's dominant resource share of the cluster in ssn's
// snapshot as it stands now.
func Share(ssn *framework.Session, job *api.JobInfo) float64 {
	total := ssn.TotalAllocatable()
	var held api.Resource
	for _, t := range job.Tasks {
		if t.Status.OccupiesNode() {
			t.AddRequestsTo(&held)
		}
	}
	return share.Dominant(&held, &total)
}

// jobOrder: lower dominant share first, between jobs of equal priority; 0
// otherwise.
func (s *state) jobOrder(l, r *api.JobInfo) int {
	if l.Priority != r.Priority {
		return 0
	}
	ls, rs := s.share(l), s.share(r)
	switch {
	case ls < rs:
		return -1
	case ls > rs:
		return 1
	}
	return 0
}

func (s *state) share(job *api.JobInfo) float64 {
	if a := s.jobs[job]; a != nil {
		return a.share
	}
	return 0
}

func (s *state) allocate(task *api.TaskInfo) {
	if a := s.jobs[s.ssn.Jobs[task.Job]]; a != nil {
		task.AddRequestsTo(&a.held)
		a.share = share.Dominant(&a.held, &s.total)
	}
}

func (s *state) deallocate(task *api.TaskInfo) {
	if a := s.jobs[s.ssn.Jobs[task.Job]]; a != nil {
		task.SubRequestsFrom(&a.held)
		a.share = share.Dominant(&a.held, &s.total)
	}
}
