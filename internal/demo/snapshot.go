package demo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// Node kinds, from the node-pool label (or, without it, from whether the
// node has GPUs).
const (
	kindCPU = localcluster.PoolCPU
	kindGPU = localcluster.PoolGPU
)

// jobKinds are the job kinds shown, with the field that holds each kind's
// replica specs.
var jobKinds = []struct {
	kind  string
	specs string
}{
	{"TFJob", "tfReplicaSpecs"},
	{"PyTorchJob", "pytorchReplicaSpecs"},
	{"MPIJob", "mpiReplicaSpecs"},
}

// snapshot is what the table shows: the nodes, and every training job with
// its PodGroup and pods.
type snapshot struct {
	Time  time.Time
	Nodes []nodeRow
	Jobs  []jobRow
	// nodeLabels are the nodes' labels, by node name, for the topology
	// check.
	nodeLabels map[string]map[string]string
}

type nodeRow struct {
	Name     string
	Kind     string
	Ready    bool
	NotReady bool // still carries a node.kubernetes.io/not-ready taint
	GPUs     int64
}

type jobRow struct {
	Namespace string
	Kind      string
	Name      string
	// Expected is the number of pods the job's replica specs ask for.
	Expected int
	// Gang is the PodGroup's phase; empty while there is no PodGroup.
	Gang        string
	GangMessage string
	// Condition is the job's state: its most telling true condition
	// (Failed, Succeeded, Suspended, Restarting, Running, Created), with
	// that condition's reason and message.
	Condition        string
	ConditionReason  string
	ConditionMessage string
	// GangRestarts: the job restarts as a whole gang
	// (spec.runPolicy.gangPolicy.restartPolicy Gang); Generation,
	// Restarts, Disruptions and LastRestart are its status.gang.
	GangRestarts bool
	Generation   int32
	Restarts     int32
	Disruptions  int32
	LastRestart  *kubeflowv1.GangRestart
	// Topology is the required topology rule of the job's PodGroup; nil
	// without one.
	Topology *topologyRule
	Pods     []podRow
}

type podRow struct {
	Name  string
	Role  string
	Index int
	// Phase is the pod's phase, except that a pending pod already bound to
	// a node shows as Scheduled and a deleted one as Terminating.
	Phase    string
	Node     string
	NodeKind string
	// Place is the node's block and rack ("block-1/rack-2"), if labelled.
	Place   string
	GPUs    int64
	Message string
	// Generation is the pod's troupe.dev/gang-generation label; empty on
	// pods of jobs that do not restart as a gang.
	Generation string
	// ExitCode is the exit code of the pod's first terminated container.
	ExitCode *int32
}

// job finds a job by its key; nil if the snapshot has none.
func (s *snapshot) job(key string) *jobRow {
	i := slices.IndexFunc(s.Jobs, func(j jobRow) bool { return j.key() == key })
	if i < 0 {
		return nil
	}
	return &s.Jobs[i]
}

// key is how the check names a job: Kind namespace/name.
func (j jobRow) key() string { return jobKey(j.Kind, j.Namespace, j.Name) }

func jobKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// display is the job's name in the table: the namespace is left out when
// it is "default".
func (j jobRow) display() string {
	if j.Namespace == "default" {
		return j.Kind + " " + j.Name
	}
	return j.Kind + " " + j.Namespace + "/" + j.Name
}

