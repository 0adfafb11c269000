package config

import (
	"github.com/troupe-ml/troupe/gangscheduler/actions"
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

// This file is the one place that knows every action and plugin by name.
// Adding one is one line in a map below (and, if it should run by default,
// one more in DefaultActions or plugins.Default).

// Actions are the actions a configuration may name, by name.
var Actions = map[string]func() framework.Action{
	"enqueue":  func() framework.Action { return actions.NewEnqueue() },
	"allocate": func() framework.Action { return actions.NewAllocate() },
	"backfill": func() framework.Action { return actions.NewBackfill() },
	// preempt is opt-in: it deletes running pods, which no cluster should
	// get without asking for it. Put it after enqueue and before allocate.
	"preempt": func() framework.Action { return actions.NewPreempt() },
}

// Plugins are the plugins a configuration may name, by name. A plugin whose
// New takes a Config struct is registered WithArguments, so the
// configuration's arguments decode strictly into that struct; one without
// is registered NoArguments.
var Plugins = map[string]PluginFactory{
	priority.Name:   NoArguments(priority.New),
	gang.Name:       NoArguments(gang.New),
	predicates.Name: WithArguments(predicates.New),
	nodeorder.Name:  WithArguments(nodeorder.New),

	interpodaffinity.Name:  WithArguments(interpodaffinity.New),
	podtopologyspread.Name: WithArguments(podtopologyspread.New),
	volumes.Name:           NoArguments(volumes.New),
	proportion.Name:        WithArguments(proportion.New),
	drf.Name:               WithArguments(drf.New),
	reservation.Name:       WithArguments(reservation.New),
}

// RequiredPlugins must be in every configuration, with why: without them
// the scheduler would break the promises it exists for, silently.
var RequiredPlugins = map[string]string{
	gang.Name:       "without it gangs would not be placed all-or-nothing",
	predicates.Name: "without it pods would be placed against their node selectors, affinity, tolerations, ports and resources",
}

// DefaultActions run, in this order, when the configuration names none.
// Enqueue must come before allocate: it admits the gangs that allocate may
// place.
var DefaultActions = []string{"enqueue", "allocate", "backfill"}
