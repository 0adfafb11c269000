// Package fit answers where troupe-scheduler would place a training job
// now, without creating it: the pods and PodGroup the operator would
// make for it are added to a snapshot of the cluster, and the scheduler's
// own decision code (scheduler.Decide, with its configured plugins and
// actions) runs over it. Decisions are a function of the snapshot, so the
// answer is the scheduler's answer on the cluster as it was read; the
// cluster may change before the job is created.
package fit

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/queues"
	"github.com/troupe-ml/troupe/gangscheduler/scheduler"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/troupe"
)

// Request is a job to place on a cluster.
type Request struct {
	Framework engine.Framework
	// Job is defaulted and valid (the API server's dry run says so).
	Job engine.Job
	// Cluster is what the scheduler would see. Objects of the job itself
	// (its pods, its PodGroup) are left out: the job is placed as new.
	Cluster cache.Objects
	// Actions and Plugins are the scheduler's configuration
	// (config.Config.Build).
	Actions []framework.Action
	Plugins []framework.Plugin
	// SchedulerName is troupe-scheduler's name on the cluster.
	SchedulerName string
	Now           time.Time
	// Admit returns a pod as the API server would store it (its
	// defaulting and admission: a server-side dry run). Nil applies the
	// defaults the scheduler depends on: requests from limits, and the
	// priority of the pod's class.
	Admit func(*corev1.Pod) (*corev1.Pod, error)
}

// Placement is where one member goes.
type Placement struct {
	Role, Pod, Node string
}

// Victim is a gang preemption would take pods from.
type Victim struct {
	Gang     string
	Priority int32
	Pods     []string
	// Whole: every pod of the gang on a node; else only members above
	// its minimum (it runs on).
	Whole bool
}

// Verdict is the scheduler's answer.
type Verdict struct {
	// Placed: the gang would be bound now, with its minimum at least.
	Placed bool
	// Placements are the members that would be bound; Waiting the
	// others (those above an elastic minimum that find no room, or all
	// of them when the gang is not placed).
	Placements []Placement
	Waiting    []Placement
	// Reason and Message are what the PodGroup's Unschedulable condition
	// would say ("" when placed whole).
	Reason, Message string
	// Victims are the gangs preemption takes for this one, which is then
	// placed once they are gone; PreemptionOn says whether the scheduler
	// runs the preempt action. When it does not, Victims are what it
	// would take with preempt on.
	Victims      []Victim
	PreemptionOn bool
}

// Evaluate places the request's job on a snapshot of its cluster.
func Evaluate(req Request) (Verdict, error) {
	objs, pods, id, err := withJob(req)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{PreemptionOn: slices.ContainsFunc(req.Actions, isPreempt)}
	d, snap, err := decide(objs, req, req.Actions)
	if err != nil {
		return Verdict{}, err
	}
	v.read(d, snap, id, pods)
	if !v.Placed && len(v.Victims) == 0 && !v.PreemptionOn {
		// What it would take with the preempt action on, after enqueue
		// as the configuration documents it.
		d, snap, err := decide(objs, req, withPreempt(req.Actions))
		if err != nil {
			return Verdict{}, err
		}
		v.Victims = victims(d, snap, id)
	}
	return v, nil
}

// withJob returns the cluster with the job's pods and PodGroup as the
// operator would create them, the pods, and the gang's id.
func withJob(req Request) (cache.Objects, []*corev1.Pod, api.JobID, error) {
	job := req.Job
	pods, err := engine.DesiredPods(req.Framework, troupe.Backend{}, job)
	if err != nil {
		return cache.Objects{}, nil, "", err
	}
	now := metav1.NewTime(req.Now)
	pg := &schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.GetName(), Namespace: job.GetNamespace(),
			UID: types.UID("fit-podgroup-" + job.GetName()), CreationTimestamp: now,
		},
		Spec: troupe.PodGroupSpec(engine.GangSpec(req.Framework, job)),
	}
	admit := req.Admit
	if admit == nil {
		admit = localDefaults(cache.NewPriorities(req.Cluster.PriorityClasses))
	}
	for i, p := range pods {
		if p.Spec.SchedulerName == troupe.SchedulerName {
			p.Spec.SchedulerName = req.SchedulerName
		}
		admitted, err := admit(p)
		if err != nil {
			return cache.Objects{}, nil, "", fmt.Errorf("pod %s: %w", p.Name, err)
		}
		admitted.UID = types.UID("fit-pod-" + p.Name)
		admitted.CreationTimestamp = now
		pods[i] = admitted
	}
	objs := req.Cluster
	if !slices.ContainsFunc(objs.Queues, func(q *schedulingv1alpha1.Queue) bool { return q.Name == schedulingv1alpha1.DefaultQueueName }) {
		// troupe-scheduler creates it when it starts.
		objs.Queues = append(slices.Clip(objs.Queues), queues.DefaultQueue())
	}
	objs.Pods = append(slices.Clip(objs.Pods), pods...)
	objs.PodGroups = append(slices.Clip(objs.PodGroups), pg)
	return objs, pods, api.JobID(job.GetNamespace() + "/" + job.GetName()), nil
}

