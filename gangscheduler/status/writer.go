package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/eventsink"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
)

// ActionScheduling is the action of the events the writer records.
const ActionScheduling = "Scheduling"

// Backoff of a failed write: it is retried after RetryBaseDelay, doubling
// at each failure up to RetryMaxDelay, until it lands or its object is
// gone.
const (
	RetryBaseDelay = 100 * time.Millisecond
	RetryMaxDelay  = 30 * time.Second
)

// The kinds written, as the troupe_scheduler_status_writes_total metric
// names them.
const (
	kindPodGroup = "PodGroup"
	kindQueue    = "Queue"
)

// QueueName names the writer's queue in the workqueue_* metrics.
const QueueName = "troupe-status-writes"

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Workers is the most writes in flight at once (at least 1).
	Workers int
	// Fence, if set, is asked before each write (cmdutil.LeaseFence): a
	// replica that stopped leading must not write over its successor's
	// statuses.
	Fence func() error
	// EventGate, if set, is held while decided statuses wait for their
	// first attempt: the events they announce, and the scheduler's others,
	// wait behind them (eventsink.Gate).
	EventGate *eventsink.Gate
}

// Writer writes PodGroup and Queue statuses apart from the scheduling
// cycle: a cycle hands it what it decided (Write) and goes on, and the
// writer's workers (Start) patch each object from the status the API
// server holds to the latest one decided for it. What a user reads never
// holds the binds back.
//
// Writes are queued by object (client-go's workqueue): an object has one
// write in flight at most, and what is decided for it meanwhile is folded
// into its next write. A gang decided Unschedulable and then Scheduled
// before its first write went out is written once, Scheduled. Its
// PodGroup's events are the decided changes', recorded once the write
// that carries them lands, so each change is announced once and after the
// status shows it; a reason decided more than once before its write goes
// out is announced once, in the latest words (foldEvents). The event on
// its pending pods is the latest decision's only, since it says why the
// gang waits now.
//
// The writer remembers what was decided from the moment it is: the next
// cycle decides before the write lands, and before the informer shows it,
// and comparing against the stale object would decide the same change (and
// its events) again. So until the informer shows the last write, the
// decided status stands in for the object's (OldPodGroupStatus,
// OldQueueStatus).
//
// A write that fails is retried with backoff (RetryBaseDelay to
// RetryMaxDelay) until it lands or its object is gone; what was decided
// meanwhile goes with it. A write the fence refuses is dropped, with
// everything remembered of its object: a replica that leads again decides
// afresh from what landed.
type Writer struct {
	client   client.Client
	recorder events.EventRecorder
	opts     WriterOptions
	queue    workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	records map[types.UID]*record
	// unattempted counts the records whose latest decision no write has
	// been attempted for; idle is closed while it is 0, and the event gate
	// is held (releaseEvents) while it is not.
	unattempted   int
	idle          chan struct{}
	releaseEvents func()
	// failures since the last TakeErrors, and the first of them; fenced
	// are the writes the fence refused, and its last word.
	failures     int
	firstFailure error
	fenced       int
	fenceErr     error
	// unschedulableAt is when each PodGroup's Unschedulable condition last
	// had its status, reason or message written True (Gang.QuietUntil).
	unschedulableAt map[types.UID]time.Time
}

// record is what the writer knows of one PodGroup or Queue.
type record struct {
	// kind is kindPodGroup or kindQueue; object is the latest one decided
	// over: its key, and what its events regard.
	kind   string
	object client.Object
	// decided is the latest status decided; base is the one the API
	// server holds, as far as the writer knows: what it was when first
	// decided over, then what each write landed. A write patches base into
	// decided.
	decided, base objectStatus
	// decisions counts the statuses decided; attempted and landed are the
	// last decision a write was attempted for and the last one landed.
	decisions, attempted, landed int
	// behind are the object's resourceVersions that precede the last
	// write: those decided over, and what earlier writes landed. While the
	// informer shows one of them (or any version older than the last
	// write's: precedesLastWrite), or a decision is not written yet, the
	// decided status stands in for the object's. At any other version the
	// object is the truth again: the last write, or something newer.
	behind []string
	// landedVersion is the resourceVersion the last write produced.
	landedVersion string
	// unsure are the targets of the writes that failed since the last
	// one landed. A write that failed may have been applied all the same
	// (a timeout after the API server took it), so the object holds base
	// or one of these, and the next write must reach decided from any of
	// them (mergePatch).
	unsure []objectStatus
	// events are the PodGroup events of the changes decided since the
	// last landed write, one per reason (foldEvents); podEvent is the
	// latest decision's event for the gang's pending pods. at is when the
	// latest decision was made.
	events   []Event
	podEvent *Event
	pending  []*corev1.Pod
	at       time.Time
	// handedOver are when the decisions not landed yet were handed to
	// the writer, oldest first: a landed write is timed from the oldest
	// it carries (metrics.StatusWriteLag).
	handedOver []handOver
}

