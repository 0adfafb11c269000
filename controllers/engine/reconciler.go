package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/jobmetrics"
	"github.com/troupe-ml/troupe/integrations"
)

// Reconciler runs the jobs of one framework.
type Reconciler struct {
	client client.Client
	// apiReader reads from the API server, past the caches: for what a
	// cache that has not caught up would answer wrongly (nodeOf).
	apiReader client.Reader
	recorder  events.EventRecorder
	fw        Framework
	// gangs are the gang backends a job can be placed with; with none,
	// pods are scheduled one by one.
	gangs integrations.Backends
	// waitForAdmission holds a gang's pods back until its backend admits
	// the gang.
	waitForAdmission bool
	// warned maps a job's key and a warning's reason to the UID of the
	// job that got it, so that such warnings are given once per job, not
	// per pass.
	warned sync.Map
	expect *expectations
	clock  clock.PassiveClock
	// metrics counts what the passes decide (jobmetrics).
	metrics *jobmetrics.Recorder
	// fence, if set, says whether this replica still leads; a pass it
	// refuses does nothing and is retried (cmdutil.LeaseFence).
	fence func() error
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithGangBackends places every job's pods as one gang through its
// backend: the one the job's annotation names, or the default.
func WithGangBackends(b integrations.Backends) Option {
	return func(r *Reconciler) { r.gangs = b }
}

// WithAdmissionWait sets whether a gang's pods wait for the backend to
// admit the gang (the default), as Kubeflow's training-operator does.
func WithAdmissionWait(wait bool) Option {
	return func(r *Reconciler) { r.waitForAdmission = wait }
}

// WithFence makes every pass first ask fence whether this replica still
// leads: a leader paused past its lease and continued must not act beside
// the one that took over. A nil fence is none.
func WithFence(fence func() error) Option {
	return func(r *Reconciler) { r.fence = fence }
}

// fenceRetry is when a pass the fence refused is tried again: by then the
// replica has renewed its lease, or lost it and exited.
const fenceRetry = time.Second

// NewReconciler returns the engine for one framework.
func NewReconciler(c client.Client, recorder events.EventRecorder, fw Framework, opts ...Option) *Reconciler {
	r := &Reconciler{
		client: c, recorder: recorder, fw: fw, expect: newExpectations(), clock: clock.RealClock{}, waitForAdmission: true,
		metrics: jobmetrics.NewRecorder(fw.FrameworkName()),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the controller: it watches the jobs and every
// object it creates for them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.fw.ControllerName()).
		For(r.fw.NewJob()).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{})
	if d, ok := r.fw.(DependentsReconciler); ok {
		for _, t := range d.DependentTypes() {
			b = b.Owns(t)
		}
	}
	for _, gang := range r.gangs.All() {
		for _, t := range integrations.OwnedTypes(gang) {
			b = b.Owns(t)
		}
	}
	if slices.ContainsFunc(r.gangs.All(), integrations.ReadsTopology) {
		b = b.Watches(&schedulingv1alpha1.Topology{}, handler.EnqueueRequestsFromMapFunc(r.jobsNamingTopology))
	}
	// A lost node changes none of its pods (no kubelet is left to write
	// their status), yet it breaks their gangs: its readiness wakes them.
	b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.jobsOnNode),
		builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return nodeReady(e.ObjectOld.(*corev1.Node)) != nodeReady(e.ObjectNew.(*corev1.Node))
			},
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}))
	return b.Complete(r)
}

// jobsOnNode maps a node to the jobs of this framework with pods on it.
func (r *Reconciler) jobsOnNode(ctx context.Context, node client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.MatchingLabels{kubeflowv1.OperatorNameLabel: r.fw.ControllerName()}); err != nil {
		log.FromContext(ctx).Error(err, "list pods on a node whose readiness changed", "node", node.GetName())
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if p.Spec.NodeName != node.GetName() || ref == nil || ref.Kind != r.fw.GroupVersionKind().Kind {
			continue
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}}
		if !seen[req] {
			seen[req] = true
			out = append(out, req)
		}
	}
	return out
}

