package engine

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/integrations"
)

// jobLabels selects every pod and service of one job.
func jobLabels(fw Framework, job Job) map[string]string {
	return map[string]string{
		kubeflowv1.OperatorNameLabel: fw.ControllerName(),
		kubeflowv1.JobNameLabel:      job.GetName(),
	}
}

// replicaLabels selects the pod and service of one replica.
func replicaLabels(fw Framework, job Job, rtype kubeflowv1.ReplicaType, index int) map[string]string {
	l := jobLabels(fw, job)
	l[kubeflowv1.ReplicaTypeLabel] = ReplicaTypeLabelValue(rtype)
	l[kubeflowv1.ReplicaIndexLabel] = strconv.Itoa(index)
	return l
}

// DesiredPods returns every pod of a defaulted job's current generation
// as the engine creates them for the gang backend (nil: none), in the
// framework's replica order: what a tool that asks where the job would go
// (kubectl troupe fit) hands the scheduler.
func DesiredPods(fw Framework, gang integrations.Backend, job Job) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for _, rtype := range OrderedReplicaTypes(fw, job) {
		for index := range int(*job.ReplicaSpecs()[rtype].Replicas) {
			pod, err := newPod(fw, gang, job, rtype, index)
			if err != nil {
				return nil, err
			}
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// newPod builds the pod of one replica from its template: upstream's name
// and labels, the controller reference, the restart policy the kubelet
// applies, the gang backend's marks (gang may be nil), and the framework's
// environment.
func newPod(fw Framework, gang integrations.Backend, job Job, rtype kubeflowv1.ReplicaType, index int) (*corev1.Pod, error) {
	spec := job.ReplicaSpecs()[rtype]
	tmpl := spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       tmpl.Spec,
	}
	pod.Name = podName(fw, job, rtype, index)
	pod.Namespace = job.GetNamespace()
	pod.GenerateName = ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range replicaLabels(fw, job, rtype, index) {
		pod.Labels[k] = v
	}
	if fw.IsMaster(job, rtype, index) {
		pod.Labels[kubeflowv1.JobRoleLabel] = "master"
	}
	pod.OwnerReferences = append(pod.OwnerReferences, *controllerRef(fw, job))
	pod.Spec.RestartPolicy = podRestartPolicy(spec.RestartPolicy)
	if gangRestartPolicy(job) != nil {
		// The operator restarts the gang; the kubelet restarting one
		// member in place would take it out of step with the rest.
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		stampGeneration(job, pod)
		trackMember(pod)
	}
	if gang != nil {
		gang.DecoratePod(pod, job.GetName(), integrations.RoleOf(string(rtype)))
	}
	if err := fw.ConfigurePod(job, rtype, index, pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// podRestartPolicy maps a replica restart policy onto the pod's: the kubelet
// restarts containers in place for Always and OnFailure; for ExitCode the
// engine decides from the exit code, so the kubelet must not restart.
func podRestartPolicy(p kubeflowv1.RestartPolicy) corev1.RestartPolicy {
	switch p {
	case kubeflowv1.RestartPolicy("Always"):
		return corev1.RestartPolicyAlways
	case kubeflowv1.RestartPolicy("OnFailure"):
		return corev1.RestartPolicyOnFailure
	default:
		return corev1.RestartPolicyNever
	}
}

func controllerRef(fw Framework, job Job) *metav1.OwnerReference {
	return metav1.NewControllerRef(job, fw.GroupVersionKind())
}

// isTerminating reports whether a pod is on its way out; it no longer
// counts as a member and its replacement waits until it is gone.
func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// exitCode returns the exit code of the named container of a failed pod,
// and false when the container never terminated (for example the pod was
// evicted or its node was lost before it ran).
func exitCode(pod *corev1.Pod, container string) (int32, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != container {
			continue
		}
		if t := cs.State.Terminated; t != nil {
			return t.ExitCode, true
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			return t.ExitCode, true
		}
	}
	return 0, false
}

// containerRestarts sums the in-place container restarts of a pod, which
// count against backoffLimit for the Always and OnFailure policies.
func containerRestarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.InitContainerStatuses {
		n += cs.RestartCount
	}
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
