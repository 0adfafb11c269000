package testutil

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// JobPods lists the pods of a job by upstream's job-name label, sorted by
// name, including terminating ones.
func JobPods(ctx context.Context, c client.Client, namespace, job string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{kubeflowv1.JobNameLabel: job}); err != nil {
		return nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items, nil
}

// PodNames returns the names of pods.
func PodNames(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i := range pods {
		out[i] = pods[i].Name
	}
	return out
}

// JobServices lists the services of a job, sorted by name.
func JobServices(ctx context.Context, c client.Client, namespace, job string) ([]corev1.Service, error) {
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(namespace), client.MatchingLabels{kubeflowv1.JobNameLabel: job}); err != nil {
		return nil, err
	}
	sort.Slice(svcs.Items, func(i, j int) bool { return svcs.Items[i].Name < svcs.Items[j].Name })
	return svcs.Items, nil
}

// EnvValue returns the value of an environment variable of a container.
func EnvValue(pod *corev1.Pod, container, name string) (string, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// Condition returns the job condition of a type, or nil.
func Condition(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) *kubeflowv1.JobCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == ctype {
			return &status.Conditions[i]
		}
	}
	return nil
}

// ConditionTrue reports whether the condition is present and true.
func ConditionTrue(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) bool {
	c := Condition(status, ctype)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Live returns the pods that are not terminating.
func Live(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}
