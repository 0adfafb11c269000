// Package testing has builders for the scheduler's tests: nodes, pods, jobs,
// queues, storage objects and snapshots, in the MakeX(...).Field(...).Obj()
// style.
//
// Import it under a short name (the scheduler's tests use st), as it
// shadows the standard library's testing.
package testing

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// GPU is the GPU resource the builders use.
const GPU corev1.ResourceName = "nvidia.com/gpu"

// GroupAnnotation names a test pod's gang (in the pod's namespace). The real
// key belongs to the PodGroup API; the scheduler core only sees JobOf.
const GroupAnnotation = "test.troupe.dev/group"

// JobOf maps a pod to its gang through GroupAnnotation.
func JobOf(pod *corev1.Pod) (api.JobID, bool) {
	g, ok := pod.Annotations[GroupAnnotation]
	if !ok {
		return "", false
	}
	return api.NewJobID(pod.Namespace, g), true
}

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode returns a Ready node that allows 110 pods and has no other
// resources until Capacity or Resource adds them.
func MakeNode(name string) *NodeWrapper {
	n := &NodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{},
			Allocatable: corev1.ResourceList{},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
	return n.Resource(corev1.ResourcePods, "110")
}

// Capacity sets CPU, memory and GPUs (capacity and allocatable alike);
// gpu 0 means a node without GPUs.
func (n *NodeWrapper) Capacity(cpu, memory string, gpu int64) *NodeWrapper {
	n.Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, memory)
	if gpu > 0 {
		n.Resource(GPU, fmt.Sprint(gpu))
	}
	return n
}

// Resource sets one resource's capacity and allocatable.
func (n *NodeWrapper) Resource(name corev1.ResourceName, q string) *NodeWrapper {
	n.Status.Capacity[name] = resource.MustParse(q)
	n.Status.Allocatable[name] = resource.MustParse(q)
	return n
}

// Label sets a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Labels[k] = v
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node (spec.unschedulable).
func (n *NodeWrapper) Unschedulable() *NodeWrapper {
	n.Spec.Unschedulable = true
	return n
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *corev1.Node { return &n.Node }

// PodWrapper builds a Pod with one container.
type PodWrapper struct{ corev1.Pod }

// MakePod returns a pending pod namespace/name with UID namespace/name and
// one container without requests.
func MakePod(namespace, name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name),
			Annotations: map[string]string{},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Job puts the pod in gang namespace/job.
func (p *PodWrapper) Job(job string) *PodWrapper {
	p.Annotations[GroupAnnotation] = job
	return p
}

// Role sets the pod's role (api.TaskRoleAnnotation).
func (p *PodWrapper) Role(role string) *PodWrapper {
	p.Annotations[api.TaskRoleAnnotation] = role
	return p
}

func (p *PodWrapper) main() *corev1.Container { return &p.Spec.Containers[0] }

// Req sets the main container's CPU and memory requests ("" leaves one unset).
func (p *PodWrapper) Req(cpu, memory string) *PodWrapper {
	if cpu != "" {
		p.Request(corev1.ResourceCPU, cpu)
	}
	if memory != "" {
		p.Request(corev1.ResourceMemory, memory)
	}
	return p
}

// Request sets one request of the main container.
func (p *PodWrapper) Request(name corev1.ResourceName, q string) *PodWrapper {
	c := p.main()
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(q)
	return p
}

// Limit sets one limit of the main container, and no request.
func (p *PodWrapper) Limit(name corev1.ResourceName, q string) *PodWrapper {
	c := p.main()
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[name] = resource.MustParse(q)
	return p
}

// GPU requests (and limits, as extended resources require) n GPUs.
func (p *PodWrapper) GPU(n int64) *PodWrapper {
	q := fmt.Sprint(n)
	return p.Request(GPU, q).Limit(GPU, q)
}

// Defaulted applies what the API server's defaulting does to container
// resources (SetDefaults_Pod): a resource with a limit and no request gets
// the limit as its request. Pods the scheduler reads from the API always
// went through it.
func (p *PodWrapper) Defaulted() *PodWrapper {
	def := func(cs []corev1.Container) {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
	def(p.Spec.InitContainers)
	def(p.Spec.Containers)
	return p
}

// InitContainer adds an init container with these requests; sidecar makes
// it a restartable (sidecar) init container.
func (p *PodWrapper) InitContainer(name string, sidecar bool, req corev1.ResourceList) *PodWrapper {
	c := corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	return p
}

// Overhead sets the pod overhead (from its RuntimeClass).
func (p *PodWrapper) Overhead(rl corev1.ResourceList) *PodWrapper {
	p.Spec.Overhead = rl
	return p
}

// NodeSelector adds a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// NodeAffinity adds a required node affinity term: key op values.
func (p *PodWrapper) NodeAffinity(key string, op corev1.NodeSelectorOperator, values ...string) *PodWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	req.NodeSelectorTerms = append(req.NodeSelectorTerms, corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
	})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// HostPort makes the main container bind a host port (ip "" means 0.0.0.0,
// protocol "" means TCP).
func (p *PodWrapper) HostPort(ip string, protocol corev1.Protocol, port int32) *PodWrapper {
	c := p.main()
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: protocol})
	return p
}

