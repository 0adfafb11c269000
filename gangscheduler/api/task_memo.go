package api

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// TaskMemo carries what a task derives from its pod object alone from one
// snapshot to the next: the gang it belongs to (JobOf), the requests,
// ports, priority, parsed node affinity and class. Every pod in the
// cluster is a task of every snapshot, so without it a cycle's cost grows
// with every pod that exists, bound or pending, and most of that is
// parsing pods that did not change.
//
// As with NodeMemo, an informer never changes a pod object in place: a
// changed pod is a new object. So entries are kept by the pod object
// itself, and an entry stays valid for as long as that object is listed;
// one whose object is not listed in a snapshot is dropped. Each snapshot
// gets its own TaskInfo, a copy of the entry's: sessions change a task's
// status and node, never what it derives from its pod, which the copies
// share read-only.
//
// The memo also finds a pod listed twice in one snapshot (the same object,
// or two of one UID), which NewSnapshot refuses: by its entries, kept by
// UID as they come and go, rather than by a set of every UID each snapshot
// lists.
//
// A memo serves one JobOf function (the cache's Builder has one for its
// scheduler name): the gang an entry remembers is what the first snapshot
// to list its pod was told.
//
// The zero value is ready to use; not safe for concurrent use.
type TaskMemo struct {
	// Primer, if set, holds entries derived as the informer delivered the
	// pods (see TaskPrimer); it must serve the JobOf the memo is given.
	Primer *TaskPrimer

	byPod map[*corev1.Pod]*taskEntry
	// byUID is an entry of each pod UID the memo holds; the others of the
	// UID, if any, are its rivals. Kept as entries come and go rather than
	// per snapshot, it lets a snapshot find a UID listed twice without a
	// set of every UID it lists (which cost a steady cycle a third of its
	// snapshot).
	byUID map[TaskID]*taskEntry
	// slots hold each gang's JobInfo in the snapshot being built (listJob),
	// for its pods' entries to find without hashing its UID per pod.
	slots map[JobID]*jobSlot
	jobs  int // the gangs the snapshot being built listed
	gen   uint64
	seen  int
	// derived counts the tasks snapshots derived themselves (NewTaskInfo).
	derived uint64
	// slab holds the TaskInfos of the snapshot being built, allocated
	// together: one allocation per snapshot rather than one per pod.
	slab []TaskInfo
}

// jobSlot is where a gang's pods find its JobInfo in the snapshot being
// built: job, if gen is that snapshot's.
type jobSlot struct {
	job *JobInfo
	gen uint64
}

type taskEntry struct {
	uid TaskID
	// rivals are the memo's other entries of the same UID: the entries of
	// a pod's old objects until the memo drops them. Usually none.
	rivals []*taskEntry
	// job and inJob are JobOf's answer for the pod; slot is the job's slot
	// as the entry last found it.
	job   JobID
	inJob bool
	slot  *jobSlot
	// task is the pod's task as NewTaskInfo makes it, for task.Job; built
	// when first asked for (a pending pod of another scheduler never is).
	task  TaskInfo
	built bool
	seen  uint64
}

// begin starts a snapshot's use of the memo; pods is how many it lists.
func (m *TaskMemo) begin(pods int) {
	if m == nil {
		return
	}
	if m.byPod == nil {
		// The first snapshot lists every pod: room for them at once.
		m.byPod = make(map[*corev1.Pod]*taskEntry, pods)
		m.byUID = make(map[TaskID]*taskEntry, pods)
		m.slots = map[JobID]*jobSlot{}
	}
	m.gen++
	m.seen, m.jobs = 0, 0
	m.slab = make([]TaskInfo, 0, pods)
}

// listJob puts job in its slot for the snapshot being built.
func (m *TaskMemo) listJob(job *JobInfo) {
	if m == nil {
		return
	}
	s := m.slots[job.UID]
	if s == nil {
		s = &jobSlot{}
		m.slots[job.UID] = s
	}
	s.job, s.gen = job, m.gen
	m.jobs++
}

