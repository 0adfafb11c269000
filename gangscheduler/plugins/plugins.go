// Package plugins lists the scheduler's plugins; each lives in its own
// package.
package plugins

import (
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/nodeorder"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
)

// Default returns the default plugin set, in registration order: priority
// orders jobs and tasks, gang decides readiness and validity, predicates
// filter nodes, nodeorder scores them. A plugin keeps no state between
// sessions, so the same values may open any number of sessions.
func Default() []framework.Plugin {
	return []framework.Plugin{
		priority.New(),
		gang.New(),
		predicates.New(predicates.Config{}),
		nodeorder.New(nodeorder.Config{}),
	}
}