// handOver is when decision number decision was handed to the writer.
type handOver struct {
	decision int
	at       time.Time
}

// objectStatus is a PodGroup's status or a Queue's, after its record's
// kind.
type objectStatus struct {
	podGroup schedulingv1alpha1.PodGroupStatus
	queue    schedulingv1alpha1.QueueStatus
}

func (s objectStatus) equal(o objectStatus) bool {
	return equality.Semantic.DeepEqual(s.podGroup, o.podGroup) && equality.Semantic.DeepEqual(s.queue, o.queue)
}

// NewWriter returns a writer that patches through c and records events
// with recorder. Its writes go out once it is started (Start).
func NewWriter(c client.Client, recorder events.EventRecorder, opts WriterOptions) *Writer {
	opts.Workers = max(opts.Workers, 1)
	idle := make(chan struct{})
	close(idle)
	return &Writer{
		client:   c,
		recorder: recorder,
		opts:     opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](RetryBaseDelay, RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: QueueName}),
		records:         map[types.UID]*record{},
		idle:            idle,
		unschedulableAt: map[types.UID]time.Time{},
	}
}

// Start runs the workers until ctx ends: a controller-runtime Runnable
// that needs leader election. A writer starts once; writes decided after
// its end are not sent.
func (w *Writer) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.opts.Workers {
		wg.Go(func() {
			for w.writeNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
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

// Write hands the writer a cycle's statuses: those that changed are
// remembered as decided at once (OldPodGroupStatus and OldQueueStatus
// answer with them), and queued to be written once after is closed (at
// once if it is nil). Each Old must be what OldPodGroupStatus or
// OldQueueStatus answered.
func (w *Writer) Write(pgs []PodGroupWrite, qs []QueueWrite, after <-chan struct{}) {
	var keys []types.UID
	w.mu.Lock()
	for _, pw := range pgs {
		if equality.Semantic.DeepEqual(pw.Old, pw.Update.Status) {
			continue
		}
		r := w.decide(pw.PodGroup, kindPodGroup, objectStatus{podGroup: pw.Old}, objectStatus{podGroup: pw.Update.Status})
		r.events = foldEvents(r.events, pw.Update.Events)
		r.podEvent, r.pending, r.at = pw.Update.PodEvent, pw.Pending, pw.At
		keys = append(keys, pw.PodGroup.UID)
	}
	for _, qw := range qs {
		if equality.Semantic.DeepEqual(qw.Old, qw.New) {
			continue
		}
		w.decide(qw.Queue, kindQueue, objectStatus{queue: qw.Old}, objectStatus{queue: qw.New})
		keys = append(keys, qw.Queue.UID)
	}
	w.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	queue := func() {
		for _, k := range keys {
			w.queue.Add(k)
		}
	}
	if after == nil {
		queue()
		return
	}
	go func() {
		<-after
		queue()
	}()
}

// decide records a status decided over obj, whose status was old. w.mu is
// held.
func (w *Writer) decide(obj client.Object, kind string, old, decided objectStatus) *record {
	r := w.records[obj.GetUID()]
	if r == nil {
		r = &record{kind: kind, base: old}
		w.records[obj.GetUID()] = r
	}
	if rv := obj.GetResourceVersion(); !slices.Contains(r.behind, rv) {
		r.behind = append(r.behind, rv)
	}
	if r.attempted == r.decisions {
		w.addUnattempted(1)
	}
	r.object, r.decided = obj, decided
	r.decisions++
	r.handedOver = append(r.handedOver, handOver{decision: r.decisions, at: time.Now()})
	return r
}

// addUnattempted moves the count of records waiting for an attempt, and
// with it the idle channel and the event gate. w.mu is held.
func (w *Writer) addUnattempted(delta int) {
	was := w.unattempted
	w.unattempted += delta
	switch {
	case was == 0 && w.unattempted > 0:
		w.idle = make(chan struct{})
		if w.opts.EventGate != nil {
			w.releaseEvents = w.opts.EventGate.Hold()
		}
	case was > 0 && w.unattempted == 0:
		close(w.idle)
		if w.releaseEvents != nil {
			w.releaseEvents()
			w.releaseEvents = nil
		}
	}
}

// drop forgets r. w.mu is held.
func (w *Writer) drop(uid types.UID, r *record) {
	if r.attempted < r.decisions {
		w.addUnattempted(-1)
	}
	delete(w.records, uid)
}

// Flush waits until a write was attempted for every status decided
// before it, or ctx ends, and returns what TakeErrors does.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	select {
	case <-idle:
		return w.TakeErrors()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TakeErrors returns the failures of the writes since the last call: how
// many failed (they are retried) and the first error, and how many the
// fence refused.
func (w *Writer) TakeErrors() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.failures > 0 {
		errs = append(errs, fmt.Errorf("%d status writes failed, retried with backoff; first: %w", w.failures, w.firstFailure))
	}
	if w.fenced > 0 {
		errs = append(errs, fmt.Errorf("%d status writes not sent: this replica may no longer lead: %w", w.fenced, w.fenceErr))
	}
	w.failures, w.firstFailure, w.fenced, w.fenceErr = 0, nil, 0, nil
	return errors.Join(errs...)
}

// write is one write taken off the queue.
type write struct {
	kind         string
	object       client.Object
	base, target objectStatus
	// unsure are the record's unsure statuses when the write was taken.
	unsure []objectStatus
	// decision is the decision written (record.decisions when taken).
	decision int
	events   []Event
	podEvent *Event
	pending  []*corev1.Pod
	at       time.Time
}

// writeNext takes the next object off the queue and writes its status;
// false once the queue is shut down.
func (w *Writer) writeNext(ctx context.Context) bool {
	uid, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(uid)
	wr, ok := w.take(uid)
	if !ok {
		w.queue.Forget(uid)
		return true
	}
	resourceVersion, err := w.send(ctx, wr)
	w.settle(uid, wr, resourceVersion, err)
	return true
}

// take returns the write uid's record asks for, if it still asks for one.
func (w *Writer) take(uid types.UID) (write, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.records[uid]
	if r == nil || r.landed == r.decisions {
		return write{}, false
	}
	wr := write{
		kind: r.kind, object: r.object, base: r.base, target: r.decided, unsure: slices.Clone(r.unsure), decision: r.decisions,
		events: r.events, podEvent: r.podEvent, pending: r.pending, at: r.at,
	}
	r.events, r.podEvent, r.pending = nil, nil, nil
	return wr, true
}

// errFenced marks a write the fence refused.
type errFenced struct{ err error }

func (e errFenced) Error() string { return e.err.Error() }

// send patches wr's object from its base (or any of its unsure statuses)
// to its target, after asking the fence, and returns the resourceVersion
// it produced ("" if nothing was sent: the target is the base again, and
// no failed write may have changed it).
func (w *Writer) send(ctx context.Context, wr write) (string, error) {
	if w.opts.Fence != nil {
		if err := w.opts.Fence(); err != nil {
			return "", errFenced{err}
		}
	}
	if wr.base.equal(wr.target) && len(wr.unsure) == 0 {
		return "", nil
	}
	origins := append([]objectStatus{wr.base}, wr.unsure...)
	objs := make([]client.Object, len(origins))
	for i, o := range origins {
		objs[i] = wr.objectWith(o)
	}
	mod := wr.objectWith(wr.target)
	patch, err := mergePatch(objs, mod)
	if err != nil {
		return "", err
	}
	if err := w.client.Status().Patch(ctx, mod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", err
	}
	return mod.GetResourceVersion(), nil
}

// objectWith returns wr's object, by key alone, with status st.
func (wr write) objectWith(st objectStatus) client.Object {
	if wr.kind == kindPodGroup {
		key := metav1.ObjectMeta{Namespace: wr.object.GetNamespace(), Name: wr.object.GetName()}
		return &schedulingv1alpha1.PodGroup{ObjectMeta: key, Status: st.podGroup}
	}
	return &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: wr.object.GetName()}, Status: st.queue}
}