// Node assigns the pod to a node (as after binding).
func (p *PodWrapper) Node(name string) *PodWrapper {
	p.Spec.NodeName = name
	return p
}

// Nominated sets status.nominatedNodeName, as a preemption for the pod
// leaves it.
func (p *PodWrapper) Nominated(node string) *PodWrapper {
	p.Status.NominatedNodeName = node
	return p
}

// Phase sets status.phase.
func (p *PodWrapper) Phase(phase corev1.PodPhase) *PodWrapper {
	p.Status.Phase = phase
	return p
}

// Terminating marks the pod as being deleted.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.NewTime(time.Unix(0, 0))
	p.DeletionTimestamp = &now
	return p
}

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper {
	p.Spec.Priority = &v
	return p
}

// Created sets the creation time.
func (p *PodWrapper) Created(t time.Time) *PodWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

// Controlled gives the pod a controller (an owner reference with
// controller set), as the operator's pods have.
func (p *PodWrapper) Controlled() *PodWrapper {
	yes := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "owner", UID: "owner-uid", Controller: &yes,
	})
	return p
}

// Gate adds a scheduling gate (spec.schedulingGates).
func (p *PodWrapper) Gate(name string) *PodWrapper {
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return p
}

// PreemptedBy marks the pod as a scheduler's preemption victim: the
// DisruptionTarget condition with reason PreemptionByScheduler.
func (p *PodWrapper) PreemptedBy(scheduler string) *PodWrapper {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonPreemptionByScheduler, Message: scheduler + ": preempting",
	})
	return p
}

// PodAffinity adds a required pod affinity term: pods labelled
// selector (k=v pairs) in the pod's namespace, by topologyKey.
func (p *PodWrapper) PodAffinity(topologyKey string, selector ...string) *PodWrapper {
	a := p.podAffinity()
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, AffinityTerm(topologyKey, selector...))
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(topologyKey string, selector ...string) *PodWrapper {
	a := p.podAntiAffinity()
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, AffinityTerm(topologyKey, selector...))
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term of weight w;
// a negative w adds a preferred anti-affinity term of weight -w.
func (p *PodWrapper) PreferredPodAffinity(w int32, topologyKey string, selector ...string) *PodWrapper {
	if w < 0 {
		a := p.podAntiAffinity()
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: -w, PodAffinityTerm: AffinityTerm(topologyKey, selector...)})
		return p
	}
	a := p.podAffinity()
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: AffinityTerm(topologyKey, selector...)})
	return p
}

// AffinityTerm is a pod affinity term selecting pods labelled selector
// (k=v pairs) in the pod's own namespace, by topologyKey.
func AffinityTerm(topologyKey string, selector ...string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: LabelSelector(selector...)}
}

// LabelSelector selects the k=v pairs given.
func LabelSelector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func (p *PodWrapper) podAffinity() *corev1.PodAffinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
	}
	return p.Spec.Affinity.PodAffinity
}

func (p *PodWrapper) podAntiAffinity() *corev1.PodAntiAffinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	return p.Spec.Affinity.PodAntiAffinity
}

// Spread adds a topology spread constraint over pods labelled selector
// (k=v pairs); mutate, if not nil, sets its other fields.
func (p *PodWrapper) Spread(maxSkew int32, topologyKey string, when corev1.UnsatisfiableConstraintAction, mutate func(*corev1.TopologySpreadConstraint), selector ...string) *PodWrapper {
	c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when, LabelSelector: LabelSelector(selector...)}
	if mutate != nil {
		mutate(&c)
	}
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	return p
}

// PreferredNodeAffinity adds a preferred node affinity term of weight w:
// key In values.
func (p *PodWrapper) PreferredNodeAffinity(w int32, key string, values ...string) *PodWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: w, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}},
	})
	return p
}

