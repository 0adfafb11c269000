package testutil

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// GPU is the GPU resource the scheduler's suites use.
const GPU corev1.ResourceName = "nvidia.com/gpu"

// NodeBuilder builds a Node for the scheduler's suites.
type NodeBuilder struct{ node corev1.Node }

// MakeNode returns a node that allows 110 pods and has no other resources
// until Capacity or GPU adds them.
func MakeNode(name string) *NodeBuilder {
	b := &NodeBuilder{node: corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}},
	}}
	return b.Resource(corev1.ResourcePods, "110")
}

// Resource sets one resource's capacity and allocatable.
func (b *NodeBuilder) Resource(name corev1.ResourceName, qty string) *NodeBuilder {
	b.node.Status.Capacity[name] = resource.MustParse(qty)
	b.node.Status.Allocatable[name] = resource.MustParse(qty)
	return b
}

// Capacity sets CPU and memory.
func (b *NodeBuilder) Capacity(cpu, memory string) *NodeBuilder {
	return b.Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, memory)
}

// GPU sets the node's nvidia.com/gpu.
func (b *NodeBuilder) GPU(n int) *NodeBuilder { return b.Resource(GPU, fmt.Sprint(n)) }

// Label sets a label.
func (b *NodeBuilder) Label(k, v string) *NodeBuilder {
	b.node.Labels[k] = v
	return b
}

// Obj returns the node.
func (b *NodeBuilder) Obj() *corev1.Node { return b.node.DeepCopy() }

// CreateReadyNode registers a node as a kubelet would and leaves it Ready
// and schedulable: it creates the node, writes its capacity, allocatable
// and Ready condition through the status subresource, and removes the
// node.kubernetes.io/not-ready taint that admission puts on every new node
// (envtest runs no node lifecycle controller to remove it). node is
// updated to what was stored.
func CreateReadyNode(ctx context.Context, c client.Client, node *corev1.Node) error {
	st := node.Status
	st.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	if err := c.Create(ctx, node); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status = st
		if err := c.Status().Update(ctx, node); err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				taints = append(taints, t)
			}
		}
		node.Spec.Taints = taints
		return c.Update(ctx, node)
	})
}

// PodGroupBuilder builds a Troupe PodGroup.
type PodGroupBuilder struct{ pg schedulingv1alpha1.PodGroup }

// MakePodGroup returns a PodGroup of minMember 1 in the default queue.
func MakePodGroup(name, namespace string) *PodGroupBuilder {
	return &PodGroupBuilder{pg: schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       schedulingv1alpha1.PodGroupSpec{MinMember: 1},
	}}
}

// MinMember sets spec.minMember.
func (b *PodGroupBuilder) MinMember(n int32) *PodGroupBuilder {
	b.pg.Spec.MinMember = n
	return b
}

// MinTaskMember sets one role's spec.minTaskMember entry.
func (b *PodGroupBuilder) MinTaskMember(role string, n int32) *PodGroupBuilder {
	if b.pg.Spec.MinTaskMember == nil {
		b.pg.Spec.MinTaskMember = map[string]int32{}
	}
	b.pg.Spec.MinTaskMember[role] = n
	return b
}

// Queue sets spec.queue.
func (b *PodGroupBuilder) Queue(q string) *PodGroupBuilder {
	b.pg.Spec.Queue = q
	return b
}

// PriorityClass sets spec.priorityClassName.
func (b *PodGroupBuilder) PriorityClass(name string) *PodGroupBuilder {
	b.pg.Spec.PriorityClassName = name
	return b
}

// ScheduleTimeout sets spec.scheduleTimeoutSeconds.
func (b *PodGroupBuilder) ScheduleTimeout(seconds int32) *PodGroupBuilder {
	b.pg.Spec.ScheduleTimeoutSeconds = &seconds
	return b
}

// Obj returns the PodGroup.
func (b *PodGroupBuilder) Obj() *schedulingv1alpha1.PodGroup { return b.pg.DeepCopy() }

// GangPodBuilder builds a pod for the in-repo scheduler.
type GangPodBuilder struct{ pod corev1.Pod }

// MakeGangPod returns a pod with one container, no requests, and
// schedulerName troupe-scheduler.
func MakeGangPod(name, namespace string) *GangPodBuilder {
	return &GangPodBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName: "troupe-scheduler",
			Containers:    []corev1.Container{{Name: "main", Image: "registry.example/train:1"}},
		},
	}}
}

// Group puts the pod in a PodGroup of its namespace.
func (b *GangPodBuilder) Group(name string) *GangPodBuilder {
	b.pod.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] = name
	return b
}

// Role sets the pod's role in its gang.
func (b *GangPodBuilder) Role(role string) *GangPodBuilder {
	b.pod.Annotations[schedulingv1alpha1.TaskSpecAnnotation] = role
	return b
}

// SchedulerName sets spec.schedulerName.
func (b *GangPodBuilder) SchedulerName(name string) *GangPodBuilder {
	b.pod.Spec.SchedulerName = name
	return b
}

// Request sets a resource request of the container.
func (b *GangPodBuilder) Request(name corev1.ResourceName, qty string) *GangPodBuilder {
	r := &b.pod.Spec.Containers[0].Resources
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	r.Requests[name] = resource.MustParse(qty)
	return b
}

// GPU sets nvidia.com/gpu as a limit only, as users write it; the API
// server copies it to the request.
func (b *GangPodBuilder) GPU(n int) *GangPodBuilder {
	r := &b.pod.Spec.Containers[0].Resources
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	r.Limits[GPU] = resource.MustParse(fmt.Sprint(n))
	return b
}

// NodeSelector adds a nodeSelector entry.
func (b *GangPodBuilder) NodeSelector(k, v string) *GangPodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}

// NodeName puts the pod on a node at creation, as a pod that some other
// scheduler (or a person) already placed.
func (b *GangPodBuilder) NodeName(node string) *GangPodBuilder {
	b.pod.Spec.NodeName = node
	return b
}

// Claim adds a volume named volume that mounts the claim, in the pod's
// namespace.
func (b *GangPodBuilder) Claim(volume, claim string) *GangPodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
	return b
}

// Label sets a label.
func (b *GangPodBuilder) Label(k, v string) *GangPodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// PodAntiAffinity adds required pod anti-affinity terms (see PodTerm).
func (b *GangPodBuilder) PodAntiAffinity(terms ...corev1.PodAffinityTerm) *GangPodBuilder {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &corev1.Affinity{}
	}
	if b.pod.Spec.Affinity.PodAntiAffinity == nil {
		b.pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a := b.pod.Spec.Affinity.PodAntiAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return b
}

// Obj returns the pod.
func (b *GangPodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// ImpersonateServiceAccount makes a ServiceAccount in namespace "default",
// gives it the ClusterRole in roleFile (a generated config/rbac role, under
// the ServiceAccount's own name) and returns cfg impersonating it. A suite
// that runs a binary this way proves its generated permissions.
func ImpersonateServiceAccount(ctx context.Context, c client.Client, cfg *rest.Config, roleFile string) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "troupe-", Namespace: "default"}}
	if err := c.Create(ctx, sa); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(roleFile)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		return nil, fmt.Errorf("%s: %w", roleFile, err)
	}
	role.Name = sa.Name
	if err := c.Create(ctx, role); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}); err != nil {
		return nil, err
	}
	imp := rest.CopyConfig(cfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:default:" + sa.Name}
	return imp, nil
}