// mergePatch returns a JSON merge patch that turns any of origins into
// target. A merge patch from one origin leaves alone the fields that
// origin and target agree on, so from another origin (a failed write that
// was applied after all) a field it set and target lacks would stay. The
// patches from every origin, merged, set every field any origin differs
// on and remove every field any origin has that target lacks; applied to
// any origin, the result is target.
func mergePatch(origins []client.Object, target client.Object) ([]byte, error) {
	to, err := json.Marshal(target)
	if err != nil {
		return nil, err
	}
	var patch []byte
	for _, o := range origins {
		from, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		p, err := jsonpatch.CreateMergePatch(from, to)
		if err != nil {
			return nil, err
		}
		if patch == nil {
			patch = p
			continue
		}
		if patch, err = jsonpatch.MergeMergePatches(patch, p); err != nil {
			return nil, err
		}
	}
	return patch, nil
}

// settle records a write's outcome: on success the events it carries; on
// failure a retry with what it carried put back; a write of an object
// gone, or one the fence refused, drops the object's record.
func (w *Writer) settle(uid types.UID, wr write, resourceVersion string, err error) {
	w.mu.Lock()
	r := w.records[uid]
	if r == nil {
		// Forgotten while in flight: the object is gone.
		w.mu.Unlock()
		w.queue.Forget(uid)
		return
	}
	if r.attempted < wr.decision {
		if r.attempted < r.decisions && wr.decision == r.decisions {
			w.addUnattempted(-1)
		}
		r.attempted = wr.decision
	}
	var fenced errFenced
	switch {
	case err == nil:
		old := r.base
		r.base, r.landed = wr.target, wr.decision
		carried := 0
		for carried < len(r.handedOver) && r.handedOver[carried].decision <= wr.decision {
			carried++
		}
		if resourceVersion != "" && carried > 0 {
			metrics.StatusWriteLag.Observe(time.Since(r.handedOver[0].at).Seconds())
		}
		r.handedOver = slices.Delete(r.handedOver, 0, carried)
		// Whatever the failed writes did, this one undid (none failed
		// meanwhile: an object has one write in flight at most).
		r.unsure = nil
		if resourceVersion != "" {
			if r.landedVersion != "" {
				r.behind = append(r.behind, r.landedVersion)
			}
			r.landedVersion = resourceVersion
		}
		if wr.kind == kindPodGroup {
			w.noteUnschedulable(uid, old.podGroup, wr.target.podGroup, wr.at)
		}
		w.mu.Unlock()
		w.queue.Forget(uid)
		if resourceVersion != "" {
			metrics.StatusWrites.WithLabelValues(wr.kind, "success").Inc()
		}
		w.announce(wr)
		return
	case errors.As(err, &fenced):
		w.drop(uid, r)
		w.fenced++
		w.fenceErr = fenced.err
		w.mu.Unlock()
		w.queue.Forget(uid)
		return
	case apierrors.IsNotFound(err):
		// Deleted since the snapshot (its job finished or was deleted):
		// there is no status left to write.
		w.drop(uid, r)
		w.mu.Unlock()
		w.queue.Forget(uid)
		metrics.StatusWrites.WithLabelValues(wr.kind, metrics.StatusGone).Inc()
		return
	}
	// It may have been applied all the same: until a write lands, the
	// object holds its base or what this or another failed write sent.
	if !wr.target.equal(wr.base) && !slices.ContainsFunc(r.unsure, wr.target.equal) {
		r.unsure = append(r.unsure, wr.target)
	}
	// Its events wait for the retry, before those decided since (which
	// replace those of their reason); so does its pod event, unless a
	// later decision has its own say.
	r.events = foldEvents(wr.events, r.events)
	if r.decisions == wr.decision {
		r.podEvent, r.pending = wr.podEvent, wr.pending
	}
	w.failures++
	if w.firstFailure == nil {
		w.firstFailure = fmt.Errorf("write status of %s %s: %w", wr.kind, client.ObjectKeyFromObject(wr.object), err)
	}
	w.mu.Unlock()
	metrics.StatusWrites.WithLabelValues(wr.kind, "error").Inc()
	w.queue.AddRateLimited(uid)
}

