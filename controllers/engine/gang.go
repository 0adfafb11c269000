package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/integrations"
)

// ConditionGangScheduled says whether the job's gang is placed: False,
// with a reason below and the backend's own words, until minMember pods run
// (or have succeeded), then True. Only gang-scheduled jobs have it.
const ConditionGangScheduled = kubeflowv1.JobGangScheduled

// Reasons of the GangScheduled condition.
const (
	// ReasonGangPending: the backend has not admitted the gang yet
	// (Volcano's Pending); the engine creates no pods of a new gang before
	// it does.
	ReasonGangPending = "GangPending"
	// ReasonGangUnschedulable: the scheduler tried and could not place the
	// gang; the message is its explanation.
	ReasonGangUnschedulable = "GangUnschedulable"
	// ReasonGangScheduling: admitted, and fewer than minMember pods run.
	ReasonGangScheduling = "GangScheduling"
	// ReasonGangScheduled: minMember pods run.
	ReasonGangScheduled = "GangScheduled"
	// ReasonCustomSchedulerName: a replica chose a scheduler other than
	// the backend's; its pods keep it.
	ReasonCustomSchedulerName = "CustomSchedulerName"
	// ReasonTopologyUnsupported: the gang backend cannot keep a required
	// rule of runPolicy.gangPolicy.topology; no pod is created. It is the
	// GangScheduled reason of such a job even when gang scheduling is off.
	ReasonTopologyUnsupported = "TopologyUnsupported"
	// ReasonRoleMinimumsUnsupported: the gang backend has no minimum per
	// replica type, and its one minimum for the whole gang does not imply
	// those of runPolicy.gangPolicy.minMembers; no pod is created.
	ReasonRoleMinimumsUnsupported = "RoleMinimumsUnsupported"
	// ReasonTopologyIgnored (an event): the backend cannot keep a
	// preferred rule; the gang runs without it.
	ReasonTopologyIgnored = "TopologyIgnored"
)

// GangSpec is the PodGroup contents of a defaulted job, from its replicas
// in the framework's order (master, chief or launcher first): what every
// backend is given, and what kubectl-troupe shows as the gang's minimums.
func GangSpec(fw Framework, job Job) integrations.GangSpec {
	var replicas []integrations.Replica
	for _, rtype := range OrderedReplicaTypes(fw, job) {
		spec := job.ReplicaSpecs()[rtype]
		replicas = append(replicas, integrations.Replica{
			Role:       integrations.RoleOf(string(rtype)),
			Replicas:   *spec.Replicas,
			MinMember:  minMembers(job, rtype),
			ElasticMin: elasticMin(fw, job, rtype),
			Template:   &spec.Template,
		})
	}
	var policy integrations.SchedulingPolicy
	if sp := job.GetRunPolicy().SchedulingPolicy; sp != nil {
		policy = integrations.SchedulingPolicy{
			MinAvailable:           sp.MinAvailable,
			Queue:                  sp.Queue,
			PriorityClass:          sp.PriorityClass,
			ScheduleTimeoutSeconds: sp.ScheduleTimeoutSeconds,
		}
	}
	if gp := job.GetRunPolicy().GangPolicy; gp != nil && gp.Topology != nil {
		policy.Topology = &gp.Topology.TopologyPolicy
		for _, rtype := range gp.Topology.ReplicaTypes {
			policy.TopologyRoles = append(policy.TopologyRoles, integrations.RoleOf(string(rtype)))
		}
	}
	return integrations.ComputeGangSpec(replicas, policy)
}

