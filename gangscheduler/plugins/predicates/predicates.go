// Package predicates decides whether a task may go on a node by the
// node-local rules, with kube-scheduler's semantics: node selector and
// required node affinity, NoSchedule/NoExecute taints, cordoned nodes,
// host ports, pod count and resource requests. The Kubernetes helpers
// (k8s.io/component-helpers) do the matching, so the rules are the same
// code, not a re-implementation. The rules that relate pods to each other
// are the interpodaffinity and podtopologyspread plugins'.
package predicates

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "predicates"

// Reasons, worded as kube-scheduler's.
const (
	ReasonNodeAffinity  framework.Reason = "node(s) didn't match Pod's node affinity/selector"
	ReasonTaint         framework.Reason = "node(s) had untolerated taint(s)"
	ReasonUnschedulable framework.Reason = "node(s) were unschedulable"
	ReasonHostPorts     framework.Reason = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods   framework.Reason = "Too many pods"
	// ReasonBindRefused is Troupe's own: the API server refused to bind a
	// member of the gang to the node recently (api.JobInfo.RefusedNodes).
	ReasonBindRefused framework.Reason = "node(s) refused a bind of this gang recently"
)

// Config configures the plugin.
type Config struct {
	// TaintTolerationComparisonOperators lets Lt/Gt tolerations match, as
	// kube-scheduler does with the (alpha, off by default)
	// TaintTolerationComparisonOperators feature gate.
	TaintTolerationComparisonOperators bool
}

type plugin struct {
	cfg    Config
	logger klog.Logger
}

// New returns the predicates plugin.
func New(cfg Config) framework.Plugin {
	return &plugin{cfg: cfg, logger: klog.Background()}
}

func (p *plugin) Name() string { return Name }

// OnSessionOpen registers the static predicates (their inputs are in the
// class signature and the node object, so the session caches them per
// class and node) and the dynamic ones (they read what placements change).
//
// Host ports are dynamic although they come from the pod spec: a port is
// taken by each task placed on the node, so the answer for a class changes
// within the session, e.g. for its own second task.
//
// A node that refused to bind one of a gang's members (an admission
// webhook or policy on pods/binding) is avoided by the whole gang while
// the refusal lasts: placing it there again would only be refused again.
func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	for _, job := range ssn.Jobs {
		if len(job.RefusedNodes) > 0 {
			ssn.AddStaticPredicateFn(bindRefused(ssn.Jobs))
			break
		}
	}
	ssn.AddStaticPredicateFn(p.unschedulable)
	ssn.AddStaticPredicateFn(NodeAffinity)
	ssn.AddStaticPredicateFn(p.taints)
	ssn.AddStaticPredicateFn(Allocatable)
	ssn.AddNodeLocalPredicateFn(HostPorts)
	ssn.AddNodeLocalPredicateFn(Resources)
}

// bindRefused keeps a gang off the nodes that refused its binds.
func bindRefused(jobs map[api.JobID]*api.JobInfo) framework.PredicateFn {
	return func(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
		if job := jobs[task.Job]; job != nil && job.RefusedNodes[node.Name] {
			return framework.Unfit(ReasonBindRefused)
		}
		return framework.Fit
	}
}

// unschedulable is kube-scheduler's NodeUnschedulable: a cordoned node takes
// only pods that tolerate node.kubernetes.io/unschedulable:NoSchedule.
func (p *plugin) unschedulable(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	if !node.Node.Spec.Unschedulable {
		return framework.Fit
	}
	if corev1helpers.TolerationsTolerateTaint(p.logger, task.Pod.Spec.Tolerations, &unschedulableTaint, p.cfg.TaintTolerationComparisonOperators) {
		return framework.Fit
	}
	return framework.Unfit(ReasonUnschedulable)
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// NodeAffinity is kube-scheduler's NodeAffinity filter: the pod's
// nodeSelector and required node affinity (matchExpressions on labels,
// matchFields on metadata.name) must match. The task holds the parsed form.
// An affinity that does not parse matches nothing, as in kube-scheduler.
func NodeAffinity(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	if ok, _ := task.RequiredAffinity.Match(node.Node); !ok {
		return framework.Unfit(ReasonNodeAffinity)
	}
	return framework.Fit
}

// taints is kube-scheduler's TaintToleration filter: every NoSchedule and
// NoExecute taint must be tolerated (PreferNoSchedule never blocks). So
// node.kubernetes.io/not-ready and unreachable keep pods off until tolerated.
func (p *plugin) taints(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	if len(node.Node.Spec.Taints) == 0 {
		return framework.Fit
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(p.logger, node.Node.Spec.Taints,
		task.Pod.Spec.Tolerations, doNotSchedule, p.cfg.TaintTolerationComparisonOperators); untolerated {
		return framework.Unfit(ReasonTaint)
	}
	return framework.Fit
}

func doNotSchedule(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// HostPorts is kube-scheduler's NodePorts filter against the ports of every
// pod on the node, including tasks placed in this session.
func HostPorts(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	if len(task.HostPorts) == 0 || !node.PortsConflict(task.HostPorts) {
		return framework.Fit
	}
	return framework.Unfit(ReasonHostPorts)
}

// Allocatable is the static half of the resource fit: a task that asks for
// more than the node's allocatable (e.g. a GPU on a node without GPUs) never
// fits it, whatever runs there. The class signature includes the requests,
// so this is cached per class and node, and the dynamic check below skips
// such nodes altogether.
func Allocatable(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	return fit(task, &node.Allocatable)
}

// Resources is kube-scheduler's NodeResourcesFit: the pod count and every
// requested resource must fit what is idle now.
func Resources(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	return fit(task, &node.Idle)
}

func fit(task *api.TaskInfo, avail *api.Resource) framework.Status {
	if task.FitsIn(avail) {
		return framework.Fit
	}
	name, _ := task.Resreq.Insufficient(avail)
	if name == corev1.ResourcePods {
		return framework.Unfit(ReasonTooManyPods)
	}
	return framework.Insufficient(name)
}
