package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// ReplicaBuilder builds a replica spec.
type ReplicaBuilder struct{ spec kubeflowv1.ReplicaSpec }

// MakeReplica returns a replica of n pods with one container of the given
// name.
func MakeReplica(n int32, container string) *ReplicaBuilder {
	return &ReplicaBuilder{spec: kubeflowv1.ReplicaSpec{
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: container, Image: "registry.example/train:1"}},
		}},
	}}
}

// RestartPolicy sets the replica restart policy.
func (b *ReplicaBuilder) RestartPolicy(p kubeflowv1.RestartPolicy) *ReplicaBuilder {
	b.spec.RestartPolicy = p
	return b
}

// Request sets a resource request (and, for extended resources, the
// limit) on the first container.
func (b *ReplicaBuilder) Request(name corev1.ResourceName, qty string) *ReplicaBuilder {
	c := &b.spec.Template.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(qty)
	return b
}

// Limit sets a resource limit on the first container.
func (b *ReplicaBuilder) Limit(name corev1.ResourceName, qty string) *ReplicaBuilder {
	c := &b.spec.Template.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[name] = resource.MustParse(qty)
	return b
}

// Env adds an environment variable to the first container.
func (b *ReplicaBuilder) Env(name, value string) *ReplicaBuilder {
	c := &b.spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return b
}

// Port adds a named container port to the first container.
func (b *ReplicaBuilder) Port(name string, port int32) *ReplicaBuilder {
	c := &b.spec.Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port})
	return b
}

// TerminationGracePeriod sets the pods' terminationGracePeriodSeconds.
func (b *ReplicaBuilder) TerminationGracePeriod(seconds int64) *ReplicaBuilder {
	b.spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(seconds)
	return b
}

// NodeSelector sets the pod template's node selector.
func (b *ReplicaBuilder) NodeSelector(k, v string) *ReplicaBuilder {
	if b.spec.Template.Spec.NodeSelector == nil {
		b.spec.Template.Spec.NodeSelector = map[string]string{}
	}
	b.spec.Template.Spec.NodeSelector[k] = v
	return b
}

// Gate adds a scheduling gate (spec.schedulingGates) to the pod template,
// as Kueue and admission controllers do.
func (b *ReplicaBuilder) Gate(name string) *ReplicaBuilder {
	t := &b.spec.Template.Spec
	t.SchedulingGates = append(t.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return b
}

// PodSpec changes the pod template's spec, for placement rules (affinity,
// topology spread, volumes) that have no method of their own.
func (b *ReplicaBuilder) PodSpec(mutate func(*corev1.PodSpec)) *ReplicaBuilder {
	mutate(&b.spec.Template.Spec)
	return b
}

// NoReplicas leaves replicas unset, for defaulting tests.
func (b *ReplicaBuilder) NoReplicas() *ReplicaBuilder {
	b.spec.Replicas = nil
	return b
}

// Obj returns the replica spec.
func (b *ReplicaBuilder) Obj() *kubeflowv1.ReplicaSpec { return b.spec.DeepCopy() }

// RunPolicyBuilder sets run-policy fields shared by every kind.
type RunPolicyBuilder struct{ rp *kubeflowv1.RunPolicy }

func (b RunPolicyBuilder) backoffLimit(n int32)              { b.rp.BackoffLimit = ptr.To(n) }
func (b RunPolicyBuilder) activeDeadline(s int64)            { b.rp.ActiveDeadlineSeconds = ptr.To(s) }
func (b RunPolicyBuilder) ttl(s int32)                       { b.rp.TTLSecondsAfterFinished = ptr.To(s) }
func (b RunPolicyBuilder) suspend(v bool)                    { b.rp.Suspend = ptr.To(v) }
func (b RunPolicyBuilder) clean(p kubeflowv1.CleanPodPolicy) { b.rp.CleanPodPolicy = ptr.To(p) }
func (b RunPolicyBuilder) gang(gp kubeflowv1.GangPolicy)     { b.rp.GangPolicy = gp.DeepCopy() }
func (b RunPolicyBuilder) minAvailable(n int32) {
	if b.rp.SchedulingPolicy == nil {
		b.rp.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{}
	}
	b.rp.SchedulingPolicy.MinAvailable = ptr.To(n)
}

// TFJobBuilder builds a TFJob.
type TFJobBuilder struct{ job kubeflowv1.TFJob }

// MakeTFJob returns a TFJob with no replicas yet.
func MakeTFJob(name, namespace string) *TFJobBuilder {
	return &TFJobBuilder{job: kubeflowv1.TFJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: kubeflowv1.TFJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{}},
	}}
}

// Replica adds n replicas of rtype with a tensorflow container.
func (b *TFJobBuilder) Replica(rtype kubeflowv1.ReplicaType, n int32) *TFJobBuilder {
	return b.ReplicaSpec(rtype, MakeReplica(n, kubeflowv1.TFJobDefaultContainerName).Obj())
}

// ReplicaSpec sets the replica spec of rtype.
func (b *TFJobBuilder) ReplicaSpec(rtype kubeflowv1.ReplicaType, spec *kubeflowv1.ReplicaSpec) *TFJobBuilder {
	b.job.Spec.TFReplicaSpecs[rtype] = spec
	return b
}

func (b *TFJobBuilder) rp() RunPolicyBuilder { return RunPolicyBuilder{rp: &b.job.Spec.RunPolicy} }

// BackoffLimit sets runPolicy.backoffLimit.
func (b *TFJobBuilder) BackoffLimit(n int32) *TFJobBuilder { b.rp().backoffLimit(n); return b }

// ActiveDeadlineSeconds sets runPolicy.activeDeadlineSeconds.
func (b *TFJobBuilder) ActiveDeadlineSeconds(s int64) *TFJobBuilder {
	b.rp().activeDeadline(s)
	return b
}

// TTLSecondsAfterFinished sets runPolicy.ttlSecondsAfterFinished.
func (b *TFJobBuilder) TTLSecondsAfterFinished(s int32) *TFJobBuilder { b.rp().ttl(s); return b }

// Suspend sets runPolicy.suspend.
func (b *TFJobBuilder) Suspend(v bool) *TFJobBuilder { b.rp().suspend(v); return b }

// CleanPodPolicy sets runPolicy.cleanPodPolicy.
func (b *TFJobBuilder) CleanPodPolicy(p kubeflowv1.CleanPodPolicy) *TFJobBuilder {
	b.rp().clean(p)
	return b
}

// MinAvailable sets runPolicy.schedulingPolicy.minAvailable.
func (b *TFJobBuilder) MinAvailable(n int32) *TFJobBuilder { b.rp().minAvailable(n); return b }

// GangPolicy sets runPolicy.gangPolicy.
func (b *TFJobBuilder) GangPolicy(gp kubeflowv1.GangPolicy) *TFJobBuilder { b.rp().gang(gp); return b }

// SuccessPolicy sets spec.successPolicy.
func (b *TFJobBuilder) SuccessPolicy(p kubeflowv1.SuccessPolicy) *TFJobBuilder {
	b.job.Spec.SuccessPolicy = &p
	return b
}

// Obj returns the TFJob.
func (b *TFJobBuilder) Obj() *kubeflowv1.TFJob { return b.job.DeepCopy() }