// Labels sets labels.
func (p *PodWrapper) Labels(kv ...string) *PodWrapper {
	if p.ObjectMeta.Labels == nil {
		p.ObjectMeta.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.ObjectMeta.Labels[kv[i]] = kv[i+1]
	}
	return p
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// JobWrapper builds a JobInfo (a PodGroup) without tasks.
type JobWrapper struct{ api.JobInfo }

// MakeJob returns job namespace/name in the default queue with MinMember 1.
func MakeJob(namespace, name string) *JobWrapper {
	j := api.NewJobInfo(namespace, name)
	j.MinMember = 1
	j.Tasks = nil
	return &JobWrapper{*j}
}

// MinMember sets minMember.
func (j *JobWrapper) MinMember(n int32) *JobWrapper {
	j.JobInfo.MinMember = n
	return j
}

// MinTaskMember sets the minimum for one role.
func (j *JobWrapper) MinTaskMember(role string, n int32) *JobWrapper {
	if j.JobInfo.MinTaskMember == nil {
		j.JobInfo.MinTaskMember = map[string]int32{}
	}
	j.JobInfo.MinTaskMember[role] = n
	return j
}

// Queue sets the queue.
func (j *JobWrapper) Queue(q api.QueueID) *JobWrapper {
	j.JobInfo.Queue = q
	return j
}

// Priority sets the PodGroup priority.
func (j *JobWrapper) Priority(p int32) *JobWrapper {
	j.JobInfo.Priority = p
	return j
}

// Created sets the creation time.
func (j *JobWrapper) Created(t time.Time) *JobWrapper {
	j.CreationTimestamp = t
	return j
}

// PartialSince records when the gang was first seen partial.
func (j *JobWrapper) PartialSince(t time.Time) *JobWrapper {
	j.JobInfo.PartialSince = &t
	return j
}

// WaitingSince records when the gang's attempt to be placed began.
func (j *JobWrapper) WaitingSince(t time.Time) *JobWrapper {
	j.JobInfo.WaitingSince = &t
	return j
}

// Obj returns the job.
func (j *JobWrapper) Obj() *api.JobInfo {
	job := j.JobInfo
	return &job
}

// MakeQueue returns an open queue of weight 1.
func MakeQueue(name api.QueueID) *api.QueueInfo {
	return &api.QueueInfo{Name: name, Weight: 1, State: api.QueueOpen}
}

// MustSnapshot builds a snapshot with JobOf; with no queues given it adds an
// open default queue. It panics on invalid input, which is a broken test.
func MustSnapshot(nodes []*corev1.Node, pods []*corev1.Pod, jobs []*api.JobInfo, queues ...*api.QueueInfo) *api.Snapshot {
	if len(queues) == 0 {
		queues = []*api.QueueInfo{MakeQueue(api.DefaultQueue)}
	}
	s, err := api.NewSnapshot(api.Cluster{Nodes: nodes, Pods: pods, Jobs: jobs, Queues: queues, JobOf: JobOf})
	if err != nil {
		panic(err)
	}
	return s
}

// Claim adds a volume named volume that mounts the claim
// (spec.volumes[].persistentVolumeClaim).
func (p *PodWrapper) Claim(volume, claim string) *PodWrapper {
	return p.Volume(corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
}

// Ephemeral adds a generic ephemeral volume named volume whose claim
// template asks for class (spec.volumes[].ephemeral); its claim is
// <pod>-<volume> (EphemeralClaim makes one).
func (p *PodWrapper) Ephemeral(volume, class string) *PodWrapper {
	return p.Volume(corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		}},
	}})
}

// Volume adds a volume.
func (p *PodWrapper) Volume(v corev1.Volume) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	return p
}

// PVCWrapper builds a PersistentVolumeClaim.
type PVCWrapper struct{ corev1.PersistentVolumeClaim }

// MakePVC returns an unbound ReadWriteOnce claim namespace/name of 1Gi
// without a StorageClass.
func MakePVC(namespace, name string) *PVCWrapper {
	return &PVCWrapper{corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("pvc-" + namespace + "/" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}}
}

// Class sets spec.storageClassName.
func (c *PVCWrapper) Class(name string) *PVCWrapper {
	c.Spec.StorageClassName = &name
	return c
}

// AccessModes sets spec.accessModes.
func (c *PVCWrapper) AccessModes(modes ...corev1.PersistentVolumeAccessMode) *PVCWrapper {
	c.Spec.AccessModes = modes
	return c
}

// BoundTo binds the claim to volume as the PV controller does: the
// volume's name, the bind-completed annotation (what kube-scheduler takes
// for "bound") and phase Bound.
func (c *PVCWrapper) BoundTo(volume string) *PVCWrapper {
	c.Spec.VolumeName = volume
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
	c.Status.Phase = corev1.ClaimBound
	return c
}

// PreBound names a volume without the PV controller's having completed
// the binding: a user's pre-bound claim.
func (c *PVCWrapper) PreBound(volume string) *PVCWrapper {
	c.Spec.VolumeName = volume
	return c
}

