package api

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TaskPrimer derives the tasks of pod objects as the pod informer delivers
// them, ahead of the snapshot that first lists them: a TaskMemo given the
// primer (TaskMemo.Primer) takes the entry made for a new pod object rather
// than deriving it on the scheduling loop. The loop's cycles then cost
// nothing per new pod for what the pod alone gives (its gang, requests,
// rules and class), as kube-scheduler's cache is kept by its informers'
// events rather than by its cycles; the first cycle after the caches synced
// finds every pod that existed at start derived already.
//
// Each entry is of one pod object, as in TaskMemo: the informer replaces a
// changed pod by a new object, whose entry replaces the old one's (entries
// are kept by UID), and a deleted pod is forgotten by its UID (Forget: a
// deletion delivers the pod's last state as a new object, not the one the
// informer held). A snapshot takes the entry of each object it lists that
// the memo does not know, so the primer holds at most one entry per pod
// that exists. (A snapshot that lists an object before its handler primed
// it derives the task itself; the entry primed after stays until the pod
// changes or goes.)
//
// Safe for concurrent use: Prime and Forget run on the informer's
// goroutine while a snapshot takes entries on the scheduling loop's.
type TaskPrimer struct {
	jobOf JobOfFunc
	// primed counts the pod objects Prime derived.
	primed atomic.Uint64

	mu    sync.Mutex
	byUID map[types.UID]primed
}

// primed is the entry derived for one object of a pod.
type primed struct {
	pod   *corev1.Pod
	entry *taskEntry
}

// NewTaskPrimer returns a primer for a memo used with jobOf: the gang an
// entry names is jobOf's answer, as if the memo had asked.
func NewTaskPrimer(jobOf JobOfFunc) *TaskPrimer {
	return &TaskPrimer{jobOf: jobOf, byUID: map[types.UID]primed{}}
}

// Prime derives pod's task, for the snapshot that first lists the object:
// as NewSnapshot would, the task of its gang for a pod of a gang, a task of
// no gang for a bound pod of none, and none for another scheduler's pod
// not yet bound (which no snapshot makes a task of).
func (p *TaskPrimer) Prime(pod *corev1.Pod) {
	e := newTaskEntry(pod, p.jobOf)
	switch {
	case e.inJob:
		e.task, e.built = *NewTaskInfo(e.job, pod), true
	case pod.Spec.NodeName != "":
		e.task, e.built = *NewTaskInfo("", pod), true
	}
	p.mu.Lock()
	p.byUID[pod.UID] = primed{pod: pod, entry: e}
	p.mu.Unlock()
	p.primed.Add(1)
}

// Forget drops the entry of any object of pod (by its UID), if no snapshot
// took it: the informer deleted the pod.
func (p *TaskPrimer) Forget(pod *corev1.Pod) {
	p.mu.Lock()
	delete(p.byUID, pod.UID)
	p.mu.Unlock()
}

// take hands the entry of this object of pod to a memo, nil if there is
// none.
func (p *TaskPrimer) take(pod *corev1.Pod) *taskEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.byUID[pod.UID]
	if !ok || pr.pod != pod {
		return nil
	}
	delete(p.byUID, pod.UID)
	return pr.entry
}

// Len is how many pods the primer holds an entry for, for a snapshot to
// take.
func (p *TaskPrimer) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byUID)
}

// Primed is how many pod objects Prime derived.
func (p *TaskPrimer) Primed() uint64 { return p.primed.Load() }
