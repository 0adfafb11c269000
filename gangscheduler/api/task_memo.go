package api

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TaskMemo carries what a task derives from its pod object alone from one
// snapshot to the next: the requests, ports, priority, parsed node
// affinity and class. Every pod in the cluster is a task of every
// snapshot, so without it a cycle's cost grows with every pod that
// exists, bound or pending, and most of that is parsing pods that did not
// change.
//
// As with NodeMemo, an informer never changes a pod object in place, so an
// entry stays valid while the same pointer is listed under its UID (and
// for the same job). Each snapshot gets its own TaskInfo, a copy of the
// entry's: sessions change a task's status and node, never what it
// derives from its pod, which the copies share read-only.
//
// The zero value is ready to use; not safe for concurrent use.
type TaskMemo struct {
	byUID map[types.UID]*taskEntry
	gen   uint64
	seen  int
}

type taskEntry struct {
	task TaskInfo
	seen uint64
}

// begin starts a snapshot's use of the memo.
func (m *TaskMemo) begin() {
	if m == nil {
		return
	}
	if m.byUID == nil {
		m.byUID = map[types.UID]*taskEntry{}
	}
	m.gen++
	m.seen = 0
}

// task returns a new TaskInfo of pod in job, as NewTaskInfo does.
func (m *TaskMemo) task(job JobID, pod *corev1.Pod) *TaskInfo {
	if m == nil {
		return NewTaskInfo(job, pod)
	}
	e := m.byUID[pod.UID]
	if e == nil || e.task.Pod != pod || e.task.Job != job {
		e = &taskEntry{task: *NewTaskInfo(job, pod)}
		m.byUID[pod.UID] = e
	}
	if e.seen != m.gen {
		e.seen = m.gen
		m.seen++
	}
	t := e.task
	return &t
}

// end drops the entries of pods the snapshot did not list.
func (m *TaskMemo) end() {
	if m == nil || len(m.byUID) == m.seen {
		return
	}
	for uid, e := range m.byUID {
		if e.seen != m.gen {
			delete(m.byUID, uid)
		}
	}
}

// Len is the number of pods the memo holds.
func (m *TaskMemo) Len() int { return len(m.byUID) }
