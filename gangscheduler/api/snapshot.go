package api

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// QueueState says whether a queue takes new work.
type QueueState string

const (
	// QueueOpen queues get their jobs scheduled.
	QueueOpen QueueState = "Open"
	// QueueClosed queues keep what runs but get nothing new placed.
	QueueClosed QueueState = "Closed"
)

// QueueInfo is one queue.
type QueueInfo struct {
	Name QueueID
	// Weight is the queue's share of the cluster relative to other queues.
	Weight int32
	// Capability caps what the queue's jobs may hold in total; a zero
	// Capability means no cap. Carried for the queue-share plugin; the
	// allocate action does not read it.
	Capability Resource
	State      QueueState
}

// IsOpen reports whether the queue takes new work.
func (q *QueueInfo) IsOpen() bool { return q.State != QueueClosed }

// Snapshot is the cluster as one scheduling cycle sees it. A session takes
// ownership and changes it as it places tasks (task status, node
// accounting); the cache builds a fresh one for every cycle, and may
// reuse the nodes of one the cycle has released (Release).
type Snapshot struct {
	Nodes map[string]*NodeInfo
	// NodeList is every node sorted by name; NodeList[i].Index == i. Scanning
	// it in order makes "first best node" deterministic.
	NodeList []*NodeInfo
	Jobs     map[JobID]*JobInfo
	Queues   map[QueueID]*QueueInfo
	// Namespaces are the labels of each namespace, by name: what a pod
	// affinity term's namespaceSelector reads.
	Namespaces map[string]labels.Set
	// Topologies are the cluster's Topology objects, by name.
	Topologies map[string]*TopologyInfo
	// storage reads the claims, volumes, classes and CSINodes, once each
	// (PersistentVolumeClaim and the other lookups); nil for none.
	storage *storageView
	// Now is the time the decisions are made at: what time-dependent rules
	// (the partial-gang grace period) compare against, so that a session
	// stays a function of its snapshot. The scheduler sets it when the
	// cycle starts.
	Now time.Time

	// total is the sum of the nodes' allocatable; read-only (it may be a
	// NodeMemo's).
	total Resource
	// labels are the label indexes of NodeList (NodesByLabel), shared
	// with the other snapshots of the same nodes.
	labels *labelIndexes
	// preferNoSchedule: some node has a PreferNoSchedule taint.
	preferNoSchedule bool
	// nodes hold Nodes and NodeList; memo, if not nil, takes them back on
	// Release.
	nodes *nodeArena
	memo  *NodeMemo
}

// Release ends the snapshot's use: the NodeMemo it was built with may
// make its nodes over for the next snapshot. The snapshot, its Nodes and
// NodeList must not be used after; they are cleared so that a use fails
// at once. Release is for whoever owns the snapshot, once (a scheduling
// cycle, after its commit); a snapshot never released is simply not
// reused.
func (s *Snapshot) Release() {
	if s.nodes != nil {
		s.memo.release(s.nodes)
	}
	s.nodes, s.memo, s.Nodes, s.NodeList = nil, nil, nil, nil
}

// TotalAllocatable returns the sum of every node's allocatable: the
// cluster the queues and jobs share. The queue-share plugins read it at
// every session's start; the snapshot sums it once (or takes a NodeMemo's,
// when no node changed).
func (s *Snapshot) TotalAllocatable() Resource { return s.total.Clone() }

// PreferNoScheduleTaints reports whether some node has a PreferNoSchedule
// taint: only then does the node order score tolerations.
func (s *Snapshot) PreferNoScheduleTaints() bool { return s.preferNoSchedule }

// NodesTaken returns every node that has taken a task in this snapshot,
// loading the pods on it or placing one, in NodeList order; some may hold
// none any more. Every other node is empty: it has no tasks, and its Idle
// is its Allocatable. A walk over the tasks on nodes, or a sum over all
// nodes from TotalAllocatable, need only visit these, which in a large
// cluster with little running are far fewer than NodeList.
func (s *Snapshot) NodesTaken() []*NodeInfo {
	idx := slices.Sorted(slices.Values(s.nodes.touched))
	out := make([]*NodeInfo, len(idx))
	for i, j := range idx {
		out[i] = s.NodeList[j]
	}
	return out
}

// JobOfFunc tells which gang a pod belongs to, if any. The cache provides it
// (it knows the PodGroup annotation or label); tests use their own.
type JobOfFunc func(pod *corev1.Pod) (JobID, bool)

