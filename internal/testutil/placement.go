package testutil

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// Builders for pods with placement rules (node and pod affinity, taints and
// tolerations, topology spread, host ports), for whichever scheduler: the
// differential suite gives the same pod to kube-scheduler and to
// troupe-scheduler.

// Taint adds a taint.
func (b *NodeBuilder) Taint(key, value string, effect corev1.TaintEffect) *NodeBuilder {
	b.node.Spec.Taints = append(b.node.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Unschedulable cordons the node (spec.unschedulable).
func (b *NodeBuilder) Unschedulable() *NodeBuilder {
	b.node.Spec.Unschedulable = true
	return b
}

// Allocatable sets a resource's allocatable alone, below its capacity, as
// a kubelet that reserves some for the system reports it.
func (b *NodeBuilder) Allocatable(name corev1.ResourceName, qty string) *NodeBuilder {
	b.node.Status.Allocatable[name] = resource.MustParse(qty)
	return b
}

// Unset removes a resource from the node's capacity and allocatable, e.g.
// the pods MakeNode sets.
func (b *NodeBuilder) Unset(name corev1.ResourceName) *NodeBuilder {
	delete(b.node.Status.Capacity, name)
	delete(b.node.Status.Allocatable, name)
	return b
}

// Unlabel removes a label, e.g. the kubernetes.io/hostname MakeNode sets.
func (b *NodeBuilder) Unlabel(k string) *NodeBuilder {
	delete(b.node.Labels, k)
	return b
}

// PodBuilder builds a pod with placement rules.
type PodBuilder struct{ pod corev1.Pod }

// MakePod returns a pod with one container, no requests, no labels and the
// default scheduler.
func MakePod(name, namespace string) *PodBuilder {
	return &PodBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1"}},
		},
	}}
}

// Label sets a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Labels sets several labels.
func (b *PodBuilder) Labels(l map[string]string) *PodBuilder {
	for k, v := range l {
		b.Label(k, v)
	}
	return b
}

// SchedulerName sets spec.schedulerName.
func (b *PodBuilder) SchedulerName(name string) *PodBuilder {
	b.pod.Spec.SchedulerName = name
	return b
}

// Group puts the pod in a Troupe PodGroup of its namespace.
func (b *PodBuilder) Group(name string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] = name
	return b
}

// NodeName puts the pod on a node at creation, with no scheduler involved.
func (b *PodBuilder) NodeName(node string) *PodBuilder {
	b.pod.Spec.NodeName = node
	return b
}

// Request sets a resource request of the container. An extended resource
// (e.g. nvidia.com/gpu) or hugepages get the same limit too: the API
// server requires one, as they cannot be overcommitted.
func (b *PodBuilder) Request(name corev1.ResourceName, qty string) *PodBuilder {
	r := &b.pod.Spec.Containers[0].Resources
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	r.Requests[name] = resource.MustParse(qty)
	extended := strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), corev1.ResourceDefaultNamespacePrefix)
	if extended || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
		b.Limit(name, qty)
	}
	return b
}

// Limit sets a resource limit of the container.
func (b *PodBuilder) Limit(name corev1.ResourceName, qty string) *PodBuilder {
	r := &b.pod.Spec.Containers[0].Resources
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	r.Limits[name] = resource.MustParse(qty)
	return b
}

// HostPort adds a container port bound on the node's port, on every IP.
func (b *PodBuilder) HostPort(port int32, protocol corev1.Protocol) *PodBuilder {
	c := &b.pod.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: protocol})
	return b
}

// HostPortOn adds a container port bound on the node's port on one IP.
func (b *PodBuilder) HostPortOn(ip string, port int32, protocol corev1.Protocol) *PodBuilder {
	c := &b.pod.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: protocol})
	return b
}

// InitContainer adds an init container that requests cpu; a sidecar
// (restartPolicy Always) keeps running beside the containers.
func (b *PodBuilder) InitContainer(cpu string, sidecar bool) *PodBuilder {
	c := corev1.Container{
		Name:      fmt.Sprintf("init-%d", len(b.pod.Spec.InitContainers)),
		Image:     "registry.example/init:1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}
	if sidecar {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	return b
}

// NodeSelector adds a nodeSelector entry.
func (b *PodBuilder) NodeSelector(k, v string) *PodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}

// Toleration adds a toleration.
func (b *PodBuilder) Toleration(t corev1.Toleration) *PodBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, t)
	return b
}

func (b *PodBuilder) affinity() *corev1.Affinity {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &corev1.Affinity{}
	}
	return b.pod.Spec.Affinity
}

func (b *PodBuilder) nodeAffinity() *corev1.NodeAffinity {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	return a.NodeAffinity
}

func (b *PodBuilder) podAffinity() *corev1.PodAffinity {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	return a.PodAffinity
}

func (b *PodBuilder) podAntiAffinity() *corev1.PodAntiAffinity {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	return a.PodAntiAffinity
}

// RequiredNodeAffinity adds required node selector terms; a node must
// match one of the pod's terms (they are ORed).
func (b *PodBuilder) RequiredNodeAffinity(terms ...corev1.NodeSelectorTerm) *PodBuilder {
	na := b.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	r := na.RequiredDuringSchedulingIgnoredDuringExecution
	r.NodeSelectorTerms = append(r.NodeSelectorTerms, terms...)
	return b
}