// OwnedBy makes pod the claim's controller, as the ephemeral volume
// controller does for the claim of a pod's generic ephemeral volume.
func (c *PVCWrapper) OwnedBy(pod *corev1.Pod) *PVCWrapper {
	yes := true
	c.OwnerReferences = append(c.OwnerReferences, metav1.OwnerReference{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes, BlockOwnerDeletion: &yes,
	})
	return c
}

// Terminating marks the claim as being deleted.
func (c *PVCWrapper) Terminating() *PVCWrapper {
	now := metav1.NewTime(time.Unix(0, 0))
	c.DeletionTimestamp = &now
	return c
}

// Phase sets status.phase.
func (c *PVCWrapper) Phase(phase corev1.PersistentVolumeClaimPhase) *PVCWrapper {
	c.Status.Phase = phase
	return c
}

// Obj returns the claim.
func (c *PVCWrapper) Obj() *corev1.PersistentVolumeClaim { return &c.PersistentVolumeClaim }

// EphemeralClaim returns the claim the ephemeral volume controller makes
// for pod's generic ephemeral volume: <pod>-<volume>, owned by the pod.
func EphemeralClaim(pod *corev1.Pod, volume string) *PVCWrapper {
	return MakePVC(pod.Namespace, pod.Name+"-"+volume).OwnedBy(pod)
}

// PVWrapper builds a PersistentVolume.
type PVWrapper struct{ corev1.PersistentVolume }

// MakePV returns an available 1Gi ReadWriteOnce volume with no source
// until Local or CSI gives it one.
func MakePV(name string) *PVWrapper {
	return &PVWrapper{corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pv-" + name)},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}}
}

// Local makes it a local volume at path on node: a local volume must
// have node affinity, here kubernetes.io/hostname In [node].
func (v *PVWrapper) Local(node, path string) *PVWrapper {
	v.Spec.Local = &corev1.LocalVolumeSource{Path: path}
	return v.NodeAffinity(corev1.LabelHostname, node)
}

// NodeAffinity adds a required node affinity term: key In values.
func (v *PVWrapper) NodeAffinity(key string, values ...string) *PVWrapper {
	if v.Spec.NodeAffinity == nil {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
	}
	req := v.Spec.NodeAffinity.Required
	req.NodeSelectorTerms = append(req.NodeSelectorTerms, corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
	})
	return v
}

// CSI makes it a volume of a CSI driver, with handle.
func (v *PVWrapper) CSI(driver, handle string) *PVWrapper {
	v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
	return v
}

// Label sets a label (a zone, for VolumeZone).
func (v *PVWrapper) Label(k, val string) *PVWrapper {
	metav1.SetMetaDataLabel(&v.ObjectMeta, k, val)
	return v
}

// ClaimRef binds the volume to claim namespace/name (phase Bound).
func (v *PVWrapper) ClaimRef(namespace, name string) *PVWrapper {
	v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: name}
	v.Status.Phase = corev1.VolumeBound
	return v
}

// Obj returns the volume.
func (v *PVWrapper) Obj() *corev1.PersistentVolume { return &v.PersistentVolume }

// MakeStorageClass returns a StorageClass of a made-up provisioner that
// binds in mode.
func MakeStorageClass(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "example.com/" + name,
		VolumeBindingMode: &mode,
	}
}

// CSINodeWrapper builds a CSINode.
type CSINodeWrapper struct{ storagev1.CSINode }

// MakeCSINode returns the CSINode of node, without drivers.
func MakeCSINode(node string) *CSINodeWrapper {
	return &CSINodeWrapper{storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}}
}

// Driver adds a driver that can attach count volumes to the node; a
// negative count leaves allocatable unset (no limit).
func (n *CSINodeWrapper) Driver(name string, count int32) *CSINodeWrapper {
	d := storagev1.CSINodeDriver{Name: name, NodeID: n.Name}
	if count >= 0 {
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	n.Spec.Drivers = append(n.Spec.Drivers, d)
	return n
}

// Obj returns the CSINode.
func (n *CSINodeWrapper) Obj() *storagev1.CSINode { return &n.CSINode }

// MustSnapshotWithStorage is MustSnapshot with storage objects.
func MustSnapshotWithStorage(nodes []*corev1.Node, pods []*corev1.Pod, jobs []*api.JobInfo, storage api.StorageObjects) *api.Snapshot {
	s, err := api.NewSnapshot(api.Cluster{
		Nodes: nodes, Pods: pods, Jobs: jobs, Queues: []*api.QueueInfo{MakeQueue(api.DefaultQueue)},
		Storage: storage.Index(), JobOf: JobOf,
	})
	if err != nil {
		panic(err)
	}
	return s
}
