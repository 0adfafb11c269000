package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// Whole-gang restarts (runPolicy.gangPolicy.restartPolicy Gang).
//
// A restart is a generation change, decided in one pass and carried out in
// the next ones, so that it survives an operator restart at any point:
//
//  1. The pass that sees a trigger writes status.gang (generation+1, the
//     counts, lastRestart) and the Restarting condition, and deletes
//     nothing: a pass working from a stale job loses its status write to
//     the optimistic lock, and then has done nothing.
//  2. Every later pass finds the pods labelled with an older generation and
//     tears them down, Running ones too, force-deleting those stuck
//     Terminating on a lost node. The PodGroup goes with them, so that the
//     backend admits the next gang afresh. No pod is created meanwhile.
//  3. Once no pod of an older generation is left and the backoff has
//     passed, the pass syncs a new PodGroup and creates the next
//     generation, which the backend places as one gang.

// Reasons a job fails when a gang restart budget runs out.
const (
	ReasonMaxRestartsExceeded    = "MaxRestartsExceeded"
	ReasonMaxDisruptionsExceeded = "MaxDisruptionsExceeded"
	// ReasonGangRestarting is the GangScheduled condition's reason while
	// the gang is torn down and waits to be created again.
	ReasonGangRestarting = "GangRestarting"
)

// Defaults of the gang policy's fields, for jobs stored before the schema
// defaulted them.
const (
	defaultMaxRestarts               = 3
	defaultBackoffInitialSeconds     = 10
	defaultBackoffMaxSeconds         = 300
	defaultPartialGangTimeoutSeconds = 300
	defaultNodeLostTimeoutSeconds    = 60
)

// gangRestarts is a job's whole-gang restart policy, with defaults applied.
type gangRestarts struct {
	triggers        []kubeflowv1.GangRestartTrigger
	maxRestarts     int32
	maxDisruptions  *int32
	backoffInitial  time.Duration
	backoffMax      time.Duration
	partialTimeout  time.Duration
	nodeLostTimeout time.Duration
}

// gangRestartPolicy returns the job's whole-gang restart policy, or nil
// when its members restart one by one.
func gangRestartPolicy(job Job) *gangRestarts {
	gp := job.GetRunPolicy().GangPolicy
	if gp == nil || gp.RestartPolicy != kubeflowv1.GangRestartPolicyGang {
		return nil
	}
	seconds := func(v *int32, def int32) time.Duration {
		return time.Duration(ptr.Deref(v, def)) * time.Second
	}
	g := &gangRestarts{
		triggers:        gp.RestartOn,
		maxRestarts:     ptr.Deref(gp.MaxRestarts, defaultMaxRestarts),
		maxDisruptions:  gp.MaxDisruptions,
		partialTimeout:  seconds(gp.PartialGangTimeoutSeconds, defaultPartialGangTimeoutSeconds),
		nodeLostTimeout: seconds(gp.NodeLostTimeoutSeconds, defaultNodeLostTimeoutSeconds),
		backoffInitial:  defaultBackoffInitialSeconds * time.Second,
		backoffMax:      defaultBackoffMaxSeconds * time.Second,
	}
	if len(g.triggers) == 0 {
		g.triggers = kubeflowv1.AllGangRestartTriggers
	}
	if b := gp.Backoff; b != nil {
		g.backoffInitial = seconds(b.InitialSeconds, defaultBackoffInitialSeconds)
		g.backoffMax = seconds(b.MaxSeconds, defaultBackoffMaxSeconds)
	}
	return g
}

func (g *gangRestarts) restartsOn(t kubeflowv1.GangRestartTrigger) bool {
	return g != nil && slices.Contains(g.triggers, t)
}

// backoff is the wait before the n-th restart's gang is created:
// initial * 2^(n-1), at most the cap.
func (g *gangRestarts) backoff(n int32) time.Duration {
	d := g.backoffInitial
	for i := int32(1); i < n && d < g.backoffMax; i++ {
		d *= 2
	}
	return min(d, g.backoffMax)
}

// gangTrigger is an event that restarts the gang, found by a pass.
type gangTrigger struct {
	trigger  kubeflowv1.GangRestartTrigger
	member   string
	exitCode *int32
	message  string
}

// gangStatus returns the job's gang status, creating it.
func gangStatus(job Job) *kubeflowv1.GangStatus {
	st := job.GetJobStatus()
	if st.Gang == nil {
		st.Gang = &kubeflowv1.GangStatus{}
	}
	return st.Gang
}

// currentGeneration is the generation the job's pods must carry.
func currentGeneration(job Job) int32 {
	if g := job.GetJobStatus().Gang; g != nil {
		return g.Generation
	}
	return 0
}

