package api

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"
)

// TaskInfo is one pod as the scheduler sees it.
//
// What it derives from its pod object (taskDerived: requests, ports,
// parsed affinity, class, ...) is computed once, when the task is made, so
// the hot path never recomputes it; copies of a task share it read-only
// (api.TaskMemo gives every snapshot its own copy of each task, and a
// snapshot holds every pod of the cluster, so a copy is kept small).
// NodeName, Status, NominatedNode and StandIn are each copy's own: they
// change as a session places the task. Pod does not.
type TaskInfo struct {
	*taskDerived

	NodeName string
	Status   TaskStatus
	// NominatedNode is the pod's status.nominatedNodeName: where a
	// preemption made room for it (actions.Preempt writes it for a gang
	// it preempts for, kube-scheduler for its own pods), "" if none.
	NominatedNode string

	// StandIn says the task is the stand-in of another (StandInOn) for the
	// room kept for it: it does not run yet.
	StandIn bool
}

// taskDerived is what a task derives from its pod object alone.
type taskDerived struct {
	UID       TaskID
	Namespace string
	Name      string
	// Job is the gang the task belongs to, "" for pods no PodGroup owns (other
	// schedulers' pods, static pods): they only take node resources.
	Job JobID
	// Role is the pod's TaskRoleAnnotation, "" if unset.
	Role string

	Pod *corev1.Pod
	// Resreq is what the pod takes from a node (see PodRequests).
	Resreq Resource
	// ScalarRequests lists Resreq's non-zero scalars sorted by name: the hot
	// path walks this slice instead of starting a map iteration.
	ScalarRequests []ScalarQuantity
	// HostPorts are the host ports the pod binds on its node.
	HostPorts []corev1.ContainerPort
	// Priority is the pod's priority (spec.priority, 0 if unset).
	Priority          int32
	CreationTimestamp time.Time

	// Preempted says the pod carries a DisruptionTarget condition with
	// reason PreemptionByScheduler: some scheduler (this one or another)
	// decided to delete it to make room. Its gang is being preempted.
	Preempted bool
	// Controlled says the pod has a controller (an ownerReference with
	// controller set) that recreates it if it is deleted. The scheduler
	// never deletes a pod without one to reclaim a partial gang: nothing
	// would bring it back.
	Controlled bool

	// RequiredAffinity is the parsed nodeSelector plus required node
	// affinity. Parsing builds label selectors, so it is done once per task,
	// not once per node.
	RequiredAffinity nodeaffinity.RequiredNodeAffinity
	// Rules are the pod's rules relative to other pods (pod affinity and
	// anti-affinity, topology spread) and its node preferences, parsed;
	// nil for a pod without any. Set for every pod, placed or not: a
	// running pod's anti-affinity binds those placed after it.
	Rules *PodRules
	// labelsHash caches LabelsHash; 0 until asked.
	labelsHash uint64
	// Features are the placement rules of the pod that only some plugin
	// honours (see PodFeature); set for gang tasks and pending pods.
	Features []PodFeature

	// ClassHash and ClassSignature identify the pod's scheduling constraints
	// (see classSignature). Tasks of one job and role with the same signature
	// are interchangeable for predicates.
	//
	// RequiredAffinity and the class are set for gang tasks and pending
	// pods: what the scheduler may place or move. Other schedulers' running
	// pods only need requests and ports, and there can be many of them.
	ClassHash      uint64
	ClassSignature string
}

// NewTaskInfo makes the task for a pod of job ("" for pods of no gang).
func NewTaskInfo(job JobID, pod *corev1.Pod) *TaskInfo {
	t := &TaskInfo{
		taskDerived: &taskDerived{
			UID:               TaskID(pod.UID),
			Namespace:         pod.Namespace,
			Name:              pod.Name,
			Job:               job,
			Role:              pod.Annotations[TaskRoleAnnotation],
			Pod:               pod,
			Resreq:            PodRequests(pod),
			HostPorts:         hostPorts(pod),
			Priority:          corev1helpers.PodPriority(pod),
			CreationTimestamp: pod.CreationTimestamp.Time,
			Preempted:         preempted(pod),
			Controlled:        metav1.GetControllerOfNoCopy(pod) != nil,
			Rules:             newPodRules(pod),
		},
		NodeName:      pod.Spec.NodeName,
		Status:        statusOf(pod),
		NominatedNode: pod.Status.NominatedNodeName,
	}
	t.ScalarRequests = scalarRequests(&t.Resreq)
	if job != "" || t.Status == Pending {
		t.Features = podFeatures(pod)
		t.RequiredAffinity = nodeaffinity.GetRequiredNodeAffinity(pod)
		t.ClassSignature = classSignature(pod, &t.Resreq, t.HostPorts)
		h := fnv.New64a()
		h.Write([]byte(t.ClassSignature))
		t.ClassHash = h.Sum64()
	}
	return t
}