// PreferredNodeAffinity adds a preferred node selector term.
func (b *PodBuilder) PreferredNodeAffinity(weight int32, term corev1.NodeSelectorTerm) *PodBuilder {
	na := b.nodeAffinity()
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: term})
	return b
}

// PodAffinity adds required pod affinity terms.
func (b *PodBuilder) PodAffinity(terms ...corev1.PodAffinityTerm) *PodBuilder {
	pa := b.podAffinity()
	pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return b
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (b *PodBuilder) PreferredPodAffinity(weight int32, term corev1.PodAffinityTerm) *PodBuilder {
	pa := b.podAffinity()
	pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return b
}

// PodAntiAffinity adds required pod anti-affinity terms.
func (b *PodBuilder) PodAntiAffinity(terms ...corev1.PodAffinityTerm) *PodBuilder {
	pa := b.podAntiAffinity()
	pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return b
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (b *PodBuilder) PreferredPodAntiAffinity(weight int32, term corev1.PodAffinityTerm) *PodBuilder {
	pa := b.podAntiAffinity()
	pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return b
}

// Spread adds a topology spread constraint.
func (b *PodBuilder) Spread(c corev1.TopologySpreadConstraint) *PodBuilder {
	b.pod.Spec.TopologySpreadConstraints = append(b.pod.Spec.TopologySpreadConstraints, c)
	return b
}

// Obj returns the pod.
// Claim adds a volume, named after the claim, that mounts it
// (spec.volumes[].persistentVolumeClaim).
func (b *PodBuilder) Claim(claim string) *PodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
	return b
}

func (b *PodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// NodeReq is a node selector requirement.
func NodeReq(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// NodeTerm is a node selector term of label requirements, all of which
// must hold.
func NodeTerm(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

// NodeNameTerm is a node selector term on the node's metadata.name
// (matchFields), In or NotIn one name: the API server allows no more.
func NodeNameTerm(op corev1.NodeSelectorOperator, name string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: []string{name}}}}
}

// Tolerate is a toleration of key=value (Equal), or of any value of key
// when value is empty (Exists); an empty effect tolerates every effect.
func Tolerate(key, value string, effect corev1.TaintEffect) corev1.Toleration {
	if value == "" {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect}
}

// PodTermBuilder builds a pod (anti-)affinity term.
type PodTermBuilder struct{ term corev1.PodAffinityTerm }

// PodTerm returns a term over topologyKey that selects pods with all of
// matchLabels, in the owner's namespace until Namespaces or
// NamespaceSelector says otherwise.
func PodTerm(topologyKey string, matchLabels map[string]string) *PodTermBuilder {
	return &PodTermBuilder{term: corev1.PodAffinityTerm{
		TopologyKey:   topologyKey,
		LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(matchLabels)},
	}}
}

// Expr adds a selector expression.
func (b *PodTermBuilder) Expr(key string, op metav1.LabelSelectorOperator, values ...string) *PodTermBuilder {
	s := b.term.LabelSelector
	s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values})
	return b
}

// Namespaces lists the namespaces the term selects pods in.
func (b *PodTermBuilder) Namespaces(ns ...string) *PodTermBuilder {
	b.term.Namespaces = append(b.term.Namespaces, ns...)
	return b
}

// NamespaceSelector selects namespaces by label; an empty map selects
// every namespace.
func (b *PodTermBuilder) NamespaceSelector(matchLabels map[string]string) *PodTermBuilder {
	b.term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(matchLabels)}
	return b
}

// Obj returns the term.
func (b *PodTermBuilder) Obj() corev1.PodAffinityTerm { return *b.term.DeepCopy() }

// SpreadBuilder builds a topology spread constraint.
type SpreadBuilder struct {
	c corev1.TopologySpreadConstraint
}

// MakeSpread returns a DoNotSchedule constraint over topologyKey for the
// pods with all of matchLabels.
func MakeSpread(topologyKey string, maxSkew int32, matchLabels map[string]string) *SpreadBuilder {
	return &SpreadBuilder{c: corev1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       topologyKey,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: maps.Clone(matchLabels)},
	}}
}

// ScheduleAnyway makes the constraint a preference.
func (b *SpreadBuilder) ScheduleAnyway() *SpreadBuilder {
	b.c.WhenUnsatisfiable = corev1.ScheduleAnyway
	return b
}

// MinDomains sets minDomains.
func (b *SpreadBuilder) MinDomains(n int32) *SpreadBuilder {
	b.c.MinDomains = ptr.To(n)
	return b
}

// NodeAffinityPolicy sets nodeAffinityPolicy (Honor by default).
func (b *SpreadBuilder) NodeAffinityPolicy(p corev1.NodeInclusionPolicy) *SpreadBuilder {
	b.c.NodeAffinityPolicy = ptr.To(p)
	return b
}

// NodeTaintsPolicy sets nodeTaintsPolicy (Ignore by default).
func (b *SpreadBuilder) NodeTaintsPolicy(p corev1.NodeInclusionPolicy) *SpreadBuilder {
	b.c.NodeTaintsPolicy = ptr.To(p)
	return b
}

// MatchLabelKeys sets matchLabelKeys.
func (b *SpreadBuilder) MatchLabelKeys(keys ...string) *SpreadBuilder {
	b.c.MatchLabelKeys = append(b.c.MatchLabelKeys, keys...)
	return b
}

// Obj returns the constraint.
func (b *SpreadBuilder) Obj() corev1.TopologySpreadConstraint { return *b.c.DeepCopy() }
