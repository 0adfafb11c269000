package kubectltroupe

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations"
)

// jobReport is what `kubectl troupe status` says of one job: everything
// in it comes from the API server's objects, worked out as the operator
// works it out (engine.GangSpec for the minimums).
type jobReport struct {
	Kind, Namespace, Name string
	// State is status.state (GangPending while the gang waits).
	State   kubeflowv1.JobState
	Age     time.Duration
	Backend string
	// PodGroup is the backend's PodGroup phase, empty without one.
	PodGroup   string
	Queue      string
	MinMember  int32
	Generation int32
	// Restarts and Disruptions are the whole-gang restarts the job caused
	// and those it did not.
	Restarts, Disruptions int32
	// Waiting is the GangScheduled condition's message while it is false.
	Waiting string
	Roles   []roleReport
}

// roleReport is one replica type of a job.
type roleReport struct {
	Role string
	// Replicas is the spec's count; Min the gang's minimum of the role.
	Replicas, Min                       int32
	Running, Pending, Succeeded, Failed int32
	// Why says why the role's pending members are not running, from the
	// pods: scheduling gates, the scheduler's verdict, or no pods yet.
	Why string
}

// noPodsYet is why a role without pods waits: the operator creates a
// gang's pods once its backend admits the gang.
const noPodsYet = "no pods yet"

// notPlacedYet is why pending members wait that no scheduler has given a
// verdict on yet.
const notPlacedYet = "not placed yet"

// gangNotPlaced is why pending members wait whose gang waits: the job's
// GangScheduled condition says why.
const gangNotPlaced = "the gang waits (see Waiting)"

// describe builds a job's report from the job (defaulted here), its pods
// and the phase of its PodGroup ("" when it has none).
func describe(fw engine.Framework, job engine.Job, pods []corev1.Pod, backend, podGroupPhase string, now time.Time) jobReport {
	job = job.DeepCopyObject().(engine.Job)
	job.Default()
	status := job.GetJobStatus()
	spec := engine.GangSpec(fw, job)
	r := jobReport{
		Kind:      fw.GroupVersionKind().Kind,
		Namespace: job.GetNamespace(),
		Name:      job.GetName(),
		State:     status.State,
		Age:       now.Sub(job.GetCreationTimestamp().Time),
		Backend:   backend,
		PodGroup:  podGroupPhase,
		Queue:     spec.Queue,
		MinMember: spec.MinMember,
	}
	if g := status.Gang; g != nil {
		r.Generation, r.Restarts, r.Disruptions = g.Generation, g.Restarts, g.Disruptions
	}
	for _, c := range status.Conditions {
		if c.Type == kubeflowv1.JobGangScheduled && c.Status == corev1.ConditionFalse {
			r.Waiting = c.Message
		}
	}
	byRole := map[string][]corev1.Pod{}
	for _, p := range pods {
		role := p.Labels[kubeflowv1.ReplicaTypeLabel]
		byRole[role] = append(byRole[role], p)
	}
	for _, rtype := range engine.OrderedReplicaTypes(fw, job) {
		role := integrations.RoleOf(string(rtype))
		rr := roleReport{Role: string(rtype), Replicas: *job.ReplicaSpecs()[rtype].Replicas, Min: spec.MinTaskMember[role]}
		countMembers(&rr, byRole[role])
		if active(r.State) && rr.Running+rr.Succeeded < rr.Replicas {
			rr.Why = whyPending(byRole[role])
			if rr.Why == notPlacedYet && r.Waiting != "" {
				// A gang scheduler's verdict is on the gang, not its pods.
				rr.Why = gangNotPlaced
			}
		}
		r.Roles = append(r.Roles, rr)
	}
	return r
}

func countMembers(rr *roleReport, pods []corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			rr.Running++
		case corev1.PodSucceeded:
			rr.Succeeded++
		case corev1.PodFailed:
			rr.Failed++
		default:
			rr.Pending++
		}
	}
}

// whyPending explains a role's members that do not run: the scheduling
// gates they wait for, else the latest verdict of a scheduler on one of
// them (PodScheduled False), else that they are bound and starting, not
// placed yet, or that there are none yet; nothing when none is pending (a failed member
// shows in its own column while its controller replaces it).
func whyPending(pods []corev1.Pod) string {
	var gates []string
	var verdict *corev1.PodCondition
	var pending, starting int
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
			continue
		}
		pending++
		for _, g := range p.Spec.SchedulingGates {
			if !slices.Contains(gates, g.Name) {
				gates = append(gates, g.Name)
			}
		}
		if p.Spec.NodeName != "" {
			starting++
		}
		for j := range p.Status.Conditions {
			c := &p.Status.Conditions[j]
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
				(verdict == nil || c.LastTransitionTime.After(verdict.LastTransitionTime.Time)) {
				verdict = c
			}
		}
	}
	switch {
	case len(gates) > 0:
		slices.Sort(gates)
		return "waiting for scheduling gates: " + strings.Join(gates, ", ")
	case verdict != nil:
		return verdict.Message
	case starting > 0:
		return fmt.Sprintf("%d bound, starting", starting)
	case pending > 0:
		return notPlacedYet
	case len(pods) == 0:
		return noPodsYet
	}
	return ""
}

// active reports whether a job in this state should have its members run.
func active(state kubeflowv1.JobState) bool {
	switch state {
	case kubeflowv1.JobStateSucceeded, kubeflowv1.JobStateFailed, kubeflowv1.JobStateSuspended:
		return false
	}
	return true
}
