// Package gangscheduler is Troupe's in-repo gang scheduler.
//
// It follows the kube-batch / Volcano shape: an informer-fed cache hands a
// snapshot of the cluster to a session; plugins answer questions (does this
// task fit this node, which node is best, is this gang ready) and actions
// (allocate, enqueue, backfill, preempt) make decisions with those answers.
//
// Every decision is a pure function of the snapshot: api, framework, plugins
// and actions never call the API server. A session ends with a list of
// (task, node) bindings and pods to evict; the scheduler loop then commits
// them: the binder writes the bindings through the pods/binding API and
// deletes the evicted pods, and the status writer records each gang's
// outcome on its PodGroup.
//
//	api/        the snapshot model: resources, tasks, jobs (gangs), nodes, queues
//	framework/  session, extension points, statements, the predicate cache
//	plugins/    predicates, gang, priority, nodeorder, proportion (queue share), drf
//	actions/    enqueue, allocate, backfill, and preempt (optional)
//	queues/     the default Queue
//	cache/      informers -> snapshot; pods assumed bound until the informer agrees
//	binder/     parallel binds through pods/binding, Scheduled events
//	status/     PodGroup and Queue status and events, computed then written once
//	scheduler/  the loop: event-triggered cycles, per-role diagnosis, metrics
//	config/     the configuration file and the registry of actions and plugins
//	app/        the binary's flags, RBAC and Run (cmd/scheduler calls Main)
package gangscheduler
