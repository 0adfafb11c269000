// Package schedulerplugins is the gang backend of scheduler-plugins'
// Coscheduling plugin: a scheduling.x-k8s.io/v1alpha1 PodGroup per job, and
// pods labelled with it for a kube-scheduler that runs the plugin.
package schedulerplugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/troupe-ml/troupe/integrations"
)

// Name selects this backend on --gang-scheduler-name.
const Name = "scheduler-plugins"

// DefaultSchedulerName is the scheduler name of scheduler-plugins' own
// deployment (its as-a-second-scheduler chart's scheduler.name), which
// --gang-scheduler-name=scheduler-plugins means.
const DefaultSchedulerName = "scheduler-plugins-scheduler"

// Backend implements integrations.Backend for Coscheduling.
//
// As Kubeflow's training-operator does, any scheduler that reads
// Coscheduling's PodGroup and label can stand behind it.
type Backend struct {
	// Scheduler is the name the coscheduling-enabled scheduler serves.
	Scheduler string
}

var _ integrations.Backend = Backend{}

func (Backend) Name() string                { return Name }
func (b Backend) SchedulerName() string     { return b.Scheduler }
func (Backend) PodGroupType() client.Object { return &spv1alpha1.PodGroup{} }

func (Backend) CheckInstalled(mapper meta.RESTMapper) error {
	return integrations.CheckServed(mapper, spv1alpha1.SchemeGroupVersion.WithKind("PodGroup"),
		"scheduler-plugins v0.34 as a second scheduler (its Helm chart manifests/install/charts/as-a-second-scheduler; the CRD is config/crd/bases/scheduling.x-k8s.io_podgroups.yaml in sigs.k8s.io/scheduler-plugins)")
}

// SyncPodGroup creates the job's PodGroup or brings the fields Troupe owns
// in line. Coscheduling's PodGroup has no queue, priority or per-role
// minimum.
func (Backend) SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error) {
	var minResources corev1.ResourceList
	if len(spec.MinResources) > 0 {
		minResources = spec.MinResources
	}
	pg := &spv1alpha1.PodGroup{}
	err := integrations.SyncPodGroup(ctx, c, owner, ref, pg, func() {
		pg.Spec.MinMember = spec.MinMember
		pg.Spec.MinResources = minResources
		pg.Spec.ScheduleTimeoutSeconds = spec.ScheduleTimeoutSeconds
	})
	if err != nil {
		return integrations.GangState{}, err
	}
	return state(pg), nil
}

// state is always admitted: Coscheduling has no admission step, it holds
// the pods at its Permit gate until minMember of them fit.
//
// Nor does the PodGroup carry a verdict: v0.34.7's status has a phase and
// pod counts, no message, and its Failed phase means that a member pod
// failed, which the engine's restart policies handle, not that the gang
// cannot be placed. Coscheduling's reasons are on the pods' PodScheduled
// conditions, where the engine reads them for every backend.
func state(pg *spv1alpha1.PodGroup) integrations.GangState {
	return integrations.GangState{Phase: string(pg.Status.Phase), Admitted: true}
}

func (Backend) DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error {
	return integrations.DeletePodGroup(ctx, c, owner, &spv1alpha1.PodGroup{})
}

// DecoratePod sets the pod-group label Coscheduling selects a gang's pods
// by, and the task-spec annotation every backend reads a pod's role from.
func (b Backend) DecoratePod(pod *corev1.Pod, group, role string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[spv1alpha1.PodGroupLabel] = group
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[integrations.TaskSpecAnnotation] = role
	integrations.SetSchedulerName(pod, b.Scheduler)
}
