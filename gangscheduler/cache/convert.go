package cache

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Objects are the API objects one snapshot is built from. They are
// read-only: they may be the informers' own copies.
type Objects struct {
	Nodes           []*corev1.Node
	Pods            []*corev1.Pod
	PodGroups       []*schedulingv1alpha1.PodGroup
	Queues          []*schedulingv1alpha1.Queue
	PriorityClasses []*schedulingv1.PriorityClass
	Namespaces      []*corev1.Namespace
	Topologies      []*schedulingv1alpha1.Topology
	// Storage looks up the claims, volumes, StorageClasses and CSINodes;
	// nil for none (api.Cluster.Storage).
	Storage api.StorageSource
	// NodesUnchanged says Nodes is left out: the nodes are the objects of
	// the last state the same Builder built (api.Cluster.NodesUnchanged).
	NodesUnchanged bool
}

// State is what one cycle works on: the snapshot, and the PodGroups and
// Queues it was built from, whose status the cycle writes at commit. The
// objects are read-only (they are the informers' own); the snapshot belongs
// to the cycle.
type State struct {
	Snapshot  *api.Snapshot
	PodGroups map[api.JobID]*schedulingv1alpha1.PodGroup
	Queues    map[api.QueueID]*schedulingv1alpha1.Queue
}

// Build makes a cycle's state from objects. Pods whose spec.schedulerName
// is schedulerName and whose group annotation names a PodGroup of their
// namespace become that gang's tasks; every other pod only takes room on
// its node.
func Build(objs Objects, schedulerName string) (*State, error) {
	return build(objs, schedulerName, nil, nil, nil)
}

// Builder builds one cycle's state after another, as Build does, carrying
// from each to the next what depends on the node objects alone (see
// api.NodeMemo), on each pod alone (api.TaskMemo) and on each PodGroup
// alone (jobMemo): a cycle then costs little per node, pod or gang that did
// not change.
// The zero value (with SchedulerName set) is ready to use. Not safe for
// concurrent use.
type Builder struct {
	SchedulerName string
	nodes         api.NodeMemo
	// tasks takes the Cache's primed tasks (its Primer), when a Cache
	// made the builder.
	tasks api.TaskMemo
	jobs  jobMemo
}

// Build is Build for the next cycle.
func (b *Builder) Build(objs Objects) (*State, error) {
	return build(objs, b.SchedulerName, &b.nodes, &b.tasks, &b.jobs)
}

// TasksDerived is how many tasks the builder's cycles derived from their
// pods themselves, neither carried from an earlier cycle nor primed.
func (b *Builder) TasksDerived() uint64 { return b.tasks.Derived() }

