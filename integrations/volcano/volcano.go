// Package volcano is the gang backend of the Volcano scheduler: a
// scheduling.volcano.sh/v1beta1 PodGroup per job and pods for the "volcano"
// scheduler, as Kubeflow's training-operator makes them.
package volcano

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/troupe-ml/troupe/integrations"
)

// Name selects this backend on --gang-scheduler-name.
const Name = "volcano"

// SchedulerName is the name Volcano's scheduler serves.
const SchedulerName = "volcano"

// Backend implements integrations.Backend for Volcano.
type Backend struct {
	// HyperNodes, when set, are the HyperNodes the operator generates from
	// a Topology: jobs placed by that Topology get their Pack rules
	// translated to Volcano's networkTopology (topology.go). Without it
	// the backend keeps no topology rule.
	HyperNodes HyperNodeSource
}

var (
	_ integrations.Backend            = Backend{}
	_ integrations.TopologyPlacer     = Backend{}
	_ integrations.RoleMinimumsKeeper = Backend{}
	_ integrations.TopologyReader     = Backend{}
)

// KeepsRoleMinimums: the PodGroup has minTaskMember.
func (Backend) KeepsRoleMinimums() {}

func (Backend) Name() string                { return Name }
func (Backend) SchedulerName() string       { return SchedulerName }
func (Backend) PodGroupType() client.Object { return &volcanov1beta1.PodGroup{} }

func (Backend) CheckInstalled(mapper meta.RESTMapper) error {
	return integrations.CheckServed(mapper, volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup"),
		"Volcano v1.14 (https://volcano.sh/en/docs/installation/; its CRD is config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml in volcano.sh/volcano)")
}

// SyncPodGroup creates the job's PodGroup or brings the fields Troupe owns
// in line. An unset queue is left to Volcano: its CRD defaults it to
// "default" and its admission webhook may choose the namespace's queue, and
// Troupe must not fight either. Volcano's PodGroup has no
// scheduleTimeoutSeconds. networkTopology and subGroupPolicy are Troupe's:
// they say what Volcano keeps of the job's topology policy, and nothing
// when it has none.
func (b Backend) SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error) {
	var minResources *corev1.ResourceList
	if len(spec.MinResources) > 0 {
		minResources = &spec.MinResources
	}
	place, err := b.placement(ctx, spec)
	if err != nil {
		return integrations.GangState{}, err
	}
	pg := &volcanov1beta1.PodGroup{}
	err = integrations.SyncPodGroup(ctx, c, owner, ref, pg, func() {
		pg.Spec.MinMember = spec.MinMember
		pg.Spec.MinTaskMember = spec.MinTaskMember
		pg.Spec.MinResources = minResources
		pg.Spec.PriorityClassName = spec.PriorityClassName
		if spec.Queue != "" {
			pg.Spec.Queue = spec.Queue
		}
		pg.Spec.NetworkTopology = place.NetworkTopology
		pg.Spec.SubGroupPolicy = place.SubGroupPolicy
	})
	if err != nil {
		return integrations.GangState{}, err
	}
	return state(pg), nil
}

// hyperNodeRetry is how long a job whose required rule waits for its
// HyperNodes waits before the operator looks again: the job is not
// requeued by the HyperNodes' own changes.
const hyperNodeRetry = 10 * time.Second

// placement is what Volcano keeps of spec's topology policy; it is an
// integrations.WaitError while a required rule's HyperNodes are not
// generated yet, so that no PodGroup lets Volcano place the job before.
func (b Backend) placement(ctx context.Context, spec integrations.GangSpec) (placement, error) {
	t := spec.Topology
	if t == nil || b.HyperNodes == nil || b.HyperNodes.Topology() != topologyName(t) {
		return placement{}, nil
	}
	tiers, _, generated, err := b.HyperNodes.Tiers(ctx)
	if err != nil && !errors.Is(err, ErrNoTopology) {
		return placement{}, err
	}
	missing := err != nil
	place, err := placementOf(spec, tiers, generated)
	switch {
	case err != nil && missing:
		return placement{}, &integrations.WaitError{RetryAfter: hyperNodeRetry,
			Message: fmt.Sprintf("runPolicy.gangPolicy.topology: a required rule waits for Topology %q, which does not exist", topologyName(t))}
	case err != nil:
		return placement{}, &integrations.WaitError{RetryAfter: hyperNodeRetry, Message: "runPolicy.gangPolicy.topology: " + err.Error()}
	}
	return place, nil
}

// state reads Volcano's verdict as Volcano's own job controller does.
//
// Volcano's enqueue action moves an admitted PodGroup from Pending to
// Inqueue before its pods exist, which is when a job controller may create
// them; Running, Unknown (some members run, others cannot be placed) and
// Completed come later. A PodGroup that loses members goes back to Pending
// and is admitted again.
//
// Volcano's gang plugin keeps one condition per type and never sets one to
// False: after a gang is placed, an old Unschedulable=True stays beside a
// newer Scheduled=True. The latest true condition is the verdict.
func state(pg *volcanov1beta1.PodGroup) integrations.GangState {
	phase := pg.Status.Phase
	s := integrations.GangState{
		Phase:    string(phase),
		Admitted: phase != "" && phase != volcanov1beta1.PodGroupPending,
	}
	var latest *volcanov1beta1.PodGroupCondition
	for i := range pg.Status.Conditions {
		c := &pg.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		// On a tie (timestamps have one-second resolution) Scheduled wins:
		// a stale complaint is worse than none.
		if latest == nil || c.LastTransitionTime.After(latest.LastTransitionTime.Time) ||
			(c.LastTransitionTime.Equal(&latest.LastTransitionTime) && c.Type == volcanov1beta1.PodGroupScheduled) {
			latest = c
		}
	}
	if latest != nil && latest.Type == volcanov1beta1.PodGroupUnschedulableType &&
		phase != volcanov1beta1.PodGroupRunning && phase != volcanov1beta1.PodGroupCompleted {
		s.Unschedulable = latest.Message
	}
	return s
}

func (Backend) DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error {
	return integrations.DeletePodGroup(ctx, c, owner, &volcanov1beta1.PodGroup{})
}

// DecoratePod sets Volcano's group-name and task-spec annotations, the
// latter on every pod of every role (the MPI launcher too): Volcano counts
// minTaskMember by it.
func (Backend) DecoratePod(pod *corev1.Pod, group, role string) {
	integrations.Annotate(pod, group, role)
	integrations.SetSchedulerName(pod, SchedulerName)
}
