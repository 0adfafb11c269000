package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// MPIJobBuilder builds an MPIJob.
type MPIJobBuilder struct{ job kubeflowv1.MPIJob }

// MakeMPIJob returns an MPIJob with no replicas yet.
func MakeMPIJob(name, namespace string) *MPIJobBuilder {
	return &MPIJobBuilder{job: kubeflowv1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: kubeflowv1.MPIJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       kubeflowv1.MPIJobSpec{MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{}},
	}}
}

// Launcher adds the launcher with an mpi container.
func (b *MPIJobBuilder) Launcher() *MPIJobBuilder {
	return b.ReplicaSpec(kubeflowv1.MPIJobReplicaTypeLauncher, MakeReplica(1, kubeflowv1.MPIJobDefaultContainerName).Obj())
}

// Workers adds n workers with an mpi container.
func (b *MPIJobBuilder) Workers(n int32) *MPIJobBuilder {
	return b.ReplicaSpec(kubeflowv1.MPIJobReplicaTypeWorker, MakeReplica(n, kubeflowv1.MPIJobDefaultContainerName).Obj())
}

// ReplicaSpec sets the replica spec of rtype.
func (b *MPIJobBuilder) ReplicaSpec(rtype kubeflowv1.ReplicaType, spec *kubeflowv1.ReplicaSpec) *MPIJobBuilder {
	b.job.Spec.MPIReplicaSpecs[rtype] = spec
	return b
}

// LauncherServiceAccount sets the launcher template's serviceAccountName;
// call it after Launcher or ReplicaSpec(Launcher, ...).
func (b *MPIJobBuilder) LauncherServiceAccount(name string) *MPIJobBuilder {
	b.job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.ServiceAccountName = name
	return b
}

// SlotsPerWorker sets spec.slotsPerWorker.
func (b *MPIJobBuilder) SlotsPerWorker(n int32) *MPIJobBuilder {
	b.job.Spec.SlotsPerWorker = ptr.To(n)
	return b
}

// MainContainer sets spec.mainContainer.
func (b *MPIJobBuilder) MainContainer(name string) *MPIJobBuilder {
	b.job.Spec.MainContainer = name
	return b
}

func (b *MPIJobBuilder) rp() RunPolicyBuilder { return RunPolicyBuilder{rp: &b.job.Spec.RunPolicy} }

// BackoffLimit sets runPolicy.backoffLimit.
func (b *MPIJobBuilder) BackoffLimit(n int32) *MPIJobBuilder { b.rp().backoffLimit(n); return b }

// ActiveDeadlineSeconds sets runPolicy.activeDeadlineSeconds.
func (b *MPIJobBuilder) ActiveDeadlineSeconds(s int64) *MPIJobBuilder {
	b.rp().activeDeadline(s)
	return b
}

// TTLSecondsAfterFinished sets runPolicy.ttlSecondsAfterFinished.
func (b *MPIJobBuilder) TTLSecondsAfterFinished(s int32) *MPIJobBuilder { b.rp().ttl(s); return b }

// Suspend sets runPolicy.suspend.
func (b *MPIJobBuilder) Suspend(v bool) *MPIJobBuilder { b.rp().suspend(v); return b }

// CleanPodPolicy sets runPolicy.cleanPodPolicy.
func (b *MPIJobBuilder) CleanPodPolicy(p kubeflowv1.CleanPodPolicy) *MPIJobBuilder {
	b.rp().clean(p)
	return b
}

// Obj returns the MPIJob.
func (b *MPIJobBuilder) Obj() *kubeflowv1.MPIJob { return b.job.DeepCopy() }

// GangPolicy sets runPolicy.gangPolicy.
func (b *MPIJobBuilder) GangPolicy(gp kubeflowv1.GangPolicy) *MPIJobBuilder {
	b.rp().gang(gp)
	return b
}