// job returns the JobInfo of e's gang in the snapshot being built, from
// jobs without a memo; nil if the snapshot has no such gang.
func (m *TaskMemo) job(e *taskEntry, jobs map[JobID]*JobInfo) *JobInfo {
	if m == nil {
		return jobs[e.job]
	}
	if e.slot == nil || e.slot.gen != m.gen {
		// First asked, or the gang was not listed last time (its slot
		// may be gone): look it up again.
		if e.slot = m.slots[e.job]; e.slot == nil || e.slot.gen != m.gen {
			return nil
		}
	}
	return e.slot.job
}

// entry returns the entry for pod, with JobOf's answer for it: the memo's,
// or without a memo one for this snapshot alone. twice reports that the
// snapshot listed this pod object, or another of the same UID, before;
// without a memo the caller checks (it is always false).
func (m *TaskMemo) entry(pod *corev1.Pod, jobOf JobOfFunc) (e *taskEntry, twice bool) {
	if m == nil {
		return newTaskEntry(pod, jobOf), false
	}
	e = m.byPod[pod]
	if e == nil {
		if m.Primer != nil {
			e = m.Primer.take(pod)
		}
		if e == nil {
			e = newTaskEntry(pod, jobOf)
		}
		m.byPod[pod] = e
		m.addUID(e)
	}
	if e.seen == m.gen {
		return e, true
	}
	e.seen = m.gen
	m.seen++
	for _, o := range e.rivals {
		if o.seen == m.gen {
			return e, true
		}
	}
	return e, false
}

// addUID makes a new entry the rival of every other entry of its UID.
func (m *TaskMemo) addUID(e *taskEntry) {
	if o := m.byUID[e.uid]; o != nil {
		e.rivals = append(slices.Clone(o.rivals), o)
		for _, r := range e.rivals {
			r.rivals = append(r.rivals, e)
		}
	}
	m.byUID[e.uid] = e
}

// dropUID forgets a dropped entry: its rivals no longer have it, and
// another of them, if any, stands for the UID.
func (m *TaskMemo) dropUID(e *taskEntry) {
	for _, r := range e.rivals {
		r.rivals = slices.DeleteFunc(r.rivals, func(o *taskEntry) bool { return o == e })
	}
	switch {
	case m.byUID[e.uid] != e:
	case len(e.rivals) > 0:
		m.byUID[e.uid] = e.rivals[0]
	default:
		delete(m.byUID, e.uid)
	}
	e.rivals = nil
}

func newTaskEntry(pod *corev1.Pod, jobOf JobOfFunc) *taskEntry {
	e := &taskEntry{uid: TaskID(pod.UID)}
	if jobOf != nil {
		e.job, e.inJob = jobOf(pod)
	}
	return e
}

// task returns a new TaskInfo of pod in job, as NewTaskInfo does; e is the
// pod's entry (entry).
func (m *TaskMemo) task(e *taskEntry, job JobID, pod *corev1.Pod) *TaskInfo {
	if m == nil {
		return NewTaskInfo(job, pod)
	}
	if !e.built || e.task.Job != job {
		e.task, e.built = *NewTaskInfo(job, pod), true
		m.derived++
	}
	m.slab = append(m.slab, e.task)
	return &m.slab[len(m.slab)-1]
}

// end drops the entries of pods the snapshot did not list.
func (m *TaskMemo) end() {
	if m == nil {
		return
	}
	m.slab = nil
	if len(m.slots) > m.jobs {
		for id, s := range m.slots {
			if s.gen != m.gen {
				delete(m.slots, id)
			}
		}
	}
	if len(m.byPod) == m.seen {
		return
	}
	for pod, e := range m.byPod {
		if e.seen != m.gen {
			delete(m.byPod, pod)
			m.dropUID(e)
		}
	}
}

// Len is the number of pods the memo holds.
func (m *TaskMemo) Len() int { return len(m.byPod) }

// Derived is how many tasks the memo's snapshots derived themselves, not
// finding them carried from an earlier snapshot or primed.
func (m *TaskMemo) Derived() uint64 { return m.derived }
