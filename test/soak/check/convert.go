package check

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// FromPod reads what the checkers need of a pod.
func FromPod(pod *corev1.Pod) Pod {
	p := Pod{
		UID:          string(pod.UID),
		Namespace:    pod.Namespace,
		Name:         pod.Name,
		RV:           ParseRV(pod.ResourceVersion),
		Group:        pod.Annotations[schedulingv1alpha1.PodGroupNameAnnotation],
		Role:         pod.Annotations[schedulingv1alpha1.TaskSpecAnnotation],
		ReplicaType:  pod.Labels[kubeflowv1.ReplicaTypeLabel],
		Index:        pod.Labels[kubeflowv1.ReplicaIndexLabel],
		Node:         pod.Spec.NodeName,
		Phase:        pod.Status.Phase,
		Terminating:  pod.DeletionTimestamp != nil,
		Requests:     resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}),
		NodeSelector: pod.Spec.NodeSelector,
		Tolerations:  pod.Spec.Tolerations,
		Gated:        len(pod.Spec.SchedulingGates) > 0,
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		p.JobUID = string(ref.UID)
	}
	if g, err := strconv.ParseInt(pod.Labels[kubeflowv1.GangGenerationLabel], 10, 32); err == nil {
		p.Generation = int32(g)
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.ContainerStatuses...), pod.Status.InitContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && p.ExitCode == nil {
			code := t.ExitCode
			p.ExitCode = &code
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			p.Disrupted, p.DisruptionReason = true, c.Reason
		}
	}
	return p
}

// FromNode reads what the checkers need of a node.
func FromNode(n *corev1.Node) Node {
	return Node{Name: n.Name, Allocatable: n.Status.Allocatable.DeepCopy(), Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable}
}

// TrainingJob is what TFJob, PyTorchJob and MPIJob share.
type TrainingJob interface {
	metav1.Object
	ReplicaSpecs() map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec
	GetRunPolicy() *kubeflowv1.RunPolicy
	GetJobStatus() *kubeflowv1.JobStatus
}

// FromJob reads what the checkers need of a job of the given kind.
func FromJob(kind string, job TrainingJob) Job {
	j := Job{
		UID:           string(job.GetUID()),
		Key:           JobKey{Kind: kind, Namespace: job.GetNamespace(), Name: job.GetName()},
		RV:            ParseRV(job.GetResourceVersion()),
		RestartPolicy: map[string]string{},
		Deleting:      job.GetDeletionTimestamp() != nil,
	}
	rp := job.GetRunPolicy()
	j.GangRestart = rp.GangPolicy != nil && rp.GangPolicy.RestartPolicy == kubeflowv1.GangRestartPolicyGang
	j.TTL = rp.TTLSecondsAfterFinished != nil
	if pt, ok := job.(*kubeflowv1.PyTorchJob); ok && pt.Spec.ElasticPolicy != nil && pt.Spec.ElasticPolicy.MinReplicas != nil {
		ep := pt.Spec.ElasticPolicy
		w := pt.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]
		j.Elastic = w != nil && w.Replicas != nil && *ep.MinReplicas < *w.Replicas
		j.ElasticMinWorkers, j.ElasticMinMember = *ep.MinReplicas, *ep.MinReplicas
		if m := pt.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]; m != nil && m.Replicas != nil {
			j.ElasticMinMember += *m.Replicas
		}
		// torchrun's default rendezvous is c10d, hosted by worker 0 unless
		// rdzvHost names another host.
		j.Worker0Hosts = ep.RDZVHost == nil && (ep.RDZVBackend == nil || *ep.RDZVBackend == "c10d")
	}
	for rtype, spec := range job.ReplicaSpecs() {
		if spec != nil {
			j.RestartPolicy[strings.ToLower(string(rtype))] = string(spec.RestartPolicy)
		}
	}
	st := job.GetJobStatus()
	if g := st.Gang; g != nil {
		j.Generation, j.Restarts, j.Disruptions = g.Generation, g.Restarts, g.Disruptions
		if r := g.LastRestart; r != nil {
			j.LastRestart = fmt.Sprintf("%s %s: %s", r.Trigger, r.Member, r.Message)
		}
	}
	for _, c := range st.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case "Running":
			j.Running = true
		case "Succeeded":
			j.Succeeded = true
		case "Failed":
			j.Failed, j.Reason = true, c.Reason
		}
	}
	return j
}

// FromPodGroup reads what the checkers need of a PodGroup.
func FromPodGroup(g *schedulingv1alpha1.PodGroup) PodGroup {
	pg := PodGroup{Namespace: g.Namespace, Name: g.Name, MinMember: g.Spec.MinMember, MinTaskMember: map[string]int32{}}
	for k, v := range g.Spec.MinTaskMember {
		pg.MinTaskMember[k] = v
	}
	if ref := metav1.GetControllerOf(g); ref != nil {
		pg.OwnerUID = string(ref.UID)
	}
	return pg
}