// foldEvents returns earlier followed by later, each event of later
// replacing those of earlier with its type and reason: a write announces
// each reason once, in the latest decision's words. A gang that waits is
// decided again every cycle, and its Unschedulable message changes as the
// cluster fills; while its write waits in the queue behind thousands of
// others, every wording would otherwise be announced at once when it
// lands, each an event write that tells the user nothing the last one
// does not. Events of different reasons stay, in the order decided
// (Unschedulable, then Scheduled, then Unschedulable again is announced
// as Scheduled, then the latest Unschedulable).
func foldEvents(earlier, later []Event) []Event {
	if len(earlier) == 0 {
		return later
	}
	out := make([]Event, 0, len(earlier)+len(later))
	for _, e := range earlier {
		if !slices.ContainsFunc(later, func(l Event) bool { return l.Type == e.Type && l.Reason == e.Reason }) {
			out = append(out, e)
		}
	}
	return append(out, later...)
}

// announce records the events of a write that landed.
func (w *Writer) announce(wr write) {
	for _, e := range wr.events {
		w.recorder.Eventf(wr.object, nil, e.Type, e.Reason, ActionScheduling, "%s", e.Message)
	}
	if e := wr.podEvent; e != nil {
		for _, pod := range wr.pending {
			w.recorder.Eventf(pod, wr.object, e.Type, e.Reason, ActionScheduling, "%s", e.Message)
		}
	}
}

