// Package plugins lists the scheduler's plugins; each lives in its own
// package.
package plugins

import (
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/drf"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/interpodaffinity"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/nodeorder"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/podtopologyspread"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/proportion"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/reservation"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/volumes"
)

// Default returns the default plugin set, in registration order: priority
// orders jobs and tasks, gang decides readiness and validity, predicates
// filter nodes by the node-local rules, interpodaffinity and
// podtopologyspread by the rules that relate pods to each other, volumes
// by the pods' volumes, nodeorder scores nodes. A plugin keeps no state between sessions, so the
// same values may open any number of sessions.
func Default() []framework.Plugin {
	return []framework.Plugin{
		priority.New(),
		gang.New(),
		predicates.New(predicates.Config{}),
		interpodaffinity.New(interpodaffinity.Config{}),
		podtopologyspread.New(podtopologyspread.Config{}),
		volumes.New(),
		nodeorder.New(nodeorder.Config{}),
	}
}

// WithQueueShare returns Default plus the queue-share plugins, for the
// enqueue, allocate, backfill pipeline: proportion (each queue's deserved
// share: queue order, allocatable check, admission budget) and drf (jobs of
// equal priority by dominant resource share).
//
// The job order that results, first decisive answer wins: PodGroup priority
// (priority), dominant share (drf, which abstains between jobs of different
// priority, so listing it before priority could not put it above), then the
// session's fallback, older first and then namespace/name.
func WithQueueShare() []framework.Plugin {
	return append(Default(),
		proportion.New(proportion.Config{}),
		drf.New(drf.Config{}),
		reservation.New(reservation.Config{}),
	)
}