// Shape is what placing tasks, in this order, depends on of the tasks
// themselves: each one's role and class signature, and with withLabels
// its labels (when some predicate matches selectors against them; see
// framework.Session.LabelSensitive). Two lists of one shape are placed
// alike on the same nodes. False when a task has no class signature.
func Shape(tasks []*TaskInfo, withLabels bool) (string, bool) {
	size := 0
	for _, t := range tasks {
		size += len(t.Role) + len(t.ClassSignature) + 2
		if withLabels {
			size += 1 + binary.MaxVarintLen64
		}
	}
	var b strings.Builder
	b.Grow(size) // one allocation, not one per doubling
	var hash [binary.MaxVarintLen64]byte
	for _, t := range tasks {
		if t.ClassSignature == "" {
			return "", false
		}
		b.WriteString(t.Role)
		b.WriteByte(0x1f)
		b.WriteString(t.ClassSignature)
		if withLabels {
			b.WriteByte(0x1f)
			b.Write(binary.AppendUvarint(hash[:0], t.LabelsHash()))
		}
		b.WriteByte(0x1e)
	}
	return b.String(), true
}

// ShapeHash hashes what Shape encodes without building it, for grouping
// lists by shape where a string per list would cost more than the rest of
// the grouping: lists of one shape hash alike, and SameShape tells apart
// those of different shapes that hash alike. False when a task has no
// class signature.
func ShapeHash(tasks []*TaskInfo, withLabels bool) (uint64, bool) {
	const prime = 1099511628211 // FNV-1a's, as the class hash
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * prime }
	for _, t := range tasks {
		if t.ClassSignature == "" {
			return 0, false
		}
		for i := range len(t.Role) {
			mix(uint64(t.Role[i]))
		}
		mix(0x1f)
		mix(t.ClassHash)
		if withLabels {
			mix(t.LabelsHash())
		}
		mix(0x1e)
	}
	return h, true
}

// SameShape reports whether two lists, each with every class signature
// set, have one Shape.
func SameShape(a, b []*TaskInfo, withLabels bool) bool {
	return slices.EqualFunc(a, b, func(x, y *TaskInfo) bool {
		return x.Role == y.Role && x.ClassSignature == y.ClassSignature && (!withLabels || x.LabelsHash() == y.LabelsHash())
	})
}

// scalarRequests lists r's non-zero scalars sorted by name.
func scalarRequests(r *Resource) []ScalarQuantity {
	var out []ScalarQuantity
	for _, name := range r.ScalarNames() {
		out = append(out, ScalarQuantity{Name: name, Value: r.Scalars[name]})
	}
	return out
}

// StandInOn returns the stand-in of t for the room kept for it on node
// (NodeInfo.Reserve and AddStandIn): a copy of t placed there, asking took
// (what was kept of its requests; the part still held by leaving pods
// is theirs until they go), with a UID of its own, since whatever keeps
// state by task UID must not take it for t, which a later session places.
func (t *TaskInfo) StandInOn(node string, took Resource) *TaskInfo {
	d := *t.taskDerived
	d.UID += standInSuffix
	d.Resreq, d.ScalarRequests = took, scalarRequests(&took)
	n := *t
	n.taskDerived = &d
	n.NodeName, n.Status, n.StandIn = node, Allocated, true
	return &n
}

// standInSuffix makes the UID of a stand-in.
const standInSuffix = "/stand-in"

// ScalarQuantity is an amount of one scalar resource.
type ScalarQuantity struct {
	Name  corev1.ResourceName
	Value int64
}