// Cluster is the plain input of a snapshot.
type Cluster struct {
	Nodes []*corev1.Node
	// Pods is every pod in the cluster, whoever schedules it.
	Pods []*corev1.Pod
	// Jobs are the gangs (one per PodGroup), without tasks: NewSnapshot adds
	// each pod to the job JobOf names.
	Jobs   []*JobInfo
	Queues []*QueueInfo
	// Namespaces are every namespace, for their labels.
	Namespaces []*corev1.Namespace
	// Topologies are the Topology objects.
	Topologies []*TopologyInfo
	// Storage looks up the claims, volumes, StorageClasses and CSINodes
	// that the snapshot's pods use; nil means there are none.
	Storage StorageSource
	// JobOf may be nil: then no pod belongs to a gang.
	JobOf JobOfFunc
	// Memo, if not nil, carries what NewSnapshot derives from Nodes alone
	// from one snapshot to the next (see NodeMemo).
	Memo *NodeMemo
	// Tasks, if not nil, carries what NewSnapshot derives from each pod
	// alone from one snapshot to the next (see TaskMemo).
	Tasks *TaskMemo
	// NodesUnchanged says that the nodes are the very objects of Memo's
	// last snapshot, none added, replaced or deleted since (an informer's
	// handlers know): NewSnapshot then takes them from the memo without
	// reading Nodes. Ignored without a memo that built a snapshot.
	NodesUnchanged bool
}

// NewSnapshot builds a snapshot from plain lists:
//   - every node;
//   - every pod with a node that is not terminal is accounted on it, whoever
//     scheduled it (pods on nodes not in the list are ignored: they cannot
//     take room on a node this scheduler may use);
//   - a pod whose job (JobOf) is one of Jobs becomes a task of that job;
//     pending pods of no known job are left alone (the cache will see their
//     PodGroup later).
//
// Duplicate names or UIDs are errors: they would double-count resources.
func NewSnapshot(c Cluster) (*Snapshot, error) {
	s := &Snapshot{
		Jobs:   make(map[JobID]*JobInfo, len(c.Jobs)),
		Queues: make(map[QueueID]*QueueInfo, len(c.Queues)),
		memo:   c.Memo,
	}
	set, err := c.Memo.nodes(c.Nodes, c.NodesUnchanged)
	if err != nil {
		return nil, err
	}
	s.total, s.labels, s.preferNoSchedule = set.total, set.labels, set.preferNoSchedule
	s.Namespaces = make(map[string]labels.Set, len(c.Namespaces))
	for _, ns := range c.Namespaces {
		s.Namespaces[ns.Name] = ns.Labels
	}
	s.Topologies = make(map[string]*TopologyInfo, len(c.Topologies))
	for _, t := range c.Topologies {
		s.Topologies[t.Name] = t
	}
	if c.Storage != nil {
		s.storage = newStorageView(c.Storage)
	}
	s.nodes = c.Memo.arena(set.sorted)
	s.Nodes, s.NodeList = s.nodes.byName, s.nodes.list
	for _, q := range c.Queues {
		if _, ok := s.Queues[q.Name]; ok {
			return nil, fmt.Errorf("queue %s listed twice", q.Name)
		}
		s.Queues[q.Name] = q
	}
	c.Tasks.begin(len(c.Pods))
	defer c.Tasks.end()
	for _, j := range c.Jobs {
		if _, ok := s.Jobs[j.UID]; ok {
			return nil, fmt.Errorf("job %s listed twice", j.UID)
		}
		if len(j.Tasks) != 0 {
			return nil, fmt.Errorf("job %s: NewSnapshot adds tasks from Pods; got a job with tasks", j.UID)
		}
		s.Jobs[j.UID] = j
		c.Tasks.listJob(j)
	}
	// Without a memo, a set of the UIDs listed finds one listed twice; a
	// memo finds it from its entries (TaskMemo.entry).
	var seen map[TaskID]struct{}
	if c.Tasks == nil {
		seen = make(map[TaskID]struct{}, len(c.Pods))
	}
	// A pod the memo knows is read from its entry, not from the object:
	// reading thousands of pod objects a cycle costs a miss of the
	// processor's cache each, a third of a steady snapshot's time.
	for _, pod := range c.Pods {
		e, twice := c.Tasks.entry(pod, c.JobOf)
		if e.uid == "" {
			return nil, fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
		}
		if seen != nil {
			_, twice = seen[e.uid]
			seen[e.uid] = struct{}{}
		}
		if twice {
			return nil, fmt.Errorf("pod %s/%s: UID %s listed twice", pod.Namespace, pod.Name, pod.UID)
		}
		var job *JobInfo
		if e.inJob {
			job = c.Tasks.job(e, s.Jobs)
		}
		var t *TaskInfo
		if job != nil {
			t = c.Tasks.task(e, job.UID, pod)
			if err := job.addUniqueTask(t); err != nil {
				return nil, err
			}
		} else {
			if pod.Spec.NodeName == "" {
				continue // another scheduler's pending pod, or a gang not yet known
			}
			t = c.Tasks.task(e, "", pod)
		}
		if t.NodeName == "" || !t.Status.OccupiesNode() {
			continue
		}
		if n, ok := s.Nodes[t.NodeName]; ok {
			if err := n.AddTask(t); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}