// localDefaults is what the API server does to a new pod that the
// scheduler reads: extended resources given as limits only become
// requests, and Priority admission sets the priority of its class.
func localDefaults(classes cache.Priorities) func(*corev1.Pod) (*corev1.Pod, error) {
	return func(p *corev1.Pod) (*corev1.Pod, error) {
		p = p.DeepCopy()
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range cs {
				integrations.DefaultRequestsFromLimits(&cs[i].Resources)
			}
		}
		if p.Spec.Priority == nil {
			p.Spec.Priority = ptr.To(classes.Value(p.Spec.PriorityClassName))
		}
		return p, nil
	}
}

// decide builds the snapshot and runs the scheduler's decision over it.
func decide(objs cache.Objects, req Request, acts []framework.Action) (scheduler.Decision, *api.Snapshot, error) {
	state, err := cache.Build(objs, req.SchedulerName)
	if err != nil {
		return scheduler.Decision{}, nil, err
	}
	state.Snapshot.Now = req.Now
	return scheduler.Decide(state.Snapshot, req.Plugins, acts), state.Snapshot, nil
}

func isPreempt(a framework.Action) bool { return a.Name() == actions.NewPreempt().Name() }

// withPreempt is acts with preempt after enqueue (first without enqueue).
func withPreempt(acts []framework.Action) []framework.Action {
	at := slices.IndexFunc(acts, func(a framework.Action) bool { return a.Name() == actions.NewEnqueue().Name() }) + 1
	return slices.Insert(slices.Clone(acts), at, framework.Action(actions.NewPreempt()))
}

// read takes the decision about gang id, whose pods are pods.
func (v *Verdict) read(d scheduler.Decision, snap *api.Snapshot, id api.JobID, pods []*corev1.Pod) {
	node := map[string]string{}
	for _, b := range d.Bindings {
		if b.Task.Job == id {
			node[b.Task.Name] = b.Node
		}
	}
	v.Placed = len(node) > 0
	for _, p := range pods {
		pl := Placement{Role: p.Labels[kubeflowv1.ReplicaTypeLabel], Pod: p.Name, Node: node[p.Name]}
		if pl.Node != "" {
			v.Placements = append(v.Placements, pl)
		} else {
			v.Waiting = append(v.Waiting, pl)
		}
	}
	if f, ok := d.Findings[id]; ok {
		// As the PodGroup's condition says it: the diagnosis, when there
		// is one, in place of the finding's message.
		v.Reason, v.Message = f.Reason, cmp.Or(d.Diagnoses[id], f.Message)
	}
	v.Victims = victims(d, snap, id)
}

// victims are the gangs whose pods the decision evicts for gang id, in
// the order they were taken.
func victims(d scheduler.Decision, snap *api.Snapshot, id api.JobID) []Victim {
	reason := fmt.Sprintf("Preempted by gang %s", id)
	byGang := map[api.JobID]*Victim{}
	var order []api.JobID
	for _, e := range d.Evictions {
		if e.Reason != reason {
			continue
		}
		g := e.Task.Job
		if byGang[g] == nil {
			byGang[g] = &Victim{Gang: string(g)}
			if job := snap.Jobs[g]; job != nil {
				byGang[g].Priority = job.Priority
			}
			order = append(order, g)
		}
		byGang[g].Pods = append(byGang[g].Pods, e.Task.Name)
	}
	out := make([]Victim, 0, len(order))
	for _, g := range order {
		vic := byGang[g]
		slices.Sort(vic.Pods)
		vic.Whole = true
		if job := snap.Jobs[g]; job != nil {
			for _, t := range job.Tasks {
				if t.Status == api.Bound || t.Status == api.Running {
					vic.Whole = false // a member above its minimum stays
				}
			}
		}
		out = append(out, *vic)
	}
	return out
}