// syncGang picks the job's backend and keeps its PodGroup in line with the
// job before any pod is created. It reports whether the pass may go on to
// create pods: not before the backend admits the gang (unless the operator
// was told not to wait), and never for a job whose choice of backend is
// invalid, which fails here.
//
// Only a gang without live pods (nor members being deleted that no pass
// judged yet) waits: a new one, or one restarted whole.
// Volcano sends a PodGroup that lost a member back to Pending; holding the
// pass then would leave the running members' failures unhandled and the
// status stale until Volcano admits the gang again.
func (r *Reconciler) syncGang(ctx context.Context, s *scope) (bool, error) {
	backend, err := r.gangs.For(s.job)
	if err != nil {
		var invalid *integrations.SelectionError
		if errors.As(err, &invalid) {
			r.failJob(s, invalid.Reason, invalid.Message)
			return false, nil
		}
		return false, err
	}
	s.gang = backend
	// A job that switched backends leaves no PodGroup behind: Volcano, for
	// one, holds queue capacity for every admitted PodGroup.
	if err := r.deleteGang(ctx, s, backend); err != nil {
		return false, err
	}
	spec := GangSpec(r.fw, s.job)
	// Members being deleted that the operator has not judged yet are the
	// gang's too (member_finalizer.go): a pass that held here would never
	// judge them, and they would never go.
	live := slices.ContainsFunc(s.pods, func(p *corev1.Pod) bool { return isLive(p) || isTracked(p) })
	if r.refuseTopology(s, backend, spec.Topology, live) || r.refuseRoleMinimums(s, backend, spec, live) {
		return false, nil
	}
	if backend == nil {
		return true, nil
	}
	r.warnCustomSchedulerNames(s, backend)
	state, err := backend.SyncPodGroup(ctx, r.client, s.job, *controllerRef(r.fw, s.job), spec)
	var wait *integrations.WaitError
	switch {
	case errors.As(err, &wait):
		// The PodGroup cannot be written yet: the gang is pending, and the
		// job says why.
		state = integrations.GangState{Unschedulable: wait.Message}
		s.requeueAt(wait.RetryAfter)
	case err != nil:
		return false, fmt.Errorf("sync PodGroup: %w", err)
	}
	// A PodGroup not written yet holds the pods even with
	// --wait-for-podgroup-admission=false: they would go to the backend's
	// scheduler with no gang.
	hold := !state.Admitted && (r.waitForAdmission || wait != nil) && !live
	r.setGangScheduled(s, backend, state, spec.MinMember, hold)
	return !hold, nil
}

func isLive(p *corev1.Pod) bool { return !isTerminating(p) }

// setGangScheduled shows the backend's verdict on the job, with a Warning
// event whenever its explanation changes. When the backend gives none, the
// pods' own PodScheduled conditions explain: that is where kube-scheduler
// (and so Coscheduling) writes why a pod does not fit.
func (r *Reconciler) setGangScheduled(s *scope, backend integrations.Backend, state integrations.GangState, minMember int32, hold bool) {
	kind := r.fw.GroupVersionKind().Kind
	var placed int32
	for _, p := range s.pods {
		if isLive(p) && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
			placed++
		}
	}
	status, reason, msg := corev1.ConditionFalse, ReasonGangScheduling, ""
	switch {
	case placed >= minMember:
		status, reason = corev1.ConditionTrue, ReasonGangScheduled
		msg = fmt.Sprintf("%s %s: the gang's minMember (%d) pods run.", kind, s.job.GetName(), minMember)
		if elastic := elasticMembers(r.fw, s.job); elastic > 0 {
			msg += fmt.Sprintf(" Elastic: %d of the %d members above the minimum run.", min(placed-minMember, elastic), elastic)
		}
	case !state.Admitted:
		reason = ReasonGangPending
		// No phase in the message: a new PodGroup turning Pending is no
		// news worth a second event.
		msg = fmt.Sprintf("PodGroup %s: waiting for %s to admit the gang", s.job.GetName(), backend.Name())
		if hold {
			msg += " before creating its pods"
		}
		msg += "."
		if state.Unschedulable != "" {
			msg += " " + backend.Name() + ": " + state.Unschedulable
		}
	case state.Unschedulable != "":
		reason, msg = ReasonGangUnschedulable, state.Unschedulable
	default:
		if why := unschedulablePods(s.pods); why != "" {
			reason, msg = ReasonGangUnschedulable, why
		} else {
			msg = fmt.Sprintf("%s %s: %d of minMember %d pods run; %s is placing the rest.", kind, s.job.GetName(), placed, minMember, backend.SchedulerName())
		}
	}
	old := findCondition(s.status(), ConditionGangScheduled)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != msg
	switch {
	case changed && (reason == ReasonGangPending || reason == ReasonGangUnschedulable):
		r.event(s.job, corev1.EventTypeWarning, reason, msg)
	case changed && status == corev1.ConditionTrue && old != nil && old.Status == corev1.ConditionFalse:
		r.event(s.job, corev1.EventTypeNormal, reason, msg)
	}
	setCondition(s.status(), ConditionGangScheduled, status, reason, msg, s.now)
}

