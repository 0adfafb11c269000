// Package troupe is the gang backend of Troupe's own scheduler: a
// scheduling.troupe.dev PodGroup per job and pods for troupe-scheduler.
package troupe

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
)

// Name selects this backend on --gang-scheduler-name.
const Name = "troupe"

// SchedulerName is the in-repo scheduler's default name.
const SchedulerName = "troupe-scheduler"

// Backend implements integrations.Backend for the in-repo scheduler.
type Backend struct{}

var (
	_ integrations.Backend            = Backend{}
	_ integrations.TopologyPlacer     = Backend{}
	_ integrations.RoleMinimumsKeeper = Backend{}
)

func (Backend) Name() string                { return Name }
func (Backend) SchedulerName() string       { return SchedulerName }
func (Backend) PodGroupType() client.Object { return &schedulingv1alpha1.PodGroup{} }

func (Backend) CheckInstalled(mapper meta.RESTMapper) error {
	return integrations.CheckServed(mapper, schedulingv1alpha1.GroupVersion.WithKind("PodGroup"),
		"config/crd/bases/scheduling.troupe.dev_podgroups.yaml (or the Helm chart)")
}

// SyncPodGroup creates the job's PodGroup or brings its spec in line. The
// whole spec is Troupe's own; the status is the scheduler's, and the
// backend only reads it.
func (Backend) SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error) {
	want := PodGroupSpec(spec)
	pg := &schedulingv1alpha1.PodGroup{}
	if err := integrations.SyncPodGroup(ctx, c, owner, ref, pg, func() { pg.Spec = want }); err != nil {
		return integrations.GangState{}, err
	}
	return state(pg), nil
}

// PodGroupSpec is the spec of the PodGroup the backend writes for a gang.
func PodGroupSpec(spec integrations.GangSpec) schedulingv1alpha1.PodGroupSpec {
	want := schedulingv1alpha1.PodGroupSpec{
		MinMember:              spec.MinMember,
		MinTaskMember:          spec.MinTaskMember,
		MinResources:           spec.MinResources,
		Queue:                  spec.Queue,
		PriorityClassName:      spec.PriorityClassName,
		ScheduleTimeoutSeconds: spec.ScheduleTimeoutSeconds,
	}
	if t := spec.Topology; t != nil {
		want.Topology = &schedulingv1alpha1.PodGroupTopology{TopologyPolicy: t.TopologyPolicy, Roles: t.Roles}
	}
	if want.Queue == "" {
		want.Queue = schedulingv1alpha1.DefaultQueueName
	}
	return want
}

// KeepsRoleMinimums: the PodGroup has minTaskMember.
func (Backend) KeepsRoleMinimums() {}

// UnkeptTopologyRules is empty: troupe-scheduler keeps every rule.
func (Backend) UnkeptTopologyRules(*integrations.GangTopology) []integrations.UnkeptRule { return nil }

func state(pg *schedulingv1alpha1.PodGroup) integrations.GangState {
	s := integrations.GangState{Phase: string(pg.Status.Phase), Admitted: true}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable); c != nil && c.Status == metav1.ConditionTrue {
		s.Unschedulable = c.Message
	}
	return s
}

func (Backend) DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error {
	return integrations.DeletePodGroup(ctx, c, owner, &schedulingv1alpha1.PodGroup{})
}

// DecoratePod sends the pod to troupe-scheduler with its group and role.
func (Backend) DecoratePod(pod *corev1.Pod, group, role string) {
	integrations.Annotate(pod, group, role)
	integrations.SetSchedulerName(pod, SchedulerName)
}
