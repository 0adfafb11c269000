package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
)

// ActionScheduling is the action of the events the writer records.
const ActionScheduling = "Scheduling"

// Writer writes PodGroup and Queue statuses, once per object per cycle and
// only when they changed, and records the events of each change.
//
// It remembers what it decided to write: the next cycle may run before
// the write lands (the scheduler's loop does not wait for a cycle's writes,
// see Start), and before the informer delivers it, and comparing against
// the stale object would write the same status (and record the same
// events) again. So while the informer still shows a version from before
// the write, the decided status stands in for the object's
// (OldPodGroupStatus, OldQueueStatus); a write that fails gives way to
// what was remembered before it, and the next cycle writes the change
// again.
type Writer struct {
	client   client.Client
	recorder events.EventRecorder
	workers  int

	mu      sync.Mutex
	written map[types.UID]*memo
	// unschedulableAt is when each PodGroup's Unschedulable condition last
	// had its status, reason or message written True (Gang.QuietUntil).
	unschedulableAt map[types.UID]time.Time
}

type memo struct {
	// behind are the object's resourceVersions that precede the status:
	// the one it was decided over and, when that was itself behind an
	// earlier write the informer had not shown yet, that write's own and
	// everything before it. An object at any other version is the truth
	// again: the write, or something newer.
	behind []string
	// landed is the resourceVersion the write produced, once it did.
	landed   string
	podGroup *schedulingv1alpha1.PodGroupStatus
	queue    *schedulingv1alpha1.QueueStatus
}

// NewWriter returns a writer that patches through c, records events with
// recorder and runs at most workers writes at once.
func NewWriter(c client.Client, recorder events.EventRecorder, workers int) *Writer {
	return &Writer{client: c, recorder: recorder, workers: max(workers, 1), written: map[types.UID]*memo{}, unschedulableAt: map[types.UID]time.Time{}}
}

// recall returns what was decided over obj's version, if the informer has
// not caught up with it yet.
func (w *Writer) recall(obj metav1.Object) (*memo, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.written[obj.GetUID()]
	if !ok {
		return nil, false
	}
	if slices.Contains(m.behind, obj.GetResourceVersion()) {
		return m, true
	}
	delete(w.written, obj.GetUID())
	return nil, false
}

// decide remembers the status about to be written over obj, and returns
// what the write's outcome must call: landed with the version the write
// produced, or failed, which restores what was remembered before.
func (w *Writer) decide(obj metav1.Object, m *memo) (landed func(resourceVersion string), failed func()) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, had := w.written[uid]
	m.behind = []string{rv}
	if had && prev.landed != "" && slices.Contains(prev.behind, rv) {
		m.behind = append(slices.Clone(prev.behind), prev.landed)
	}
	w.written[uid] = m
	// Each outcome only touches the memo while it is still this write's:
	// Forget may have dropped it since.
	landed = func(resourceVersion string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.written[uid] == m {
			m.landed = resourceVersion
		}
	}
	failed = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.written[uid] != m {
			return
		}
		if had {
			w.written[uid] = prev
		} else {
			delete(w.written, uid)
		}
	}
	return landed, failed
}

// Forget drops what is remembered of objects not in keep (deleted ones).
func (w *Writer) Forget(keep func(types.UID) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	maps.DeleteFunc(w.written, func(uid types.UID, _ *memo) bool { return !keep(uid) })
	maps.DeleteFunc(w.unschedulableAt, func(uid types.UID, _ time.Time) bool { return !keep(uid) })
}

// UnschedulableWrittenAt is when this writer last wrote a new reason or
// message into uid's Unschedulable condition while it was True; zero if it
// has not (since it started, or since the condition turned False).
func (w *Writer) UnschedulableWrittenAt(uid types.UID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unschedulableAt[uid]
}

