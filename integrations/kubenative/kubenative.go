// Package kubenative is the gang backend of Kubernetes' own gang
// scheduling (KEP-4671, the Workload API of scheduling.k8s.io/v1beta1,
// beta in 1.37): per job a Workload with one gang pod group template and
// the PodGroup made from it, and pods left to default-scheduler, each
// naming that PodGroup in spec.schedulingGroup. Nothing but Kubernetes
// itself needs to be installed; the API and kube-scheduler's
// GangScheduling plugin are off by default in 1.37 (see FeatureGate).
package kubenative

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/integrations"
)

// Name selects this backend on --gang-scheduler-name.
const Name = "kube-scheduler"

// TemplateName is the name of the Workload's one pod group template: the
// whole job is one gang.
const TemplateName = "gang"

// What a cluster needs for this backend, as the operator's start-up error
// and docs/install.md say it.
const (
	// FeatureGate turns on the Workload API in kube-apiserver and the
	// GangScheduling plugin in kube-scheduler (beta, off by default, in
	// Kubernetes 1.37).
	FeatureGate = "GenericWorkload=true"
	// RuntimeConfig serves the API group's beta version from
	// kube-apiserver, which beta APIs are not by default.
	RuntimeConfig = "scheduling.k8s.io/v1beta1=true"
)

// PodGroup protection: kube-apiserver's admission plugin puts a finalizer
// on every PodGroup, which kube-controller-manager's controller lifts once
// no pod names the group. Both run with FeatureGate.
const (
	ProtectionAdmission  = "PodGroupProtection"
	ProtectionController = "podgroup-protection-controller"
)

// APIServerFlags are the kube-apiserver flags (names without dashes) that
// serve the Workload API, for the control planes the tests, the demo and
// the benchmarks start.
var APIServerFlags = map[string]string{"feature-gates": FeatureGate, "runtime-config": RuntimeConfig}

// Requirements is what to turn on, in the words of the operator's
// start-up error.
var Requirements = fmt.Sprintf("Kubernetes 1.37 or later with the Workload API on: kube-apiserver --feature-gates=%s --runtime-config=%s, and kube-scheduler and kube-controller-manager --feature-gates=%s",
	FeatureGate, RuntimeConfig, FeatureGate)

// previousGangRetry is how soon a job whose PodGroup of the previous gang
// is still being deleted looks again.
const previousGangRetry = 2 * time.Second

// Backend implements integrations.Backend for kube-scheduler's own gang
// scheduling.
type Backend struct{}

var (
	_ integrations.Backend    = Backend{}
	_ integrations.Companions = Backend{}
)

func (Backend) Name() string { return Name }

// SchedulerName is default-scheduler: kube-scheduler's default profile
// runs the GangScheduling plugin once the feature gate is on.
func (Backend) SchedulerName() string       { return corev1.DefaultSchedulerName }
func (Backend) PodGroupType() client.Object { return &schedulingv1beta1.PodGroup{} }

// CompanionTypes is the Workload, which the job owns beside its PodGroup,
// so that a deleted one wakes the job and is made again.
func (Backend) CompanionTypes() []client.Object {
	return []client.Object{&schedulingv1beta1.Workload{}}
}

// CheckInstalled fails, naming the feature gate and runtime-config, when
// the API server does not serve Workload and PodGroup. Whether
// kube-scheduler runs with the gate cannot be read from the API: the docs
// say to turn it on in both.
func (Backend) CheckInstalled(mapper meta.RESTMapper) error {
	for _, kind := range []string{"Workload", "PodGroup"} {
		gvk := schedulingv1beta1.SchemeGroupVersion.WithKind(kind)
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("the cluster does not serve %s (%s): it needs %s: %w", kind, gvk.GroupVersion(), Requirements, err)
		}
	}
	return nil
}