// podGeneration is the generation a pod carries. Only gang-restarted jobs
// label their pods (the others keep upstream's labels exactly); a pod
// without the label, from before the job chose gang restarts, belongs to
// the first generation.
func podGeneration(pod *corev1.Pod) int32 {
	n, err := strconv.ParseInt(pod.Labels[kubeflowv1.GangGenerationLabel], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// reconcileGangRestart carries out a decided restart: it tears down the
// pods of older generations and holds the pass until they are gone and the
// backoff has passed. It reports whether the pass must stop here. When it
// lets the pass go on, s.pods holds only the current generation.
func (r *Reconciler) reconcileGangRestart(ctx context.Context, s *scope) (bool, error) {
	gen := currentGeneration(s.job)
	var stale, current []*corev1.Pod
	for _, p := range s.pods {
		if podGeneration(p) == gen {
			current = append(current, p)
		} else {
			stale = append(stale, p)
		}
	}
	if len(stale) > 0 {
		// Their loss is stored: it is why they are of an older generation.
		s.judged = stale
		return true, r.tearDown(ctx, s, stale)
	}
	s.pods = current
	last := s.status().Gang
	if last == nil || last.LastRestart == nil || len(current) > 0 {
		return false, nil
	}
	ready := last.LastRestart.Time.Add(s.gangRestart.backoff(last.Restarts + last.Disruptions))
	if wait := ready.Sub(s.now.Time); wait > 0 {
		r.markGangRestarting(s, fmt.Sprintf("the next generation is created at %s (backoff)", ready.UTC().Format(time.RFC3339)))
		s.requeueAt(wait)
		return true, nil
	}
	return false, nil
}

// markGangRestarting shows on a gang-scheduled job that its gang is
// between generations, rather than the old gang's last verdict.
func (r *Reconciler) markGangRestarting(s *scope, what string) {
	if findCondition(s.status(), ConditionGangScheduled) == nil {
		return
	}
	msg := fmt.Sprintf("%s %s: the gang is restarting; %s.", r.fw.GroupVersionKind().Kind, s.job.GetName(), what)
	setCondition(s.status(), ConditionGangScheduled, corev1.ConditionFalse, ReasonGangRestarting, msg, s.now)
}

// tearDown deletes the pods of older generations and the gang's PodGroup.
// A pod stuck Terminating on a lost node is force-deleted once its own
// grace period is over: no kubelet is left to confirm its end, and the
// next generation must not start beside it.
func (r *Reconciler) tearDown(ctx context.Context, s *scope, stale []*corev1.Pod) error {
	if err := r.deleteGang(ctx, s, nil); err != nil {
		return err
	}
	r.markGangRestarting(s, fmt.Sprintf("%d pods of the previous generation are being deleted", len(stale)))
	for _, p := range stale {
		if !isTerminating(p) {
			if err := r.deletePod(ctx, s, p); err != nil {
				return err
			}
			continue
		}
		node, err := r.nodeOf(ctx, p)
		if err != nil {
			return err
		}
		lost, wait := node.lostBy(s.now.Time, s.gangRestart.nodeLostTimeout)
		if !lost {
			s.requeueAt(wait)
			continue
		}
		if due := p.DeletionTimestamp.Sub(s.now.Time); due > 0 {
			s.requeueAt(due)
			continue
		}
		if err := r.forceDeletePod(ctx, s, p, fmt.Sprintf("it stayed Terminating on lost node %s past its grace period", p.Spec.NodeName)); err != nil {
			return err
		}
	}
	return nil
}

// forceDeletePod removes a pod without waiting for its kubelet, saying why
// in a Warning event.
func (r *Reconciler) forceDeletePod(ctx context.Context, s *scope, pod *corev1.Pod, why string) error {
	r.expect.expectDelete(s.key, pod.UID, s.now.Time)
	err := r.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case err != nil:
		r.expect.deleteFailed(s.key, pod.UID)
		return fmt.Errorf("force-delete pod %s: %w", pod.Name, err)
	}
	r.event(s.job, corev1.EventTypeWarning, "ForceDeletedPod", fmt.Sprintf("Force-deleted pod %s: %s.", pod.Name, why))
	return r.release(ctx, pod)
}

// nodeHealth is what the engine knows of a member's node.
type nodeHealth struct {
	// gone: the node object no longer exists.
	gone bool
	// notReadySince is when the node stopped being Ready (NotReady or
	// Unknown: its kubelet stopped posting status); nil while it is Ready.
	notReadySince *time.Time
}

// nodeOf reads the node a pod is bound to; an unbound pod has a healthy
// node as far as gangs go.
//
// A node the cache lacks is asked of the API server before it counts as
// gone, since a gone node restarts the gang at once: the caches of pods
// and of nodes are fed by separate watches, so a member can be seen bound
// to a node the node cache has not seen yet (one just added and used at
// once). Only a cache miss costs that read.
func (r *Reconciler) nodeOf(ctx context.Context, pod *corev1.Pod) (nodeHealth, error) {
	if pod.Spec.NodeName == "" {
		return nodeHealth{}, nil
	}
	node := &corev1.Node{}
	key := client.ObjectKey{Name: pod.Spec.NodeName}
	err := r.client.Get(ctx, key, node)
	if apierrors.IsNotFound(err) && r.apiReader != nil {
		err = r.apiReader.Get(ctx, key, node)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nodeHealth{gone: true}, nil
		}
		return nodeHealth{}, fmt.Errorf("get node %s: %w", pod.Spec.NodeName, err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return nodeHealth{notReadySince: &c.LastTransitionTime.Time}, nil
		}
	}
	// A node that never reported readiness has no kubelet yet; nothing on
	// it is lost.
	return nodeHealth{}, nil
}