// unschedulablePods explains, per role, why pods are not placed: the
// latest verdict on an unschedulable pod of each role (the first by name
// among equally recent ones), roles sorted. The latest, because a
// coscheduling scheduler marks a gang's first pods "cannot find enough
// sibling pods" while the rest are still being created, and may not try
// them again for minutes, while a later pod carries the real reason.
func unschedulablePods(pods []*corev1.Pod) string {
	byRole := map[string]corev1.PodCondition{}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		role := p.Labels[kubeflowv1.ReplicaTypeLabel]
		if isTerminating(p) || p.Spec.NodeName != "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable || c.Message == "" {
				continue
			}
			if seen, ok := byRole[role]; !ok || seen.LastTransitionTime.Before(&c.LastTransitionTime) {
				byRole[role] = c
			}
		}
	}
	var parts []string
	for _, role := range slices.Sorted(maps.Keys(byRole)) {
		parts = append(parts, role+": "+byRole[role].Message)
	}
	return strings.Join(parts, "; ")
}

// warnCustomSchedulerNames warns, once per job, about replicas that chose
// a scheduler other than the backend's. Their pods keep it (the user may
// run a scheduler that reads the backend's PodGroup), but if it does not,
// the gang is not placed as one, and that deserves saying.
func (r *Reconciler) warnCustomSchedulerNames(s *scope, backend integrations.Backend) {
	var odd []string
	for _, rtype := range OrderedReplicaTypes(r.fw, s.job) {
		name, chosen := integrations.UserSchedulerName(&s.job.ReplicaSpecs()[rtype].Template.Spec)
		if chosen && name != backend.SchedulerName() {
			odd = append(odd, fmt.Sprintf("%s pods use schedulerName %s", rtype, name))
		}
	}
	if len(odd) == 0 {
		return
	}
	r.warnOnce(s, ReasonCustomSchedulerName, fmt.Sprintf(
		"%s, not %s's %s: they are gang-scheduled only if that scheduler honours the %s PodGroup.",
		strings.Join(odd, "; "), backend.Name(), backend.SchedulerName(), backend.Name()))
}

// onceReasons are the warnings given once per job, not once per pass.
var onceReasons = []string{ReasonCustomSchedulerName, ReasonTopologyIgnored, ReasonTopologyUnsupported, ReasonRoleMinimumsUnsupported}

type warningKey struct{ job, reason string }

// warnOnce gives a Warning event of reason once per job (per UID, so a job
// deleted and created again under its name is warned again).
func (r *Reconciler) warnOnce(s *scope, reason, msg string) {
	key := warningKey{job: s.key, reason: reason}
	if uid, warned := r.warned.Load(key); warned && uid == s.job.GetUID() {
		return
	}
	r.warned.Store(key, s.job.GetUID())
	r.event(s.job, corev1.EventTypeWarning, reason, msg)
}

// forgetWarnings drops what warnOnce remembers of a deleted job.
func (r *Reconciler) forgetWarnings(job string) {
	for _, reason := range onceReasons {
		r.warned.Delete(warningKey{job: job, reason: reason})
	}
}

// refuseTopology holds back a job whose gang backend (nil: gang
// scheduling off) cannot keep a required rule of its topology policy: the
// job runs by the rule or not at all, and GangScheduled says why and what
// would keep it. It reports whether it refused. A job with live pods (its
// backend changed under it) is not stopped: nothing running is lost, and
// the refusal is a warning, once. Preferred rules the backend cannot keep
// are a warning, given once per job: the gang runs without them, as a
// preference allows.
func (r *Reconciler) refuseTopology(s *scope, backend integrations.Backend, t *integrations.GangTopology, live bool) bool {
	required, preferred := integrations.UnkeptTopology(backend, t)
	name := integrations.None
	if backend != nil {
		name = backend.Name()
	}
	if len(preferred) > 0 {
		r.warnOnce(s, ReasonTopologyIgnored, integrations.DescribeUnkept(name, preferred)+
			"; these preferred rules are not kept: the gang is placed as if they were not there (see docs/topology.md).")
	}
	if len(required) == 0 {
		return false
	}
	how := fmt.Sprintf("The troupe backend keeps every rule: choose it with the annotation %s=troupe (or --gang-scheduler-name), or make the rules preferred (see docs/topology.md).",
		integrations.GangSchedulerAnnotation)
	if live {
		r.warnOnce(s, ReasonTopologyUnsupported, integrations.DescribeUnkept(name, required)+
			", and the rules are required: the job's running pods are kept, but nothing places them by the rules. "+how)
		return false
	}
	r.holdGang(s, ReasonTopologyUnsupported, integrations.DescribeUnkept(name, required)+", and the rules are required: no pod is created. "+how)
	return true
}

