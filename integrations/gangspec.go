package integrations

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// GangSpec is what every backend's PodGroup says about a job. One function
// computes it for every backend, so they cannot disagree.
type GangSpec struct {
	// MinMember pods must be placed together.
	MinMember int32
	// MinTaskMember is the minimum per role (the replica type, as the pods'
	// task-spec annotation names it).
	MinTaskMember map[string]int32
	// MinResources is what the MinMember pods request together.
	MinResources corev1.ResourceList
	// Queue, PriorityClassName and ScheduleTimeoutSeconds come from the
	// job's schedulingPolicy.
	Queue                  string
	PriorityClassName      string
	ScheduleTimeoutSeconds *int32
}

// Replica is one replica type of a job, as the gang sees it.
type Replica struct {
	// Role is the pods' task-spec value: the replica type, lower case.
	Role     string
	Replicas int32
	// MinMember is the role's minimum; nil means every replica.
	MinMember *int32
	Template  *corev1.PodTemplateSpec
}

// SchedulingPolicy is the subset of the job's schedulingPolicy a gang reads.
type SchedulingPolicy struct {
	MinAvailable           *int32
	Queue                  string
	PriorityClass          string
	ScheduleTimeoutSeconds *int32
}

// ComputeGangSpec derives the PodGroup contents of a job whose replicas come
// in creation order (master, chief or launcher first).
//
// minResources covers exactly the MinMember pods the gang starts with:
// every role's minimum first, in replica order, then further pods in the
// same order until MinMember is reached. That is deterministic, and it puts
// the master (often CPU-only) in before extra workers.
func ComputeGangSpec(replicas []Replica, policy SchedulingPolicy) GangSpec {
	spec := GangSpec{
		MinTaskMember:          map[string]int32{},
		Queue:                  policy.Queue,
		PriorityClassName:      policy.PriorityClass,
		ScheduleTimeoutSeconds: policy.ScheduleTimeoutSeconds,
	}
	var total int32
	for _, r := range replicas {
		total += r.Replicas
		minimum := r.Replicas
		if r.MinMember != nil && *r.MinMember < minimum {
			minimum = *r.MinMember
		}
		spec.MinTaskMember[r.Role] = minimum
	}
	spec.MinMember = total
	if policy.MinAvailable != nil && *policy.MinAvailable < total {
		spec.MinMember = *policy.MinAvailable
	}
	// A role's minimum can never exceed the gang's: minAvailable below the
	// sum of the per-role minimums lowers them, latest roles first.
	excess := sumValues(spec.MinTaskMember) - spec.MinMember
	for i := len(replicas) - 1; i >= 0 && excess > 0; i-- {
		role := replicas[i].Role
		cut := min(excess, spec.MinTaskMember[role])
		spec.MinTaskMember[role] -= cut
		excess -= cut
	}

	counted := map[string]int32{}
	remaining := spec.MinMember
	take := func(r Replica, n int32) {
		if n <= 0 || remaining <= 0 {
			return
		}
		n = min(n, remaining)
		addScaled(&spec.MinResources, podRequests(r.Template), n)
		counted[r.Role] += n
		remaining -= n
	}
	for _, r := range replicas {
		take(r, spec.MinTaskMember[r.Role])
	}
	for _, r := range replicas {
		take(r, r.Replicas-counted[r.Role])
	}
	return spec
}

// podRequests is what one pod of a template asks of a node, as the
// scheduler will count it: requests, with limits standing in for requests
// that are not given (the API server defaults them so: that is how
// limits-only nvidia.com/gpu works), the larger of init containers and
// regular ones, sidecars, and pod overhead.
func podRequests(tmpl *corev1.PodTemplateSpec) corev1.ResourceList {
	pod := &corev1.Pod{Spec: *tmpl.Spec.DeepCopy()}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			defaultRequestsFromLimits(&cs[i].Resources)
		}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func addScaled(total *corev1.ResourceList, per corev1.ResourceList, n int32) {
	if *total == nil {
		*total = corev1.ResourceList{}
	}
	for name, q := range per {
		sum := (*total)[name]
		for range n {
			sum.Add(q)
		}
		(*total)[name] = sum
	}
}

func sumValues(m map[string]int32) int32 {
	var s int32
	for _, v := range m {
		s += v
	}
	return s
}

// RoleOf is the task-spec value of a replica type: lower case, as the
// replica-type label.
func RoleOf(replicaType string) string { return strings.ToLower(replicaType) }