// lostBy reports whether the node has been gone or not Ready for the
// timeout, and otherwise how long until it would be (0: it is Ready).
func (n nodeHealth) lostBy(now time.Time, timeout time.Duration) (bool, time.Duration) {
	switch {
	case n.gone:
		return true, 0
	case n.notReadySince == nil:
		return false, 0
	}
	wait := n.notReadySince.Add(timeout).Sub(now)
	return wait <= 0, wait
}

// isDisruption reports whether a failed pod was put out by something
// other than its own program: evicted by the kubelet or the eviction API,
// preempted, or shut down with its node.
func isDisruption(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	switch pod.Status.Reason {
	case "Evicted", "Preempting", "Preempted", "Shutdown", "NodeShutdown", "Terminated", "NodeLost", "UnexpectedAdmissionError":
		return true
	}
	return false
}

// memberBroke classifies what happened to a member of the current
// generation, from the pod alone or with its node. It returns nil when
// nothing did, or when the event is not one the gang restarts on (the
// caller then treats the member as without a gang policy).
func (r *Reconciler) memberBroke(ctx context.Context, s *scope, pod *corev1.Pod, retryable bool, why string) (*gangTrigger, error) {
	g := s.gangRestart
	node, err := r.nodeOf(ctx, pod)
	if err != nil {
		return nil, err
	}
	lost, wait := node.lostBy(s.now.Time, g.nodeLostTimeout)
	// A member being deleted on a node that does not answer is stuck
	// there: no kubelet confirms its end, and it will not come back.
	stuck := isTerminating(pod) && node.notReadySince != nil
	// A member whose own program ended, failed or succeeded, ended by
	// itself, whatever became of its node since: the node can go between
	// the end and this look (an operator failing over), and the end came
	// first. A failure is judged below as the program's; a success lost
	// nothing with its node.
	endedOnItsOwn := pod.Status.Phase == corev1.PodSucceeded || (pod.Status.Phase == corev1.PodFailed && !isDisruption(pod))
	if (lost || stuck) && !endedOnItsOwn && g.restartsOn(kubeflowv1.GangRestartOnNodeLost) {
		return &gangTrigger{trigger: kubeflowv1.GangRestartOnNodeLost, member: pod.Name,
			message: fmt.Sprintf("pod %s: %s", pod.Name, node.describe(pod.Spec.NodeName))}, nil
	}
	if wait > 0 {
		s.requeueAt(wait)
	}
	switch {
	case isTerminating(pod) && isActive(pod):
		// Deleted by someone else: the engine deletes only members that
		// failed, and those of older generations.
		if g.restartsOn(kubeflowv1.GangRestartOnMemberEvicted) {
			return &gangTrigger{trigger: kubeflowv1.GangRestartOnMemberEvicted, member: pod.Name,
				message: fmt.Sprintf("pod %s was deleted while it ran (%s)", pod.Name, podFailureReason(pod))}, nil
		}
	case pod.Status.Phase == corev1.PodFailed && isDisruption(pod):
		if g.restartsOn(kubeflowv1.GangRestartOnMemberEvicted) {
			return &gangTrigger{trigger: kubeflowv1.GangRestartOnMemberEvicted, member: pod.Name,
				message: fmt.Sprintf("pod %s was evicted or preempted (%s)", pod.Name, podFailureReason(pod))}, nil
		}
	case pod.Status.Phase == corev1.PodFailed && retryable:
		if g.restartsOn(kubeflowv1.GangRestartOnMemberFailed) {
			t := &gangTrigger{trigger: kubeflowv1.GangRestartOnMemberFailed, member: pod.Name, message: why}
			if code, ok := exitCode(pod, r.fw.MainContainerName(s.job)); ok {
				t.exitCode = &code
			}
			return t, nil
		}
	}
	return nil, nil
}