// SyncPodGroup writes the job's Workload, then its PodGroup, both named
// after the job. Only minCount follows the job later: the API makes the
// templates, the policy kind and the priority immutable, so a priority
// class is set when they are created.
//
// A PodGroup still being deleted (a gang restart's teardown, whose pods
// kube-controller-manager's PodGroup protection waits for) is a
// WaitError: pods of the next gang created meanwhile would name the
// departing PodGroup and keep it, Terminating, for good.
func (Backend) SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error) {
	policy := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: spec.MinMember}}
	wl := &schedulingv1beta1.Workload{}
	err := integrations.SyncOwned(ctx, c, owner, ref, wl, func() error {
		if wl.ResourceVersion == "" {
			wl.Spec = schedulingv1beta1.WorkloadSpec{
				ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).Group, Kind: ref.Kind, Name: ref.Name},
				PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
					Name: TemplateName, SchedulingPolicy: policy, PriorityClassName: spec.PriorityClassName,
				}},
			}
			return nil
		}
		for i := range wl.Spec.PodGroupTemplates {
			if t := &wl.Spec.PodGroupTemplates[i]; t.Name == TemplateName && t.SchedulingPolicy.Gang != nil {
				t.SchedulingPolicy.Gang.MinCount = spec.MinMember
				return nil
			}
		}
		return fmt.Errorf("it has no gang pod group template %q: it was not made by Troupe's %s backend", TemplateName, Name)
	})
	if err != nil {
		return integrations.GangState{}, err
	}
	pg := &schedulingv1beta1.PodGroup{}
	err = integrations.SyncOwned(ctx, c, owner, ref, pg, func() error {
		if pg.DeletionTimestamp != nil {
			return errPreviousGang
		}
		if pg.ResourceVersion == "" {
			pg.Spec = schedulingv1beta1.PodGroupSpec{
				WorkloadRef:       &schedulingv1beta1.WorkloadReference{WorkloadName: wl.Name, TemplateName: TemplateName},
				SchedulingPolicy:  policy,
				PriorityClassName: spec.PriorityClassName,
			}
			return nil
		}
		if pg.Spec.SchedulingPolicy.Gang == nil {
			return fmt.Errorf("its scheduling policy is not gang: it was not made by Troupe's %s backend", Name)
		}
		pg.Spec.SchedulingPolicy.Gang.MinCount = spec.MinMember
		return nil
	})
	if errors.Is(err, errPreviousGang) {
		return integrations.GangState{}, &integrations.WaitError{
			Message:    fmt.Sprintf("PodGroup %s of the previous gang is still being deleted; the next gang's pods wait for it to go.", owner.GetName()),
			RetryAfter: previousGangRetry,
		}
	}
	if err != nil {
		return integrations.GangState{}, err
	}
	return State(pg), nil
}

var errPreviousGang = errors.New("the PodGroup is being deleted")

// State is what kube-scheduler says of a PodGroup. It has no admission
// step: the GangScheduling plugin holds a gang's pods until minCount of
// them exist, then places them together or not at all. Its verdict is the
// PodGroupInitiallyScheduled condition, False with a reason while the gang
// cannot be placed, True (for good) once it was. In 1.37 the verdict says
// how many members fit ("minCount (4) cannot be satisfied: 3 scheduled"),
// not what the others lack; the pods' own conditions say the same, so the
// job shows the PodGroup's words alone.
func State(pg *schedulingv1beta1.PodGroup) integrations.GangState {
	s := integrations.GangState{Admitted: true, Phase: "Pending"}
	c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
	switch {
	case c == nil:
	case c.Status == metav1.ConditionTrue:
		s.Phase = "Scheduled"
	case c.Status == metav1.ConditionFalse:
		s.Phase = c.Reason
		s.Unschedulable = c.Message
	}
	return s
}

// DeletePodGroup removes the job's PodGroup and Workload.
func (Backend) DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error {
	if err := integrations.DeletePodGroup(ctx, c, owner, &schedulingv1beta1.PodGroup{}); err != nil {
		return err
	}
	return integrations.DeletePodGroup(ctx, c, owner, &schedulingv1beta1.Workload{})
}

// DecoratePod names the job's PodGroup in the pod's spec.schedulingGroup,
// which is how kube-scheduler finds a pod's gang, and sets the task-spec
// annotation every backend reads a pod's role from.
func (b Backend) DecoratePod(pod *corev1.Pod, group, role string) {
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[integrations.TaskSpecAnnotation] = role
	integrations.SetSchedulerName(pod, b.SchedulerName())
}
