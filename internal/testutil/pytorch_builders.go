package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// PyTorchJobBuilder builds a PyTorchJob.
type PyTorchJobBuilder struct{ job kubeflowv1.PyTorchJob }

// MakePyTorchJob returns a PyTorchJob with no replicas yet.
func MakePyTorchJob(name, namespace string) *PyTorchJobBuilder {
	return &PyTorchJobBuilder{job: kubeflowv1.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: kubeflowv1.PyTorchJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       kubeflowv1.PyTorchJobSpec{PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{}},
	}}
}

// Replica adds n replicas of rtype with a pytorch container.
func (b *PyTorchJobBuilder) Replica(rtype kubeflowv1.ReplicaType, n int32) *PyTorchJobBuilder {
	return b.ReplicaSpec(rtype, MakeReplica(n, kubeflowv1.PyTorchJobDefaultContainerName).Obj())
}

// ReplicaSpec sets the replica spec of rtype.
func (b *PyTorchJobBuilder) ReplicaSpec(rtype kubeflowv1.ReplicaType, spec *kubeflowv1.ReplicaSpec) *PyTorchJobBuilder {
	b.job.Spec.PyTorchReplicaSpecs[rtype] = spec
	return b
}

// NprocPerNode sets spec.nprocPerNode.
func (b *PyTorchJobBuilder) NprocPerNode(n string) *PyTorchJobBuilder {
	b.job.Spec.NprocPerNode = ptr.To(n)
	return b
}

// ElasticPolicy sets spec.elasticPolicy.
func (b *PyTorchJobBuilder) ElasticPolicy(p kubeflowv1.ElasticPolicy) *PyTorchJobBuilder {
	b.job.Spec.ElasticPolicy = p.DeepCopy()
	return b
}

func (b *PyTorchJobBuilder) rp() RunPolicyBuilder { return RunPolicyBuilder{rp: &b.job.Spec.RunPolicy} }

// BackoffLimit sets runPolicy.backoffLimit.
func (b *PyTorchJobBuilder) BackoffLimit(n int32) *PyTorchJobBuilder {
	b.rp().backoffLimit(n)
	return b
}

// ActiveDeadlineSeconds sets runPolicy.activeDeadlineSeconds.
func (b *PyTorchJobBuilder) ActiveDeadlineSeconds(s int64) *PyTorchJobBuilder {
	b.rp().activeDeadline(s)
	return b
}

// TTLSecondsAfterFinished sets runPolicy.ttlSecondsAfterFinished.
func (b *PyTorchJobBuilder) TTLSecondsAfterFinished(s int32) *PyTorchJobBuilder {
	b.rp().ttl(s)
	return b
}

// Suspend sets runPolicy.suspend.
func (b *PyTorchJobBuilder) Suspend(v bool) *PyTorchJobBuilder { b.rp().suspend(v); return b }

// CleanPodPolicy sets runPolicy.cleanPodPolicy.
func (b *PyTorchJobBuilder) CleanPodPolicy(p kubeflowv1.CleanPodPolicy) *PyTorchJobBuilder {
	b.rp().clean(p)
	return b
}

// MinAvailable sets runPolicy.schedulingPolicy.minAvailable.
func (b *PyTorchJobBuilder) MinAvailable(n int32) *PyTorchJobBuilder {
	b.rp().minAvailable(n)
	return b
}

// Obj returns the PyTorchJob.
func (b *PyTorchJobBuilder) Obj() *kubeflowv1.PyTorchJob { return b.job.DeepCopy() }

// GangPolicy sets runPolicy.gangPolicy.
func (b *PyTorchJobBuilder) GangPolicy(gp kubeflowv1.GangPolicy) *PyTorchJobBuilder {
	b.rp().gang(gp)
	return b
}