// observe reads the cluster into a snapshot.
func observe(ctx context.Context, c client.Reader) (*snapshot, error) {
	snap := &snapshot{Time: time.Now(), nodeLabels: map[string]map[string]string{}}

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	kindOf := map[string]string{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		row := nodeRow{Name: n.Name, Kind: nodeKind(n), GPUs: gpuQuantity(n.Status.Allocatable)}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				row.Ready = cond.Status == corev1.ConditionTrue
			}
		}
		for _, t := range n.Spec.Taints {
			row.NotReady = row.NotReady || t.Key == corev1.TaintNodeNotReady
		}
		kindOf[n.Name] = row.Kind
		snap.nodeLabels[n.Name] = n.Labels
		snap.Nodes = append(snap.Nodes, row)
	}
	slices.SortFunc(snap.Nodes, func(a, b nodeRow) int { return strings.Compare(a.Name, b.Name) })

	jobs := map[string]*jobRow{}
	for _, jk := range jobKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind(jk.kind + "List"))
		if err := c.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("list %ss: %w", jk.kind, err)
		}
		for _, u := range list.Items {
			row := &jobRow{Namespace: u.GetNamespace(), Kind: jk.kind, Name: u.GetName(), Expected: expectedPods(u.Object, jk.specs)}
			if err := readJobStatus(row, u.Object); err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", jk.kind, u.GetNamespace(), u.GetName(), err)
			}
			jobs[row.key()] = row
		}
	}

	var groups schedulingv1alpha1.PodGroupList
	if err := c.List(ctx, &groups); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("list PodGroups: %w", err)
	}
	var topologyList schedulingv1alpha1.TopologyList
	if err := c.List(ctx, &topologyList); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("list Topologies: %w", err)
	}
	topologies := map[string]map[string]string{}
	for _, t := range topologyList.Items {
		topologies[t.Name] = map[string]string{}
		for _, l := range t.Spec.Levels {
			topologies[t.Name][l.Name] = l.NodeLabel
		}
	}
	for i := range groups.Items {
		pg := &groups.Items[i]
		owner := metav1.GetControllerOf(pg)
		if owner == nil {
			continue
		}
		if job, ok := jobs[jobKey(owner.Kind, pg.Namespace, owner.Name)]; ok {
			job.Gang = string(pg.Status.Phase)
			if job.Gang == "" {
				job.Gang = string(schedulingv1alpha1.PodGroupPending)
			}
			job.GangMessage = latestConditionMessage(pg.Status.Conditions)
			job.Topology = readTopologyRule(pg, topologies)
		}
	}

	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.HasLabels{kubeflowv1.JobNameLabel}); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		owner := metav1.GetControllerOf(p)
		if owner == nil || schema.FromAPIVersionAndKind(owner.APIVersion, owner.Kind).Group != kubeflowv1.GroupVersion.Group {
			continue
		}
		job, ok := jobs[jobKey(owner.Kind, p.Namespace, owner.Name)]
		if !ok {
			continue
		}
		idx, _ := strconv.Atoi(p.Labels[kubeflowv1.ReplicaIndexLabel])
		job.Pods = append(job.Pods, podRow{
			Name:       p.Name,
			Role:       p.Labels[kubeflowv1.ReplicaTypeLabel],
			Index:      idx,
			Phase:      podPhase(p),
			Node:       p.Spec.NodeName,
			NodeKind:   kindOf[p.Spec.NodeName],
			Place:      placeOf(snap.nodeLabels[p.Spec.NodeName]),
			GPUs:       podGPUs(p),
			Message:    unschedulableMessage(p),
			Generation: p.Labels[kubeflowv1.GangGenerationLabel],
			ExitCode:   terminatedExitCode(p),
		})
	}

	for _, job := range jobs {
		slices.SortFunc(job.Pods, func(a, b podRow) int {
			if c := roleOrder(a.Role) - roleOrder(b.Role); c != 0 {
				return c
			}
			if c := strings.Compare(a.Role, b.Role); c != 0 {
				return c
			}
			return a.Index - b.Index
		})
		snap.Jobs = append(snap.Jobs, *job)
	}
	slices.SortFunc(snap.Jobs, func(a, b jobRow) int { return strings.Compare(a.key(), b.key()) })
	return snap, nil
}

// conditionOrder ranks a job's conditions by what they tell: a finished
// job's verdict first, then Suspended, Restarting and Running, which a job
// holds one at a time, and Created last (it stays true for good).
var conditionOrder = []kfv1.JobConditionType{
	kfv1.JobFailed, kfv1.JobSucceeded, kfv1.JobSuspended, kfv1.JobRestarting, kfv1.JobRunning, kfv1.JobCreated,
}

