package actions

import "github.com/troupe-ml/troupe/gangscheduler/framework"

// Pipeline returns the scheduling cycle's actions in the order they must
// run: enqueue (admission; it turns the session's admission gate on),
// allocate (admitted gangs, all-or-nothing), backfill (pods that request
// nothing). Allocate alone, without enqueue before it, places every job as
// if all were admitted.
func Pipeline() []framework.Action {
	return []framework.Action{NewEnqueue(), NewAllocate(), NewBackfill()}
}