// recall returns the record of obj while its decided status stands in for
// the object's: a decision is not written yet, or the informer shows a
// version from before the last write.
func (w *Writer) recall(obj metav1.Object) *record {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.records[obj.GetUID()]
	if r == nil {
		return nil
	}
	if r.landed < r.decisions || r.precedesLastWrite(obj.GetResourceVersion()) {
		return r
	}
	w.drop(obj.GetUID(), r)
	return nil
}

// precedesLastWrite says whether the object's version rv is from before
// the last write landed: one the writer saw or wrote before it, or, where
// the API server's versions compare (etcd's do: Kubernetes' comparable
// resource versions), any older one, such as the version a write reported
// failed but applied produced, which the writer never learned.
func (r *record) precedesLastWrite(rv string) bool {
	if slices.Contains(r.behind, rv) {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(rv, r.landedVersion)
	return err == nil && c < 0
}

// OldPodGroupStatus is the status to compare pg's new status against.
func (w *Writer) OldPodGroupStatus(pg *schedulingv1alpha1.PodGroup) schedulingv1alpha1.PodGroupStatus {
	if r := w.recall(pg); r != nil {
		return r.decided.podGroup
	}
	return pg.Status
}

// OldQueueStatus is the status to compare q's new status against.
func (w *Writer) OldQueueStatus(q *schedulingv1alpha1.Queue) schedulingv1alpha1.QueueStatus {
	if r := w.recall(q); r != nil {
		return r.decided.queue
	}
	return q.Status
}

// Forget drops what is remembered of objects not in keep (deleted ones),
// and their writes not yet sent.
func (w *Writer) Forget(keep func(types.UID) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, r := range w.records {
		if !keep(uid) {
			w.drop(uid, r)
		}
	}
	maps.DeleteFunc(w.unschedulableAt, func(uid types.UID, _ time.Time) bool { return !keep(uid) })
}

// UnschedulableWrittenAt is when this writer last wrote a new reason or
// message into uid's Unschedulable condition while it was True (the time
// of the decision written); zero if it has not (since it started, or since
// the condition turned False).
func (w *Writer) UnschedulableWrittenAt(uid types.UID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unschedulableAt[uid]
}

// noteUnschedulable remembers when a write changed the Unschedulable
// condition of uid, or forgets it once the condition is not True. w.mu is
// held.
func (w *Writer) noteUnschedulable(uid types.UID, old, written schedulingv1alpha1.PodGroupStatus, at time.Time) {
	now := meta.FindStatusCondition(written.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
	if now == nil || now.Status != metav1.ConditionTrue {
		delete(w.unschedulableAt, uid)
		return
	}
	was := meta.FindStatusCondition(old.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
	if was == nil || was.Status != now.Status || was.Reason != now.Reason || was.Message != now.Message {
		w.unschedulableAt[uid] = at
	}
}