// holdGang shows on the job why its gang backend cannot place it as it
// asks, with a Warning event when that is news. No pod is created.
func (r *Reconciler) holdGang(s *scope, reason, msg string) {
	old := findCondition(s.status(), ConditionGangScheduled)
	if old == nil || old.Reason != reason || old.Message != msg {
		r.event(s.job, corev1.EventTypeWarning, reason, msg)
	}
	setCondition(s.status(), ConditionGangScheduled, corev1.ConditionFalse, reason, msg, s.now)
}

// refuseRoleMinimums holds back a job whose runPolicy.gangPolicy.minMembers
// its backend cannot keep: a backend without per-role minimums keeps one
// minimum for the whole gang, which may start it without the members a
// role needs (its master, say). It reports whether it refused. As with
// topology, a job with live pods is kept running, with a warning, once.
// Minimums the job did not ask for per role (those ComputeGangSpec derives
// from schedulingPolicy.minAvailable) are left to the pooled minimum, as
// every coscheduling scheduler reads minAvailable.
func (r *Reconciler) refuseRoleMinimums(s *scope, backend integrations.Backend, spec integrations.GangSpec, live bool) bool {
	replicas := map[string]int32{}
	var asked []string
	var total int32
	for _, rtype := range OrderedReplicaTypes(r.fw, s.job) {
		role := integrations.RoleOf(string(rtype))
		replicas[role] = *s.job.ReplicaSpecs()[rtype].Replicas
		total += replicas[role]
		if minMembers(s.job, rtype) != nil {
			asked = append(asked, role)
		}
	}
	unkept := integrations.UnkeptRoleMinimums(backend, spec, replicas, asked)
	if len(unkept) == 0 {
		return false
	}
	parts := make([]string, len(unkept))
	for i, u := range unkept {
		parts[i] = fmt.Sprintf("%s %d (it guarantees %d)", u.Role, u.Minimum, u.Guaranteed)
	}
	msg := fmt.Sprintf("runPolicy.gangPolicy.minMembers: the %s gang backend has no minimum per replica type, only minCount %d for the gang's %d pods, which does not keep %s.",
		backend.Name(), spec.MinMember, total, strings.Join(parts, ", "))
	how := fmt.Sprintf(" The troupe and volcano backends keep it: choose one with the annotation %s (or --gang-scheduler-name), or drop minMembers.", integrations.GangSchedulerAnnotation)
	if live {
		r.warnOnce(s, ReasonRoleMinimumsUnsupported, msg+" The job's running pods are kept."+how)
		return false
	}
	r.holdGang(s, ReasonRoleMinimumsUnsupported, msg+" No pod is created."+how)
	return true
}

// deleteGang removes the job's PodGroups of every backend but keep (nil:
// all of them), so that a finished or suspended job holds no queue
// capacity and a job that switched backends leaves nothing behind.
func (r *Reconciler) deleteGang(ctx context.Context, s *scope, keep integrations.Backend) error {
	for _, b := range r.gangs.All() {
		if keep != nil && b.Name() == keep.Name() {
			continue
		}
		if err := b.DeletePodGroup(ctx, r.client, s.job); err != nil {
			return fmt.Errorf("delete %s PodGroup: %w", b.Name(), err)
		}
	}
	return nil
}

// minMembers is the gang policy's minimum for a replica type, nil when it
// sets none. Keys match replica types in any letter case, as upstream
// accepts replica types.
func minMembers(job Job, rtype kubeflowv1.ReplicaType) *int32 {
	gp := job.GetRunPolicy().GangPolicy
	if gp == nil {
		return nil
	}
	for k, v := range gp.MinMembers {
		if strings.EqualFold(string(k), string(rtype)) {
			return &v
		}
	}
	return nil
}
