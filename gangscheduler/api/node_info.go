package api

import (
	"fmt"
	"iter"
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// NodeInfo is a node and what the pods on it take.
//
// Used counts every pod assigned to the node that is not terminal: this
// scheduler's, other schedulers', static and terminating pods alike, since
// the kubelet admits against all of them. Idle is kept equal to
// Allocatable - Used as tasks come and go, so the resource fit check is one
// comparison against Idle.
type NodeInfo struct {
	Name string
	Node *corev1.Node
	// Index is the node's position in Snapshot.NodeList (sorted by name).
	// Per-node caches are slices indexed by it rather than maps.
	Index int

	// Allocatable is read-only: snapshots built with a NodeMemo share it
	// (its Scalars map) with the snapshots before and after them.
	Allocatable Resource
	Used        Resource
	// Idle changes only through AddTask, RemoveTask and Hold: it starts out
	// sharing Allocatable's Scalars, and they give it its own copy before
	// the first change to a scalar. Copying a map per GPU node per cycle
	// was most of what building a snapshot of an idle cluster cost.
	Idle Resource

	// Tasks are the tasks that occupy the node, by UID; nil while there
	// are none (most nodes of a snapshot need no map).
	Tasks map[TaskID]*TaskInfo

	// HeldFor is the gang that holds the node (Hold), "" if none.
	HeldFor JobID
	// held is what Hold and Reserve took of Idle; heldPorts the host ports
	// Reserve took.
	held      Resource
	heldPorts []corev1.ContainerPort
	// StandIns are the stand-ins (TaskInfo.StandInOn) of the tasks whose
	// room Reserve keeps here: not in Tasks, since they take nothing
	// more and no one may evict them, but counted by the rules between
	// pods (Occupants).
	StandIns []*TaskInfo

	ports     hostPortSet
	idleOwned bool
	// touched, if not nil, is where the node's index goes when it takes
	// its first task or a hold: the snapshot's list of the nodes to make
	// over when it is reused (nodeArena); listed says it is there.
	touched *[]int
	listed  bool
}

// NewNodeInfo returns an empty node: all of status.allocatable is idle. As in
// kube-scheduler, a node that reports no allocatable pods accepts none.
func NewNodeInfo(node *corev1.Node) *NodeInfo {
	n := &NodeInfo{}
	n.init(node, NewResource(node.Status.Allocatable), 0, nil)
	return n
}

// init makes n the empty node of node at index, with allocatable alloc
// (shared, read-only), in place: a snapshot makes all its nodes in one
// slice, and makes them over when it is reused. touched may be nil.
func (n *NodeInfo) init(node *corev1.Node, alloc Resource, index int, touched *[]int) {
	*n = NodeInfo{Name: node.Name, Node: node, Index: index, Allocatable: alloc, Idle: alloc, touched: touched}
}

// AddTask accounts a task on the node: it takes the task's requests and host
// ports. It is how the snapshot loads the pods already there and how a
// statement places a task tentatively.
func (n *NodeInfo) AddTask(t *TaskInfo) error {
	if _, ok := n.Tasks[t.UID]; ok {
		return fmt.Errorf("node %s: task %s (uid %s) added twice", n.Name, t.Key(), t.UID)
	}
	if n.Tasks == nil {
		n.Tasks = map[TaskID]*TaskInfo{}
		n.touch()
	}
	n.Tasks[t.UID] = t
	t.AddRequestsTo(&n.Used)
	n.ownIdleScalars(&t.Resreq)
	t.SubRequestsFrom(&n.Idle)
	for _, p := range t.HostPorts {
		n.ports.add(p)
	}
	return nil
}

// RemoveTask gives back what AddTask took.
func (n *NodeInfo) RemoveTask(t *TaskInfo) error {
	if _, ok := n.Tasks[t.UID]; !ok {
		return fmt.Errorf("node %s: task %s (uid %s) is not on it", n.Name, t.Key(), t.UID)
	}
	delete(n.Tasks, t.UID)
	t.SubRequestsFrom(&n.Used)
	n.ownIdleScalars(&t.Resreq)
	t.AddRequestsTo(&n.Idle)
	for _, p := range t.HostPorts {
		n.ports.remove(p)
	}
	return nil
}

// Hold gives what is idle on the node to job, for the rest of the
// session: Idle keeps only its pod slots, so that no task that requests
// a resource fits any more, while one that requests none still does (it
// takes nothing the holder waits for). A node holds for one job; a second
// Hold does nothing. The snapshot makes the node over before its next
// session, as for a node that took a task.
func (n *NodeInfo) Hold(job JobID) {
	if n.HeldFor != "" {
		return
	}
	n.HeldFor = job
	n.touch()
	n.ownIdleScalars(&n.Idle)
	take := n.Idle.Clone()
	take.Pods = 0
	n.held.Add(&take)
	n.Idle.Sub(&take)
}

// Reserve takes out of Idle, for the rest of the session, what r asks of
// each resource, pod slots included, as far as it is idle, and returns
// what it took; and it takes the host ports, so that no other pod takes
// one the gang's member needs there: room kept for a gang that waits for
// pods to leave the node, so that no other task takes the part that is
// free already (its pods will need their slots, as kube-scheduler counts
// a nominated pod). Unlike Hold, the rest of the node's room stays free,
// and the node holds for no one (HeldFor is unchanged).
func (n *NodeInfo) Reserve(r *Resource, ports []corev1.ContainerPort) Resource {
	take := Resource{
		MilliCPU:         idlePart(r.MilliCPU, n.Idle.MilliCPU),
		Memory:           idlePart(r.Memory, n.Idle.Memory),
		EphemeralStorage: idlePart(r.EphemeralStorage, n.Idle.EphemeralStorage),
		Pods:             idlePart(r.Pods, n.Idle.Pods),
	}
	for name, v := range r.Scalars {
		if part := idlePart(v, n.Idle.Scalar(name)); part > 0 {
			take.AddScalar(name, part)
		}
	}
	portsTaken := false
	for _, p := range ports {
		if p.HostPort > 0 {
			n.ports.add(p)
			n.heldPorts = append(n.heldPorts, p)
			portsTaken = true
		}
	}
	if take.IsZero() && !portsTaken {
		return take
	}
	n.touch()
	n.ownIdleScalars(&take)
	n.held.Add(&take)
	n.Idle.Sub(&take)
	return take
}

// AddStandIn lists t, the stand-in of a task whose room Reserve keeps on the
// node, among StandIns, for the rest of the session: the rules between
// pods (inter-pod affinity, topology spread, volume use) count it as on
// the node when another pod is placed, as kube-scheduler counts a
// nominated pod of higher priority when it filters another. So no pod
// lands there that the task's required anti-affinity selects, or whose
// own selects the task, or that uses a ReadWriteOncePod claim of the
// task's; and a rule the task would help meet (pod affinity, topology
// spread) must hold without it too, since it does not run yet. Unhold
// forgets it.
func (n *NodeInfo) AddStandIn(t *TaskInfo) {
	n.touch()
	n.StandIns = append(n.StandIns, t)
}

// Occupants yields what the rules between pods count as on the node: its
// tasks, then the StandIns.
func (n *NodeInfo) Occupants() iter.Seq[*TaskInfo] {
	return func(yield func(*TaskInfo) bool) {
		for _, t := range n.Tasks {
			if !yield(t) {
				return
			}
		}
		for _, t := range n.StandIns {
			if !yield(t) {
				return
			}
		}
	}
}

// Reserved reports whether Hold, Reserve or AddStandIn took anything of
// Idle or of the host ports, or added a stand-in.
func (n *NodeInfo) Reserved() bool {
	return !n.held.IsZero() || len(n.heldPorts) > 0 || len(n.StandIns) > 0
}

// idlePart is how much of want is idle: none of what the node lacks.
func idlePart(want, idle int64) int64 { return max(min(want, idle), 0) }

// Unhold gives back what Hold and Reserve took, host ports included, and
// forgets the StandIns.
func (n *NodeInfo) Unhold() {
	if n.HeldFor == "" && !n.Reserved() {
		return
	}
	n.Idle.Add(&n.held)
	for _, p := range n.heldPorts {
		n.ports.remove(p)
	}
	n.HeldFor, n.held, n.heldPorts, n.StandIns = "", Resource{}, nil, nil
}

// touch lists the node among the snapshot's changed nodes, once.
func (n *NodeInfo) touch() {
	if n.touched != nil && !n.listed {
		*n.touched = append(*n.touched, n.Index)
		n.listed = true
	}
}

// ownIdleScalars gives Idle its own Scalars map before a change by r
// would write to the one it shares with Allocatable. A request of no
// scalar (a CPU pod, such as a DaemonSet's on every node) changes no
// scalar and copies nothing.
func (n *NodeInfo) ownIdleScalars(r *Resource) {
	if n.idleOwned || len(r.Scalars) == 0 {
		return
	}
	n.Idle.Scalars = maps.Clone(n.Idle.Scalars)
	n.idleOwned = true
}

// PortsConflict reports whether any of the wanted host ports is already in
// use on the node, with kube-scheduler's rule: a port bound on 0.0.0.0
// conflicts with the same protocol and port on every IP, and a port on one IP
// conflicts with itself and with 0.0.0.0.
func (n *NodeInfo) PortsConflict(want []corev1.ContainerPort) bool {
	for _, p := range want {
		if n.ports.conflicts(p) {
			return true
		}
	}
	return false
}

const bindAllHostIP = "0.0.0.0"

type protoPort struct {
	protocol corev1.Protocol
	port     int32
}

type hostPort struct {
	ip string
	protoPort
}

// hostPortSet counts the host ports in use on a node. Counts rather than a
// set, so that removing one of two pods that (wrongly, e.g. placed by hand)
// share a port does not free it. anyIP counts per (protocol, port) over all
// IPs, so the 0.0.0.0 check is one lookup.
type hostPortSet struct {
	byIP  map[hostPort]int
	anyIP map[protoPort]int
}

func sanitize(p corev1.ContainerPort) hostPort {
	ip, proto := p.HostIP, p.Protocol
	if ip == "" {
		ip = bindAllHostIP
	}
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return hostPort{ip: ip, protoPort: protoPort{protocol: proto, port: p.HostPort}}
}

func (s *hostPortSet) add(p corev1.ContainerPort) {
	if p.HostPort <= 0 {
		return
	}
	if s.byIP == nil {
		s.byIP = map[hostPort]int{}
		s.anyIP = map[protoPort]int{}
	}
	hp := sanitize(p)
	s.byIP[hp]++
	s.anyIP[hp.protoPort]++
}

func (s *hostPortSet) remove(p corev1.ContainerPort) {
	if p.HostPort <= 0 || s.byIP == nil {
		return
	}
	hp := sanitize(p)
	if s.byIP[hp]--; s.byIP[hp] <= 0 {
		delete(s.byIP, hp)
	}
	if s.anyIP[hp.protoPort]--; s.anyIP[hp.protoPort] <= 0 {
		delete(s.anyIP, hp.protoPort)
	}
}

func (s *hostPortSet) conflicts(p corev1.ContainerPort) bool {
	if p.HostPort <= 0 || len(s.byIP) == 0 {
		return false
	}
	hp := sanitize(p)
	if hp.ip == bindAllHostIP {
		return s.anyIP[hp.protoPort] > 0
	}
	if s.byIP[hp] > 0 {
		return true
	}
	hp.ip = bindAllHostIP
	return s.byIP[hp] > 0
}