// Copies is how many copies of t's requests (and pod slots) avail holds:
// the room a node with avail idle has for tasks of t's shape.
func (t *TaskInfo) Copies(avail *Resource) int {
	r := &t.Resreq
	k := int(avail.Pods)
	if r.Pods > 0 {
		k = int(avail.Pods / r.Pods)
	}
	limit := func(want, have int64) {
		if want > 0 {
			k = min(k, int(have/want))
		}
	}
	limit(r.MilliCPU, avail.MilliCPU)
	limit(r.Memory, avail.Memory)
	limit(r.EphemeralStorage, avail.EphemeralStorage)
	for _, s := range t.ScalarRequests {
		limit(s.Value, avail.Scalar(s.Name))
	}
	return k
}

// FitsIn is t.Resreq.LessEqual(avail) for the hot path: the same rule, with
// the scalars read from ScalarRequests.
func (t *TaskInfo) FitsIn(avail *Resource) bool {
	r := &t.Resreq
	if r.MilliCPU > 0 && r.MilliCPU > avail.MilliCPU ||
		r.Memory > 0 && r.Memory > avail.Memory ||
		r.EphemeralStorage > 0 && r.EphemeralStorage > avail.EphemeralStorage ||
		r.Pods > 0 && r.Pods > avail.Pods {
		return false
	}
	for _, s := range t.ScalarRequests {
		if s.Value > 0 && s.Value > avail.Scalars[s.Name] {
			return false
		}
	}
	return true
}

// AddRequestsTo adds the task's requests to r: r.Add(&t.Resreq), with
// the scalars read from ScalarRequests. Every session adds every task's
// requests to some account (a node, a queue, a job's share) several
// times, and ranging over Resreq's map costs several times walking a
// slice: Go starts each map iteration at a random place.
func (t *TaskInfo) AddRequestsTo(r *Resource) { t.addRequests(r, 1) }

// SubRequestsFrom is r.Sub(&t.Resreq), as AddRequestsTo.
func (t *TaskInfo) SubRequestsFrom(r *Resource) { t.addRequests(r, -1) }

func (t *TaskInfo) addRequests(r *Resource, sign int64) {
	q := &t.Resreq
	r.MilliCPU += sign * q.MilliCPU
	r.Memory += sign * q.Memory
	r.EphemeralStorage += sign * q.EphemeralStorage
	r.Pods += sign * q.Pods
	for _, s := range t.ScalarRequests {
		r.AddScalar(s.Name, sign*s.Value)
	}
}

// Key returns "namespace/name", for messages.
func (t *TaskInfo) Key() string {
	return t.Namespace + "/" + t.Name
}

// statusOf derives a task's status from the pod as stored. Terminal phases
// come first: a deleted pod that already finished holds nothing.
func statusOf(pod *corev1.Pod) TaskStatus {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return Succeeded
	case corev1.PodFailed:
		return Failed
	}
	if pod.DeletionTimestamp != nil {
		return Releasing
	}
	if pod.Spec.NodeName == "" {
		if len(pod.Spec.SchedulingGates) > 0 {
			return Gated
		}
		return Pending
	}
	if pod.Status.Phase == corev1.PodRunning {
		return Running
	}
	return Bound
}