// noteUnschedulable remembers when a write changed the Unschedulable
// condition of uid, or forgets it once the condition is not True.
func (w *Writer) noteUnschedulable(uid types.UID, old, written schedulingv1alpha1.PodGroupStatus, at time.Time) {
	now := meta.FindStatusCondition(written.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
	w.mu.Lock()
	defer w.mu.Unlock()
	if now == nil || now.Status != metav1.ConditionTrue {
		delete(w.unschedulableAt, uid)
		return
	}
	was := meta.FindStatusCondition(old.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
	if was == nil || was.Status != now.Status || was.Reason != now.Reason || was.Message != now.Message {
		w.unschedulableAt[uid] = at
	}
}

// OldPodGroupStatus is the status to compare pg's new status against.
func (w *Writer) OldPodGroupStatus(pg *schedulingv1alpha1.PodGroup) schedulingv1alpha1.PodGroupStatus {
	if m, ok := w.recall(pg); ok && m.podGroup != nil {
		return *m.podGroup
	}
	return pg.Status
}

// OldQueueStatus is the status to compare q's new status against.
func (w *Writer) OldQueueStatus(q *schedulingv1alpha1.Queue) schedulingv1alpha1.QueueStatus {
	if m, ok := w.recall(q); ok && m.queue != nil {
		return *m.queue
	}
	return q.Status
}

// PodGroupWrite is one gang's outcome of a cycle.
type PodGroupWrite struct {
	PodGroup *schedulingv1alpha1.PodGroup
	// Old is what Update was computed against (OldPodGroupStatus).
	Old    schedulingv1alpha1.PodGroupStatus
	Update Update
	// Pending are the gang's pods still waiting for a node: they get
	// Update.PodEvent.
	Pending []*corev1.Pod
	// At is the cycle's time, the one Update was computed at.
	At time.Time
}

// QueueWrite is one queue's outcome of a cycle.
type QueueWrite struct {
	Queue    *schedulingv1alpha1.Queue
	Old, New schedulingv1alpha1.QueueStatus
}

// Write writes every status that changed and waits for the writes: Start
// without a fence, then Batch.Wait.
func (w *Writer) Write(ctx context.Context, pgs []PodGroupWrite, qs []QueueWrite) error {
	return w.Start(ctx, nil, pgs, qs).Wait()
}

// Batch is one Start's writes, under way.
type Batch struct {
	done chan struct{}
	err  error
}

// Done is closed once every write of the batch has returned.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Wait waits for the batch's writes and returns their errors. A nil Batch
// has nothing to wait for.
func (b *Batch) Wait() error {
	if b == nil {
		return nil
	}
	<-b.done
	return b.err
}

// Start patches every status that changed, in the background, and records
// the events of each PodGroup written once its write lands. A status whose
// write fails is written again next cycle (its change is still there), and
// its events wait for that: events follow the status, so each change is
// announced once.
//
// What Start writes is remembered at once (OldPodGroupStatus and
// OldQueueStatus answer with it), so a cycle may decide while the last
// one's writes are under way. The statuses of a batch must be computed
// after the previous batch is done: an object's writes then go out in
// order, each computed over the one before, and UnschedulableWrittenAt is
// current.
//
// fence, if not nil, is asked before each write (cmdutil.LeaseFence): a
// batch outlasts the cycle that started it, and a replica that stopped
// leading meanwhile must not write over its successor's statuses. Once it
// refuses, the writes not yet sent are dropped, as failed ones are.
func (w *Writer) Start(ctx context.Context, fence func() error, pgs []PodGroupWrite, qs []QueueWrite) *Batch {
	type write struct {
		send   func() error
		failed func()
	}
	var writes []write
	for _, pw := range pgs {
		if equality.Semantic.DeepEqual(pw.Old, pw.Update.Status) {
			continue
		}
		decided := pw.Update.Status
		landed, failed := w.decide(pw.PodGroup, &memo{podGroup: &decided})
		writes = append(writes, write{func() error { return w.writePodGroup(ctx, pw, landed, failed) }, failed})
	}
	for _, qw := range qs {
		if equality.Semantic.DeepEqual(qw.Old, qw.New) {
			continue
		}
		decided := qw.New
		landed, failed := w.decide(qw.Queue, &memo{queue: &decided})
		writes = append(writes, write{func() error { return w.writeQueue(ctx, qw, landed, failed) }, failed})
	}
	b := &Batch{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		errs := make([]error, len(writes))
		var (
			mu      sync.Mutex
			refused error
			dropped int
		)
		parallel.ForEach(len(writes), w.workers, func(i int) {
			if fence != nil {
				if err := fence(); err != nil {
					writes[i].failed()
					mu.Lock()
					refused = err
					dropped++
					mu.Unlock()
					return
				}
			}
			errs[i] = writes[i].send()
		})
		if refused != nil {
			errs = append(errs, fmt.Errorf("%d status writes not sent: this replica may no longer lead: %w", dropped, refused))
		}
		b.err = errors.Join(errs...)
	}()
	return b
}

func (w *Writer) writePodGroup(ctx context.Context, pw PodGroupWrite, landed func(string), failed func()) error {
	pg := pw.PodGroup
	orig := &schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: pg.Namespace, Name: pg.Name},
		Status:     pw.Old,
	}
	mod := orig.DeepCopy()
	mod.Status = pw.Update.Status
	if err := w.client.Status().Patch(ctx, mod, client.MergeFrom(orig)); err != nil {
		failed()
		if apierrors.IsNotFound(err) {
			// Deleted since the snapshot (its job finished or was
			// deleted): there is no status left to write.
			metrics.StatusWrites.WithLabelValues("PodGroup", metrics.StatusGone).Inc()
			return nil
		}
		metrics.StatusWrites.WithLabelValues("PodGroup", "error").Inc()
		return fmt.Errorf("write status of PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	metrics.StatusWrites.WithLabelValues("PodGroup", "success").Inc()
	landed(mod.ResourceVersion)
	w.noteUnschedulable(pg.UID, pw.Old, pw.Update.Status, pw.At)
	for _, e := range pw.Update.Events {
		w.recorder.Eventf(pg, nil, e.Type, e.Reason, ActionScheduling, "%s", e.Message)
	}
	if e := pw.Update.PodEvent; e != nil {
		for _, pod := range pw.Pending {
			w.recorder.Eventf(pod, pg, e.Type, e.Reason, ActionScheduling, "%s", e.Message)
		}
	}
	return nil
}

func (w *Writer) writeQueue(ctx context.Context, qw QueueWrite, landed func(string), failed func()) error {
	q := qw.Queue
	orig := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q.Name}, Status: qw.Old}
	mod := orig.DeepCopy()
	mod.Status = qw.New
	if err := w.client.Status().Patch(ctx, mod, client.MergeFrom(orig)); err != nil {
		failed()
		if apierrors.IsNotFound(err) {
			metrics.StatusWrites.WithLabelValues("Queue", metrics.StatusGone).Inc()
			return nil
		}
		metrics.StatusWrites.WithLabelValues("Queue", "error").Inc()
		return fmt.Errorf("write status of Queue %s: %w", q.Name, err)
	}
	metrics.StatusWrites.WithLabelValues("Queue", "success").Inc()
	landed(mod.ResourceVersion)
	return nil
}
