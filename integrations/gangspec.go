package integrations

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
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
	// Topology, when set, places the members of some roles on a Topology's
	// tree of network domains.
	Topology *GangTopology
}

// GangTopology is a job's topology policy as a backend sees it.
type GangTopology struct {
	schedulingv1alpha1.TopologyPolicy
	// Roles are the roles the policy places, in rank order: the job's
	// replica order (master, chief or launcher first).
	Roles []string
	// Members is how many pods those roles have.
	Members int32
}

// Replica is one replica type of a job, as the gang sees it.
type Replica struct {
	// Role is the pods' task-spec value: the replica type, lower case.
	Role     string
	Replicas int32
	// MinMember is the role's minimum; nil means every replica.
	MinMember *int32
	// ElasticMin, set for an elastic role (a PyTorchJob's workers under
	// elasticPolicy), is the fewest members the job runs with: it lowers
	// the role's minimum and the gang's, so the gang starts with the
	// minimum and the members above it are placed when room appears.
	ElasticMin *int32
	Template   *corev1.PodTemplateSpec
}

// SchedulingPolicy is the subset of the job's schedulingPolicy a gang reads.
type SchedulingPolicy struct {
	MinAvailable           *int32
	Queue                  string
	PriorityClass          string
	ScheduleTimeoutSeconds *int32
	// Topology is the job's topology policy; TopologyRoles the roles it
	// names (lower case), none meaning the default: the roles that ask for
	// GPUs, or every role when none does.
	Topology      *schedulingv1alpha1.TopologyPolicy
	TopologyRoles []string
}

// ComputeGangSpec derives the PodGroup contents of a job whose replicas come
// in creation order (master, chief or launcher first).
//
// MinMember is schedulingPolicy.minAvailable when it is set and below the
// total; otherwise every member but an elastic role's members above its
// ElasticMin. A role's minimum is the lowest of its replicas, its
// MinMember and its ElasticMin.
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
	var total, elastic int32
	for _, r := range replicas {
		total += r.Replicas
		minimum := r.Replicas
		if r.MinMember != nil && *r.MinMember < minimum {
			minimum = *r.MinMember
		}
		if r.ElasticMin != nil && *r.ElasticMin < r.Replicas {
			minimum = min(minimum, *r.ElasticMin)
			elastic += r.Replicas - *r.ElasticMin
		}
		spec.MinTaskMember[r.Role] = minimum
	}
	spec.MinMember = total - elastic
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
	spec.Topology = gangTopology(replicas, policy)
	return spec
}

// gangTopology is the topology part of a gang: the policy and the roles it
// covers, in replica order.
func gangTopology(replicas []Replica, policy SchedulingPolicy) *GangTopology {
	if policy.Topology == nil {
		return nil
	}
	covered := func(r Replica) bool { return slices.Contains(policy.TopologyRoles, r.Role) }
	if len(policy.TopologyRoles) == 0 {
		covered = func(r Replica) bool { return asksForGPUs(r.Template) }
		if !slices.ContainsFunc(replicas, covered) {
			covered = func(Replica) bool { return true }
		}
	}
	t := &GangTopology{TopologyPolicy: *policy.Topology.DeepCopy()}
	for _, r := range replicas {
		if covered(r) {
			t.Roles = append(t.Roles, r.Role)
			t.Members += r.Replicas
		}
	}
	return t
}

// asksForGPUs reports whether a pod of the template requests or limits a
// resource whose name says gpu (nvidia.com/gpu, amd.com/gpu,
// gpu.intel.com/i915, ...).
func asksForGPUs(tmpl *corev1.PodTemplateSpec) bool {
	for name := range podRequests(tmpl) {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			return true
		}
	}
	return false
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
			DefaultRequestsFromLimits(&cs[i].Resources)
		}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// DefaultRequestsFromLimits copies to requests the limits of resources
// that have none, as the API server's defaulting does.
func DefaultRequestsFromLimits(r *corev1.ResourceRequirements) {
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

// RoleMinimumsKeeper is a Backend whose PodGroup keeps a minimum per role
// (minTaskMember). A backend that is not one keeps only MinMember, over
// all of the gang's pods together.
type RoleMinimumsKeeper interface {
	KeepsRoleMinimums()
}

// UnkeptRoleMinimum is a role's minimum that a backend without per-role
// minimums cannot keep: its one pooled minimum guarantees the role only
// Guaranteed members (MinMember less every other role's pods).
type UnkeptRoleMinimum struct {
	Role       string
	Minimum    int32
	Guaranteed int32
}

// UnkeptRoleMinimums lists, in roles' order, the minimums of spec among
// roles that backend cannot keep. replicas holds every role's pods.
func UnkeptRoleMinimums(backend Backend, spec GangSpec, replicas map[string]int32, roles []string) []UnkeptRoleMinimum {
	if _, keeps := backend.(RoleMinimumsKeeper); keeps || backend == nil {
		return nil
	}
	total := sumValues(replicas)
	var unkept []UnkeptRoleMinimum
	for _, role := range roles {
		guaranteed := max(0, spec.MinMember-(total-replicas[role]))
		if spec.MinTaskMember[role] > guaranteed {
			unkept = append(unkept, UnkeptRoleMinimum{Role: role, Minimum: spec.MinTaskMember[role], Guaranteed: guaranteed})
		}
	}
	return unkept
}