// watchPartialGang keeps the watchdog's clock: the current generation
// starts when minMember members run, and from then on a gang with fewer
// running for partialGangTimeoutSeconds is broken.
func (r *Reconciler) watchPartialGang(s *scope) *gangTrigger {
	gs := gangStatus(s.job)
	minMember := GangSpec(r.fw, s.job).MinMember
	var placed int32
	for _, p := range s.pods {
		if isLive(p) && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
			placed++
		}
	}
	switch {
	case placed >= minMember:
		if gs.StartTime == nil {
			gs.StartTime = s.now.DeepCopy()
		}
		gs.PartialSince = nil
		return nil
	case gs.StartTime == nil:
		return nil
	case gs.PartialSince == nil:
		gs.PartialSince = s.now.DeepCopy()
	}
	if !s.gangRestart.restartsOn(kubeflowv1.GangRestartOnGangBroken) {
		return nil
	}
	if wait := gs.PartialSince.Add(s.gangRestart.partialTimeout).Sub(s.now.Time); wait > 0 {
		s.requeueAt(wait)
		return nil
	}
	return &gangTrigger{trigger: kubeflowv1.GangRestartOnGangBroken, message: fmt.Sprintf(
		"%d of minMember %d members have run for %s since %s", placed, minMember, s.gangRestart.partialTimeout, gs.PartialSince.UTC().Format(time.RFC3339))}
}

// restartGang decides a restart: it writes the next generation and the
// counts, or fails the job when the budget the trigger spends is used up.
// Nothing is deleted in this pass; see the top of this file.
func (r *Reconciler) restartGang(s *scope, t *gangTrigger) {
	kind := r.fw.GroupVersionKind().Kind
	g, gs := s.gangRestart, gangStatus(s.job)
	s.recreate = nil
	if t.trigger.IsDisruption() {
		if g.maxDisruptions != nil && gs.Disruptions >= *g.maxDisruptions {
			r.failJob(s, ReasonMaxDisruptionsExceeded, fmt.Sprintf(
				"%s %s has failed: %d gang restarts after disruptions reached maxDisruptions (%d); last: %s: %s",
				kind, s.job.GetName(), gs.Disruptions, *g.maxDisruptions, t.trigger, t.message))
			return
		}
		gs.Disruptions++
	} else {
		if gs.Restarts >= g.maxRestarts {
			r.failJob(s, ReasonMaxRestartsExceeded, fmt.Sprintf(
				"%s %s has failed: %d gang restarts after failures reached maxRestarts (%d); last: %s",
				kind, s.job.GetName(), gs.Restarts, g.maxRestarts, t.message))
			return
		}
		gs.Restarts++
	}
	gs.Generation++
	gs.StartTime, gs.PartialSince = nil, nil
	gs.LastRestart = &kubeflowv1.GangRestart{
		Time: s.now, Trigger: t.trigger, Member: t.member, ExitCode: t.exitCode, Message: t.message,
	}
	backoff := g.backoff(gs.Restarts + gs.Disruptions)
	msg := fmt.Sprintf("%s %s: restarting the whole gang as generation %d (%d/%d restarts after failures, %d disruptions): %s; the next gang starts in %s, once every pod is gone.",
		kind, s.job.GetName(), gs.Generation, gs.Restarts, g.maxRestarts, gs.Disruptions, t.message, backoff)
	setCondition(s.status(), ConditionRestarting, corev1.ConditionTrue, string(t.trigger), msg, s.now)
	r.event(s.job, corev1.EventTypeWarning, "GangRestart", msg)
	s.requeueAt(time.Nanosecond)
}

// stampGeneration labels a new pod with the job's current generation.
func stampGeneration(job Job, pod *corev1.Pod) {
	pod.Labels[kubeflowv1.GangGenerationLabel] = strconv.Itoa(int(currentGeneration(job)))
}

// nodeReady reports whether a node is Ready, for the watch that wakes the
// jobs with members on a node whose readiness changed.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gangMemberEvent asks whether what happened to a member of the current
// generation restarts the gang. A failed member is retryable when its
// replica restartPolicy would have replaced it alone.
func (r *Reconciler) gangMemberEvent(ctx context.Context, s *scope, spec *kubeflowv1.ReplicaSpec, pod *corev1.Pod) (*gangTrigger, error) {
	retryable, why := false, ""
	if pod.Status.Phase == corev1.PodFailed {
		var action failureAction
		action, why = onPodFailed(spec.RestartPolicy, pod, r.fw.MainContainerName(s.job))
		retryable = action == recreatePod
	}
	return r.memberBroke(ctx, s, pod, retryable, why)
}

func (n nodeHealth) describe(name string) string {
	if n.gone {
		return fmt.Sprintf("node %s is gone", name)
	}
	return fmt.Sprintf("node %s has not been Ready since %s", name, n.notReadySince.UTC().Format(time.RFC3339))
}
