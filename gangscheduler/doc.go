// Package gangscheduler is Troupe's in-repo gang scheduler.
//
// It follows the kube-batch / Volcano shape: a cache (later) hands a snapshot
// of the cluster to a session; plugins answer questions (does this task fit
// this node, which node is best, is this gang ready) and actions (allocate,
// later enqueue, backfill, preempt) make decisions with those answers.
//
// Every decision is a pure function of the snapshot: api, framework, plugins
// and actions never call the API server. A session ends with a list of
// (task, node) bindings that a binder (later) writes through the API.
//
//	api/        the snapshot model: resources, tasks, jobs (gangs), nodes, queues
//	framework/  session, extension points, statements, the predicate cache
//	plugins/    predicates, gang, priority, nodeorder
//	actions/    allocate
package gangscheduler