// preempted reports whether a scheduler marked the pod for deletion by
// preemption, as kube-scheduler and this scheduler do before they delete
// a victim (the DisruptionTarget condition, reason PreemptionByScheduler).
func preempted(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.DisruptionTarget {
			return c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// hostPorts lists the host ports a pod binds, as kube-scheduler's NodePorts
// plugin reads them: regular containers and restartable init containers
// (sidecars), which run for the pod's whole life; ordinary init containers
// have exited before the others start.
func hostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// LabelsHash identifies the pod's labels: predicates that match other
// pods' selectors against them answer alike for equal hashes. It is
// computed on first ask: only sessions with such predicates need it.
func (t *TaskInfo) LabelsHash() uint64 {
	if t.labelsHash == 0 {
		t.labelsHash = labelsHash(t.Pod.Labels) | 1 // never 0: 0 is "not yet"
	}
	return t.labelsHash
}

// classSignature encodes every field of a pod that a predicate may read,
// but its labels: resource requests (so that "no node fits" holds for the
// whole class), nodeSelector, affinity, tolerations, host ports, topology
// spread constraints, and the claims of its volumes. Two pods with equal
// signatures get equal static predicate answers on every node. Fields are
// written length-prefixed in a fixed order, maps sorted, so the encoding
// is canonical.
//
// Labels are left out on purpose: the operator gives every member its own
// (the replica index), and with them every pod would be a class of its
// own. Only the dynamic predicates that match other pods' selectors read
// them (LabelsHash; see framework.Session.FitKey).
//
// Claims are in because where a pod may go depends on which volumes its
// claims are bound to (a local volume pins it to one node), so members of
// one role with a claim each (a StatefulSet-like volume per replica) are
// classes of their own; members that share a claim, or have none, still
// share a class. They are written as the claims' names, with the
// namespace, which claim names are relative to: two gangs with a claim
// "data" each in two namespaces must not share an answer (the refusal of
// one gang's shape stands for the other's, see actions.refusals). A
// generic ephemeral volume's claim is named after the pod and the volume
// (ephemeral.VolumeClaimName), so a pod with one is a class of its own:
// each member's claim is bound to its own volume.
func classSignature(pod *corev1.Pod, req *Resource, ports []corev1.ContainerPort) string {
	var e sigEncoder
	e.int(req.MilliCPU)
	e.int(req.Memory)
	e.int(req.EphemeralStorage)
	e.int(req.Pods)
	names := req.ScalarNames()
	e.int(int64(len(names)))
	for _, n := range names {
		e.str(string(n))
		e.int(req.Scalars[n])
	}

	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.int(int64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(pod.Spec.NodeSelector[k])
	}

	if pod.Spec.Affinity != nil {
		// Affinity is a deep tree; encoding/json writes struct fields in
		// declaration order and map keys sorted, which is canonical enough.
		// It cannot fail for these plain types.
		a, _ := json.Marshal(pod.Spec.Affinity)
		e.str(string(a))
	} else {
		e.str("")
	}

	e.int(int64(len(pod.Spec.Tolerations)))
	for _, t := range pod.Spec.Tolerations {
		e.str(t.Key)
		e.str(string(t.Operator))
		e.str(t.Value)
		e.str(string(t.Effect))
		if t.TolerationSeconds != nil {
			e.int(1)
			e.int(*t.TolerationSeconds)
		} else {
			e.int(0)
		}
	}

	e.int(int64(len(ports)))
	for _, p := range ports {
		e.str(p.HostIP)
		e.str(string(p.Protocol))
		e.int(int64(p.HostPort))
	}

	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		c, _ := json.Marshal(pod.Spec.TopologySpreadConstraints)
		e.str(string(c))
	} else {
		e.str("")
	}

	// The kind is written too: the rules for a generic ephemeral volume's
	// claim differ (it must be the pod's own), and pod "p"'s ephemeral
	// volume "v" has the claim name of a persistentVolumeClaim "p-v".
	n := 0
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			n++
		}
	}
	e.int(int64(n))
	if n > 0 {
		e.str(pod.Namespace)
		for i := range pod.Spec.Volumes {
			switch v := &pod.Spec.Volumes[i]; {
			case v.PersistentVolumeClaim != nil:
				e.int(0)
				e.str(v.PersistentVolumeClaim.ClaimName)
			case v.Ephemeral != nil:
				e.int(1)
				e.str(ephemeral.VolumeClaimName(pod, v))
			}
		}
	}
	return string(e.b)
}

type sigEncoder struct{ b []byte }

func (e *sigEncoder) int(v int64) { e.b = binary.AppendVarint(e.b, v) }

func (e *sigEncoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

// TaskLess is the default task order: higher pod priority first, then
// older, then by namespace/name, then UID. It is total, so sorting with it
// is deterministic.
func TaskLess(l, r *TaskInfo) bool {
	if l.Priority != r.Priority {
		return l.Priority > r.Priority
	}
	if !l.CreationTimestamp.Equal(r.CreationTimestamp) {
		return l.CreationTimestamp.Before(r.CreationTimestamp)
	}
	if l.Namespace != r.Namespace {
		return l.Namespace < r.Namespace
	}
	if l.Name != r.Name {
		return l.Name < r.Name
	}
	return l.UID < r.UID
}
