// Package troupe is the gang backend of Troupe's own scheduler: a
// scheduling.troupe.dev PodGroup per job and pods for troupe-scheduler.
package troupe

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

var _ integrations.Backend = Backend{}

func (Backend) Name() string                { return Name }
func (Backend) SchedulerName() string       { return SchedulerName }
func (Backend) PodGroupType() client.Object { return &schedulingv1alpha1.PodGroup{} }

func (Backend) CheckInstalled(mapper meta.RESTMapper) error {
	gk := schedulingv1alpha1.GroupVersion.WithKind("PodGroup").GroupKind()
	if _, err := mapper.RESTMapping(gk, schedulingv1alpha1.GroupVersion.Version); err != nil {
		return fmt.Errorf("--gang-scheduler-name=%s needs the %s CRD: install config/crd/bases/scheduling.troupe.dev_podgroups.yaml (or the Helm chart): %w", Name, gk, err)
	}
	return nil
}

// SyncPodGroup creates the job's PodGroup or brings its spec in line. The
// status is the scheduler's; the backend only reads it.
func (Backend) SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error) {
	want := schedulingv1alpha1.PodGroupSpec{
		MinMember:              spec.MinMember,
		MinTaskMember:          spec.MinTaskMember,
		MinResources:           spec.MinResources,
		Queue:                  spec.Queue,
		PriorityClassName:      spec.PriorityClassName,
		ScheduleTimeoutSeconds: spec.ScheduleTimeoutSeconds,
	}
	if want.Queue == "" {
		want.Queue = schedulingv1alpha1.DefaultQueueName
	}
	pg := &schedulingv1alpha1.PodGroup{}
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: owner.GetName()}, pg)
	switch {
	case apierrors.IsNotFound(err):
		pg = &schedulingv1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{
				Name: owner.GetName(), Namespace: owner.GetNamespace(),
				OwnerReferences: []metav1.OwnerReference{ref},
			},
			Spec: want,
		}
		if err := c.Create(ctx, pg); err != nil {
			return integrations.GangState{}, fmt.Errorf("create PodGroup %s: %w", owner.GetName(), err)
		}
		return state(pg), nil
	case err != nil:
		return integrations.GangState{}, err
	}
	if !metav1.IsControlledBy(pg, owner) {
		return integrations.GangState{}, fmt.Errorf("PodGroup %s/%s exists and is not controlled by this job", pg.Namespace, pg.Name)
	}
	if !apiequality.Semantic.DeepEqual(pg.Spec, want) {
		pg.Spec = want
		if err := c.Update(ctx, pg); err != nil {
			return integrations.GangState{}, fmt.Errorf("update PodGroup %s: %w", pg.Name, err)
		}
	}
	return state(pg), nil
}

func state(pg *schedulingv1alpha1.PodGroup) integrations.GangState {
	s := integrations.GangState{Phase: string(pg.Status.Phase), Admitted: true}
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable); c != nil && c.Status == metav1.ConditionTrue {
		s.Unschedulable = c.Message
	}
	return s
}

func (Backend) DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error {
	pg := &schedulingv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: owner.GetName(), Namespace: owner.GetNamespace()}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(pg, owner) {
		return nil
	}
	uid := pg.UID
	return client.IgnoreNotFound(c.Delete(ctx, pg, client.Preconditions{UID: &uid}))
}

// DecoratePod sends the pod to troupe-scheduler with its group and role.
// A schedulerName the user chose is left alone (the engine warns).
func (Backend) DecoratePod(pod *corev1.Pod, group, role string) {
	integrations.Annotate(pod, group, role)
	if pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName {
		pod.Spec.SchedulerName = SchedulerName
	}
}