// jobsNamingTopology maps a Topology to the unfinished jobs of this
// framework whose topology policy names it (or names none, for the
// default).
func (r *Reconciler) jobsNamingTopology(ctx context.Context, topology client.Object) []reconcile.Request {
	gvk := r.fw.GroupVersionKind()
	obj, err := r.client.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		log.FromContext(ctx).Error(err, "no list type for the job kind", "kind", gvk.Kind)
		return nil
	}
	list := obj.(client.ObjectList)
	if err := r.client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "list jobs naming a Topology that changed", "topology", topology.GetName())
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		log.FromContext(ctx).Error(err, "read the job list", "kind", gvk.Kind)
		return nil
	}
	var out []reconcile.Request
	for _, item := range items {
		job, ok := item.(Job)
		if !ok || IsFinished(job.GetJobStatus()) {
			continue
		}
		gp := job.GetRunPolicy().GangPolicy
		if gp == nil || gp.Topology == nil {
			continue
		}
		if cmp.Or(gp.Topology.TopologyName, schedulingv1alpha1.DefaultTopologyName) == topology.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: job.GetNamespace(), Name: job.GetName()}})
		}
	}
	return out
}

// scope is one reconcile pass over one job.
type scope struct {
	// original is the job as read; the status patch is computed against it.
	original Job
	// job is a defaulted working copy whose status the pass changes.
	job      Job
	key      string
	now      metav1.Time
	pods     []*corev1.Pod
	services []*corev1.Service
	// requeueAfter is the earliest time-based event: a deadline or a TTL.
	requeueAfter time.Duration
	// deleted is set once the pass deleted the job itself.
	deleted bool
	// recreate holds failed pods to replace once the status is written.
	recreate []*corev1.Pod
	// judged holds the pods whose fate the pass decided: those being
	// deleted are released once the status is written (member_finalizer.go).
	judged []*corev1.Pod
	// gang is the job's gang backend, nil for none.
	gang integrations.Backend
	// gangRestart is the job's whole-gang restart policy, nil when its
	// members restart one by one.
	gangRestart *gangRestarts
	// createdPods and createdServices are what the pass created, for its
	// one event of each (announceCreated).
	createdPods, createdServices []string
}

func (s *scope) status() *kubeflowv1.JobStatus { return s.job.GetJobStatus() }

