package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/integrations"
)

// Elastic gangs under a Gang restart policy.
//
// An elastic job (ElasticFramework) runs with anything between its
// minimum and all of its members, so a member above the minimum that
// breaks does not stop the training: torchrun's rendezvous goes on with
// the rest and takes the replacement in when it comes. The gang is
// restarted whole only when the members it keeps fall below a minimum
// (the gang's minMember, or a role's minTaskMember), or when a member of
// a role that is not elastic (the master) breaks.

// ReasonElasticMemberReplaced (an event): a member above an elastic
// gang's minimum broke and is replaced alone.
const ReasonElasticMemberReplaced = "ElasticMemberReplaced"

// memberBreak is a member of the current generation whose fate would
// restart the gang (gangMemberEvent).
type memberBreak struct {
	rtype   kubeflowv1.ReplicaType
	index   int
	pod     *corev1.Pod
	trigger *gangTrigger
}

// gangBreaks is what a pass found broken in the current generation.
type gangBreaks struct {
	// byPod holds the trigger of each broken member, by pod name.
	byPod map[string]*gangTrigger
	// first is the first break in replica order: the one a restart names.
	first *gangTrigger
	// absorbed: the job is elastic and keeps its minimums without every
	// broken member, so each is replaced alone and the gang runs on.
	absorbed bool
	// kept and minMember describe the gang after the breaks, for the
	// events that say so.
	kept, minMember int32
}

// findGangBreaks asks, for every member of the current generation in
// replica order, whether what happened to it restarts the gang, and
// whether an elastic gang absorbs all of it.
func (r *Reconciler) findGangBreaks(ctx context.Context, s *scope, podsByName map[string]*corev1.Pod) (gangBreaks, error) {
	out := gangBreaks{byPod: map[string]*gangTrigger{}}
	var breaks []memberBreak
	kept := map[kubeflowv1.ReplicaType]int32{}
	for _, rtype := range OrderedReplicaTypes(r.fw, s.job) {
		spec := s.job.ReplicaSpecs()[rtype]
		for index := range int(*spec.Replicas) {
			pod := podsByName[podName(r.fw, s.job, rtype, index)]
			if pod == nil {
				continue
			}
			t, err := r.gangMemberEvent(ctx, s, spec, pod)
			if err != nil {
				return out, err
			}
			if t == nil {
				if isLive(pod) && (pod.Spec.NodeName != "" || pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded) {
					kept[rtype]++
				}
				continue
			}
			out.byPod[pod.Name] = t
			breaks = append(breaks, memberBreak{rtype: rtype, index: index, pod: pod, trigger: t})
			if out.first == nil {
				out.first = t
			}
		}
	}
	gang := GangSpec(r.fw, s.job)
	out.minMember = gang.MinMember
	for _, n := range kept {
		out.kept += n
	}
	out.absorbed = len(breaks) > 0 && out.kept >= gang.MinMember && r.elasticAbsorbs(s.job, gang, kept, breaks)
	return out, nil
}

// elasticAbsorbs reports whether the gang, which keeps its minMember,
// keeps its other minimums without the broken members: every one an
// expendable member of a role that is elastic in this job, each such role
// still holding its minTaskMember, counting the members bound to a node,
// running or done.
func (r *Reconciler) elasticAbsorbs(job Job, gang integrations.GangSpec, kept map[kubeflowv1.ReplicaType]int32, breaks []memberBreak) bool {
	e, ok := r.fw.(ElasticFramework)
	if !ok {
		return false
	}
	for _, b := range breaks {
		if elasticMin(r.fw, job, b.rtype) == nil || !e.Expendable(job, b.rtype, b.index) {
			return false
		}
		if kept[b.rtype] < gang.MinTaskMember[integrations.RoleOf(string(b.rtype))] {
			return false
		}
	}
	return true
}

// replaceElasticMember handles a broken member the gang absorbs that has
// not failed: one on a lost node is force-deleted (no kubelet will
// confirm its end), so that the engine creates it again, placed by the
// backend like any member above the minimum; one deleted by someone else
// is left to go, and is created again once gone. A failed one is
// recreated by the pass, as a restart policy would.
func (r *Reconciler) replaceElasticMember(ctx context.Context, s *scope, b *gangBreaks, pod *corev1.Pod) error {
	t := b.byPod[pod.Name]
	if t.trigger != kubeflowv1.GangRestartOnNodeLost {
		return nil
	}
	r.elasticEvent(s, b, pod, t)
	return r.forceDeletePod(ctx, s, pod, "its node "+pod.Spec.NodeName+" is lost, and the elastic gang replaces it alone")
}

// elasticEvent says that a member above the minimum is replaced alone,
// and why the gang is not restarted.
func (r *Reconciler) elasticEvent(s *scope, b *gangBreaks, pod *corev1.Pod, t *gangTrigger) {
	r.event(s.job, corev1.EventTypeNormal, ReasonElasticMemberReplaced, fmt.Sprintf(
		"%s (%s); the elastic gang keeps %d members of minMember %d, so pod %s is replaced alone and the gang is not restarted.",
		t.message, t.trigger, b.kept, b.minMember, pod.Name))
}

// elasticMembers is how many members of the job are above its elastic
// minimums: those the gang does not wait for.
func elasticMembers(fw Framework, job Job) int32 {
	var n int32
	for rtype, spec := range job.ReplicaSpecs() {
		if m := elasticMin(fw, job, rtype); m != nil && *m < *spec.Replicas {
			n += *spec.Replicas - *m
		}
	}
	return n
}