// readJobStatus fills in the job's state from its status, and whether it
// restarts as a whole gang from its spec.
func readJobStatus(row *jobRow, obj map[string]any) error {
	policy, _, _ := unstructured.NestedString(obj, "spec", "runPolicy", "gangPolicy", "restartPolicy")
	row.GangRestarts = policy == string(kubeflowv1.GangRestartPolicyGang)
	raw, ok, _ := unstructured.NestedMap(obj, "status")
	if !ok {
		return nil
	}
	var st kubeflowv1.JobStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		return fmt.Errorf("read status: %w", err)
	}
	for _, t := range conditionOrder {
		i := slices.IndexFunc(st.Conditions, func(c kfv1.JobCondition) bool { return c.Type == t && c.Status == corev1.ConditionTrue })
		if i >= 0 {
			c := st.Conditions[i]
			row.Condition, row.ConditionReason, row.ConditionMessage = string(c.Type), c.Reason, c.Message
			break
		}
	}
	if g := st.Gang; g != nil {
		row.Generation, row.Restarts, row.Disruptions, row.LastRestart = g.Generation, g.Restarts, g.Disruptions, g.LastRestart
	}
	return nil
}

// terminatedExitCode is the exit code of the pod's first container that
// has ended, if one has.
func terminatedExitCode(p *corev1.Pod) *int32 {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return &t.ExitCode
		}
	}
	return nil
}

// roleOrder puts the job's coordinator first, then parameter servers,
// then workers.
func roleOrder(role string) int {
	switch role {
	case "chief", "master", "launcher":
		return 0
	case "ps":
		return 1
	case "worker":
		return 2
	}
	return 3
}

// expectedPods adds up the replicas of every replica spec (1 when unset,
// as the API defaults it).
func expectedPods(obj map[string]any, field string) int {
	specs, _, _ := unstructured.NestedMap(obj, "spec", field)
	n := 0
	for _, s := range specs {
		spec, ok := s.(map[string]any)
		if !ok {
			continue
		}
		// int64 from the API server; float64 or int64 from a YAML file.
		switch r := spec["replicas"].(type) {
		case int64:
			n += int(r)
		case float64:
			n += int(r)
		case int:
			n += r
		default:
			n++
		}
	}
	return n
}

func nodeKind(n *corev1.Node) string {
	switch n.Labels[localcluster.PoolLabel] {
	case kindCPU:
		return kindCPU
	case kindGPU:
		return kindGPU
	}
	if gpuQuantity(n.Status.Allocatable) > 0 {
		return kindGPU
	}
	return kindCPU
}

func gpuQuantity(l corev1.ResourceList) int64 {
	q, ok := l[localcluster.GPUResource]
	if !ok {
		return 0
	}
	return q.Value()
}

// podGPUs is the pod's nvidia.com/gpu request (the API server copies a
// limit-only extended resource into the request).
func podGPUs(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if g := gpuQuantity(c.Resources.Requests); g > 0 {
			n += g
		} else {
			n += gpuQuantity(c.Resources.Limits)
		}
	}
	return n
}

func podPhase(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case p.Status.Phase == corev1.PodPending && p.Spec.NodeName != "":
		return "Scheduled"
	case p.Status.Phase == "":
		return string(corev1.PodPending)
	}
	return string(p.Status.Phase)
}

func unschedulableMessage(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

func latestConditionMessage(conds []metav1.Condition) string {
	var latest *metav1.Condition
	for i := range conds {
		c := &conds[i]
		if c.Status != metav1.ConditionTrue {
			continue
		}
		if latest == nil || !c.LastTransitionTime.Before(&latest.LastTransitionTime) {
			latest = c
		}
	}
	if latest == nil {
		return ""
	}
	if latest.Message != "" {
		return latest.Type + ": " + latest.Message
	}
	return latest.Type + ": " + latest.Reason
}