func (s *scope) requeueAt(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// Reconcile fetches the job, runs one pass and writes the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.fence != nil {
		if err := r.fence(); err != nil {
			log.FromContext(ctx).Info("Not reconciling: this replica may no longer lead", "reason", err.Error())
			return ctrl.Result{RequeueAfter: fenceRetry}, nil
		}
	}
	job := r.fw.NewJob()
	if err := r.client.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.expect.forget(req.String())
			r.forgetWarnings(req.String())
			r.metrics.Deleted(req.NamespacedName)
			return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if !managedByTroupe(job) {
		return ctrl.Result{}, nil
	}
	if job.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
	}
	if !r.expect.statusSeen(req.String(), job.GetResourceVersion(), r.clock.Now()) {
		// The cache does not show this operator's last status write yet:
		// a pass now would decide from a stale status and its write would
		// be refused. The write's watch event brings the next pass.
		log.FromContext(ctx).V(2).Info("waiting for the cache to observe the job's last status write")
		return ctrl.Result{}, nil
	}
	s := &scope{
		original: job,
		job:      job.DeepCopyObject().(Job),
		key:      req.String(),
		now:      metav1.NewTime(r.clock.Now()),
	}
	s.job.Default()
	s.gangRestart = gangRestartPolicy(s.job)

	err := r.reconcile(ctx, s)
	patchErr := r.patchStatus(ctx, s)
	switch {
	case patchErr == nil:
		r.recordMetrics(s)
	case err == nil && (apierrors.IsConflict(patchErr) || apierrors.IsNotFound(patchErr)):
		// Another writer changed the job since the cache showed it (this
		// operator's own writes are waited for above), or deleted it. The
		// watch event of that change brings a pass over the newer job,
		// which decides afresh, or the pass that lets a deleted job's
		// members go: nothing of this pass is lost, and there is no error
		// to report. Until then the cached job is known stale, and passes
		// its pods' events bring wait rather than repeat a refused write.
		r.expect.refusedStatus(s.key, job.GetResourceVersion(), s.now.Time)
		log.FromContext(ctx).V(1).Info("Status not written: the job changed or went meanwhile; the next pass reads what it became", "reason", patchErr.Error())
		return ctrl.Result{}, nil
	case err == nil:
		err = patchErr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	// Failed pods are replaced only once their restart is counted in the
	// status: a pass that worked from a stale job fails its status write
	// (optimistic lock) and deletes nothing, so no restart goes uncounted;
	// the deletion expectations then keep later passes from counting the
	// same pod again.
	for _, pod := range s.recreate {
		if err := r.deletePod(ctx, s, pod); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Likewise, members being deleted are released only once what their
	// loss decided is stored.
	if err := r.releaseMembers(ctx, s.judged, isTerminating); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, nil
}

// managedByTroupe reports whether this operator owns the job: another
// controller named in runPolicy.managedBy (Kueue's MultiKueue) runs it
// elsewhere and only mirrors its status here.
func managedByTroupe(job Job) bool {
	m := job.GetRunPolicy().ManagedBy
	return m == nil || *m == kubeflowv1.ManagedByTrainingOperator
}

func (r *Reconciler) reconcile(ctx context.Context, s *scope) error {
	kind := r.fw.GroupVersionKind().Kind
	status := s.status()
	if findCondition(status, ConditionCreated) == nil {
		msg := fmt.Sprintf("%s %s is created.", kind, s.job.GetName())
		setCondition(status, ConditionCreated, corev1.ConditionTrue, kind+"Created", msg, s.now)
		r.event(s.job, corev1.EventTypeNormal, kind+"Created", msg)
	}

	if err := r.listOwned(ctx, s); err != nil {
		return err
	}
	if !r.expect.satisfied(s.key, observed(s.pods, s.services), s.now.Time) {
		// The cache has not caught up with our own writes; its watch event
		// triggers the next pass.
		log.FromContext(ctx).V(2).Info("waiting for the cache to observe earlier writes")
		return nil
	}

	switch {
	case IsFinished(status):
		s.judged = s.pods
		return r.reconcileFinished(ctx, s)
	case isSuspended(s.job):
		s.judged = s.pods
		return r.reconcileSuspended(ctx, s)
	}
	if IsConditionTrue(status, ConditionSuspended) {
		msg := fmt.Sprintf("%s %s is resumed.", kind, s.job.GetName())
		setCondition(status, ConditionSuspended, corev1.ConditionFalse, ReasonResumed, msg, s.now)
		r.event(s.job, corev1.EventTypeNormal, ReasonResumed, msg)
		status.StartTime = nil
	}
	if status.StartTime == nil {
		status.StartTime = s.now.DeepCopy()
	}
	exceeded, remaining := pastActiveDeadline(s.job.GetRunPolicy(), status, s.now.Time)
	if exceeded {
		msg := fmt.Sprintf("%s %s has run longer than activeDeadlineSeconds (%ds).", kind, s.job.GetName(), *s.job.GetRunPolicy().ActiveDeadlineSeconds)
		r.failJob(s, ReasonDeadlineExceeded, msg)
		return nil
	}
	s.requeueAt(remaining)

	if d, ok := r.fw.(DependentsReconciler); ok {
		if err := d.ReconcileDependents(ctx, r.client, s.job); err != nil {
			r.event(s.job, corev1.EventTypeWarning, "FailedReconcileDependents", err.Error())
			return fmt.Errorf("reconcile dependents: %w", err)
		}
	}

	if s.gangRestart != nil {
		if hold, err := r.reconcileGangRestart(ctx, s); err != nil || hold {
			return err
		}
	}
	if admitted, err := r.syncGang(ctx, s); err != nil || !admitted {
		return err
	}

	pass, err := r.reconcileReplicas(ctx, s)
	if err != nil {
		return err
	}
	s.judged = s.pods
	r.updateReplicaStatuses(s, pass.replicas)

	if exceeded, msg := pastBackoffLimit(s.job, s.pods); exceeded && pass.backoffExceeded == "" {
		pass.backoffExceeded = msg
	}
	outcome := r.fw.Outcome(s.job, pass.replicas)
	switch {
	case pass.backoffExceeded != "":
		s.recreate = nil
		r.failJob(s, ReasonBackoffLimitExceeded, pass.backoffExceeded)
		return nil
	case pass.permanentFailure != "":
		s.recreate = nil
		r.failJob(s, kind+"Failed", fmt.Sprintf("%s %s has failed: %s", kind, s.job.GetName(), pass.permanentFailure))
		return nil
	case pass.gangRestart != nil && !outcome.Succeeded:
		// A job whose success rule holds has succeeded whatever broke
		// beside it (a worker preempted, or its node lost, as the chief
		// finished and before this pass): its program's result exists, and
		// a gang restart would run it again. Broken members count in no
		// phase, so they cannot make the rule hold.
		r.restartGang(s, pass.gangRestart)
		return nil
	}
	if pass.restarting != "" {
		setCondition(status, ConditionRestarting, corev1.ConditionTrue, kind+"Restarting", pass.restarting, s.now)
		r.event(s.job, corev1.EventTypeWarning, kind+"Restarting", pass.restarting)
		return nil
	}
	if IsConditionTrue(status, ConditionRestarting) && !pass.replicas.allUp() {
		// A restarting job stays Restarting until its replaced members
		// run again, rather than looking Running with members missing.
		return nil
	}
	switch {
	case outcome.Succeeded:
		msg := fmt.Sprintf("%s %s successfully completed.", kind, s.job.GetName())
		setCondition(status, ConditionSucceeded, corev1.ConditionTrue, kind+"Succeeded", msg, s.now)
		status.CompletionTime = s.now.DeepCopy()
		r.event(s.job, corev1.EventTypeNormal, kind+"Succeeded", msg)
		s.requeueAt(time.Nanosecond)
		return nil
	case outcome.Running && (s.gang == nil || IsConditionTrue(status, ConditionGangScheduled)):
		// A gang-scheduled job runs once its gang does (GangScheduled: its
		// minMember pods run), not when its master alone does: queues that
		// wait for a job to run (Kueue's waitForPodsReady reads this
		// condition) must not count a gang that is half up.
		setCondition(status, ConditionRunning, corev1.ConditionTrue, kind+"Running", fmt.Sprintf("%s %s is running.", kind, s.job.GetName()), s.now)
	}
	return nil
}

// failJob marks the job Failed for good. Like success, the verdict is only
// written by this pass; the clean-up that follows from it happens in the
// next pass, once the verdict is stored. A pass whose status write fails
// (a stale job) must not have deleted pods that the next pass would then
// create again.
func (r *Reconciler) failJob(s *scope, reason, msg string) {
	setCondition(s.status(), ConditionFailed, corev1.ConditionTrue, reason, msg, s.now)
	s.status().CompletionTime = s.now.DeepCopy()
	r.event(s.job, corev1.EventTypeWarning, reason, msg)
	s.requeueAt(time.Nanosecond)
}

// patchStatus writes the status once, only when the pass changed it, and
// with the resourceVersion the pass read: a pass that worked from a stale
// job is retried rather than allowed to overwrite newer counts.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if !s.deleted {
		s.status().State = stateOf(s.status())
	}
	if s.deleted || apiequality.Semantic.DeepEqual(s.original.GetJobStatus(), s.job.GetJobStatus()) {
		return nil
	}
	patched := s.original.DeepCopyObject().(Job)
	*patched.GetJobStatus() = *s.job.GetJobStatus()
	if err := r.client.Status().Patch(ctx, patched, client.MergeFromWithOptions(s.original, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.expect.expectStatus(s.key, patched.GetResourceVersion(), s.now.Time)
	return nil
}

// recordMetrics records a pass whose status write, if it made one,
// succeeded: what it decided is stored, and counted once.
func (r *Reconciler) recordMetrics(s *scope) {
	key := types.NamespacedName{Namespace: s.job.GetNamespace(), Name: s.job.GetName()}
	if s.deleted {
		r.metrics.Deleted(key)
		return
	}
	r.metrics.Observed(key, s.job.GetUID(), s.job.GetCreationTimestamp().Time, s.original.GetJobStatus(), s.status(), s.now.Time)
}

func (r *Reconciler) event(job Job, eventType, reason, note string) {
	r.recorder.Eventf(job, nil, eventType, reason, reason, "%s", note)
}