func build(objs Objects, schedulerName string, nodes *api.NodeMemo, tasks *api.TaskMemo, memo *jobMemo) (*State, error) {
	prio := NewPriorities(objs.PriorityClasses)
	st := &State{
		PodGroups: make(map[api.JobID]*schedulingv1alpha1.PodGroup, len(objs.PodGroups)),
		Queues:    make(map[api.QueueID]*schedulingv1alpha1.Queue, len(objs.Queues)),
	}
	jobs := memo.jobs(objs.PodGroups, prio)
	for i, job := range jobs {
		st.PodGroups[job.UID] = objs.PodGroups[i]
	}
	queues := make([]*api.QueueInfo, 0, len(objs.Queues))
	for _, q := range objs.Queues {
		qi := QueueInfoFromQueue(q)
		st.Queues[qi.Name] = q
		queues = append(queues, qi)
	}
	snap, err := api.NewSnapshot(api.Cluster{
		Nodes:      objs.Nodes,
		Pods:       objs.Pods,
		Jobs:       jobs,
		Queues:     queues,
		Namespaces: objs.Namespaces,
		Topologies: topologies(objs.Topologies),
		Storage:    objs.Storage,
		JobOf:      JobOf(schedulerName),
		Memo:       nodes,
		Tasks:      tasks,

		NodesUnchanged: objs.NodesUnchanged,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	st.Snapshot = snap
	return st, nil
}

// JobOf returns the gang of a pod this scheduler places: its
// spec.schedulerName is schedulerName and its group annotation names the
// PodGroup, in the pod's own namespace. A pod of another scheduler is
// never a task, even if it names a group: its scheduler decides where it
// goes, and this one only accounts for it once it is on a node.
func JobOf(schedulerName string) api.JobOfFunc {
	return func(pod *corev1.Pod) (api.JobID, bool) {
		if pod.Spec.SchedulerName != schedulerName {
			return "", false
		}
		group := pod.Annotations[schedulingv1alpha1.PodGroupNameAnnotation]
		if group == "" {
			return "", false
		}
		return api.NewJobID(pod.Namespace, group), true
	}
}

// JobInfoFromPodGroup maps a PodGroup to a gang without tasks.
//
//   - spec.queue "" is the default queue (the API server defaults it, but
//     a PodGroup stored before the default existed may lack it);
//   - the priority is the value of spec.priorityClassName (see
//     Priorities);
//   - a phase never written is Pending, so an unadmitted gang reads as one.
func JobInfoFromPodGroup(pg *schedulingv1alpha1.PodGroup, prio Priorities) *api.JobInfo {
	job := api.NewJobInfo(pg.Namespace, pg.Name)
	job.MinMember = pg.Spec.MinMember
	if len(pg.Spec.MinTaskMember) > 0 {
		job.MinTaskMember = maps.Clone(pg.Spec.MinTaskMember)
	}
	if pg.Spec.Queue != "" {
		job.Queue = api.QueueID(pg.Spec.Queue)
	}
	job.Priority = prio.Value(pg.Spec.PriorityClassName)
	job.CreationTimestamp = pg.CreationTimestamp.Time
	job.Phase = api.JobPhase(pg.Status.Phase)
	if job.Phase == "" {
		job.Phase = api.JobPending
	}
	job.MinResources = api.NewResource(pg.Spec.MinResources)
	job.Topology = TopologyPolicyOf(pg.Spec.Topology)
	return job
}

// TopologyPolicyOf maps a PodGroup's topology policy; nil for none. The
// topology's name defaults to "default", a rule's kind to Pack.
func TopologyPolicyOf(t *schedulingv1alpha1.PodGroupTopology) *api.TopologyPolicy {
	if t == nil {
		return nil
	}
	p := &api.TopologyPolicy{Topology: t.TopologyName, Roles: slices.Clone(t.Roles)}
	if p.Topology == "" {
		p.Topology = schedulingv1alpha1.DefaultTopologyName
	}
	deref := func(v *int32) int {
		if v == nil {
			return 0
		}
		return int(*v)
	}
	for _, l := range t.Levels {
		r := api.LevelRule{Level: l.Level, Kind: api.RuleKind(l.Policy), Partitions: deref(l.Partitions), Factor: deref(l.Factor), Required: l.Required}
		if r.Kind == "" {
			r.Kind = api.RulePack
		}
		if l.Range != nil {
			r.Min, r.Max = deref(l.Range.Min), deref(l.Range.Max)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

// topologies maps the Topology objects.
func topologies(ts []*schedulingv1alpha1.Topology) []*api.TopologyInfo {
	out := make([]*api.TopologyInfo, 0, len(ts))
	for _, t := range ts {
		info := &api.TopologyInfo{Name: t.Name}
		for _, l := range t.Spec.Levels {
			info.Levels = append(info.Levels, api.TopologyLevel{Name: l.Name, NodeLabel: l.NodeLabel})
		}
		out = append(out, info)
	}
	return out
}

// QueueInfoFromQueue maps a Queue. The scheduler acts on spec.state (what
// the administrator asked for); status.state only reports it. Weight 0
// cannot pass validation but reads as 1, the default, rather than as "no
// share at all".
func QueueInfoFromQueue(q *schedulingv1alpha1.Queue) *api.QueueInfo {
	qi := &api.QueueInfo{
		Name:       api.QueueID(q.Name),
		Weight:     q.Spec.Weight,
		Capability: api.NewResource(q.Spec.Capability),
		State:      api.QueueOpen,
	}
	if qi.Weight <= 0 {
		qi.Weight = 1
	}
	if q.Spec.State == schedulingv1alpha1.QueueStateClosed {
		qi.State = api.QueueClosed
	}
	return qi
}

// Priorities resolves PriorityClass names to values as the API server's
// Priority admission does for pods: a named class gives its value; no name
// gives the global default class's value (the lowest, should several claim
// to be the default), or 0 without one. A name with no class also gives 0:
// unlike a pod, a PodGroup is not rejected for naming a missing class, and
// it should still be scheduled.
type Priorities struct {
	byName        map[string]int32
	globalDefault int32
}

// NewPriorities indexes PriorityClasses.
func NewPriorities(pcs []*schedulingv1.PriorityClass) Priorities {
	p := Priorities{byName: make(map[string]int32, len(pcs))}
	haveDefault := false
	for _, pc := range pcs {
		p.byName[pc.Name] = pc.Value
		if pc.GlobalDefault && (!haveDefault || pc.Value < p.globalDefault) {
			p.globalDefault, haveDefault = pc.Value, true
		}
	}
	return p
}

// Value is the priority of a PodGroup that names class.
func (p Priorities) Value(class string) int32 {
	if class == "" {
		return p.globalDefault
	}
	return p.byName[class]
}

// assumedTTL bounds how long a bound-but-not-yet-seen pod is trusted
// (see assumedPods).
const assumedTTL = 2 * time.Minute
