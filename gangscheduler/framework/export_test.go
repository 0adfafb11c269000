package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// Indexed says whether BestNode answers for task from a bestIndex.
func (ssn *Session) Indexed(task *api.TaskInfo) bool {
	return ssn.bestIndexFor(ssn.ClassOf(task), task) != nil
}
