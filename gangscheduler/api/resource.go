// Package api is the scheduler's model of one snapshot of the cluster:
// resources, tasks (pods), jobs (gangs, one per PodGroup), nodes and queues.
// It holds plain values only; nothing here talks to the API server.
package api

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource is an amount of every resource the scheduler accounts for.
//
// CPU is kept in millicores and memory and ephemeral storage in bytes, as
// kube-scheduler does. Pods counts pods: every pod consumes one, and a node
// allows status.allocatable["pods"]. Every other resource (extended resources
// such as nvidia.com/gpu, hugepages-*, ...) is a scalar in Value() units;
// the API server only accepts whole numbers for extended resources.
//
// Scalars is a map, so copying a Resource shares it: use Clone for a copy
// that can be changed independently.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
	Scalars          map[corev1.ResourceName]int64
}

// NewResource converts a ResourceList. Zero scalar quantities are dropped so
// that IsZero and equality do not depend on how a list spelled "nothing".
func NewResource(rl corev1.ResourceList) Resource {
	var r Resource
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.Pods += q.Value()
		default:
			if v := q.Value(); v != 0 {
				r.AddScalar(name, v)
			}
		}
	}
	return r
}

// PodRequests is what a pod takes from a node: the effective requests as
// kube-scheduler computes them (the larger of the init-container peak and the
// sum of regular containers plus restartable init containers (sidecars),
// pod-level resources, plus pod overhead), and one pod.
//
// Extended resources given only as limits are copied to requests by the API
// server's defaulting, so every pod read from the API has them in requests.
//
// A running pod being resized in place holds the larger of what its spec
// asks, what the kubelet allocated and what it runs with, until the resize
// is done (UseStatusResources, as kube-scheduler counts it since in-place
// resize became GA): counting the smaller spec would over-commit the node.
func PodRequests(pod *corev1.Pod) Resource {
	var r Resource
	if c := soleContainer(pod); c != nil {
		r = NewResource(c.Resources.Requests)
	} else {
		r = NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true}))
	}
	r.Pods = 1
	return r
}

// soleContainer is the pod's one container when its requests, as they
// stand, are all the pod requests: no init container (nor sidecar), no
// overhead, no pod-level resources, and no container status (so nothing
// resized in place). The helper's answer is then that container's
// requests; taking them directly spares the copies it makes, which a
// scheduler's first snapshot of a backlog of thousands of pods notices
// (BenchmarkNewSnapshot). Nil otherwise.
func soleContainer(pod *corev1.Pod) *corev1.Container {
	s := &pod.Spec
	if len(s.Containers) != 1 || len(s.InitContainers) != 0 || s.Overhead != nil || s.Resources != nil ||
		len(pod.Status.ContainerStatuses) != 0 || len(pod.Status.InitContainerStatuses) != 0 {
		return nil
	}
	return &s.Containers[0]
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	c := r
	if r.Scalars != nil {
		c.Scalars = make(map[corev1.ResourceName]int64, len(r.Scalars))
		for k, v := range r.Scalars {
			c.Scalars[k] = v
		}
	}
	return c
}

// Scalar returns the amount of a scalar resource (0 if absent).
func (r *Resource) Scalar(name corev1.ResourceName) int64 {
	return r.Scalars[name]
}

// AddScalar adds v of a scalar resource.
func (r *Resource) AddScalar(name corev1.ResourceName, v int64) {
	if r.Scalars == nil {
		r.Scalars = make(map[corev1.ResourceName]int64, 1)
	}
	r.Scalars[name] += v
}

// Add adds rr to r.
func (r *Resource) Add(rr *Resource) {
	r.MilliCPU += rr.MilliCPU
	r.Memory += rr.Memory
	r.EphemeralStorage += rr.EphemeralStorage
	r.Pods += rr.Pods
	for k, v := range rr.Scalars {
		r.AddScalar(k, v)
	}
}

// Sub subtracts rr from r. The result may be negative: a node can be
// over-committed by pods that another scheduler or the kubelet placed, and
// the accounting must say so rather than clamp.
func (r *Resource) Sub(rr *Resource) {
	r.MilliCPU -= rr.MilliCPU
	r.Memory -= rr.Memory
	r.EphemeralStorage -= rr.EphemeralStorage
	r.Pods -= rr.Pods
	for k, v := range rr.Scalars {
		r.AddScalar(k, -v)
	}
}

// LessEqual reports whether a request r fits into the available amount
// avail. Only what r actually requests is compared: a resource r requests
// zero of never blocks, even where avail is negative. That is kube-scheduler's
// NodeResourcesFit rule, and it matters on over-committed nodes: a pod that
// asks for no GPU still fits a node whose GPUs are over-committed.
//
// It is on the hot path (every task against every candidate node), so it does
// not allocate.
func (r *Resource) LessEqual(avail *Resource) bool {
	if r.MilliCPU > 0 && r.MilliCPU > avail.MilliCPU {
		return false
	}
	if r.Memory > 0 && r.Memory > avail.Memory {
		return false
	}
	if r.EphemeralStorage > 0 && r.EphemeralStorage > avail.EphemeralStorage {
		return false
	}
	if r.Pods > 0 && r.Pods > avail.Pods {
		return false
	}
	if len(r.Scalars) == 0 { // skip starting a map iteration: most pods ask for no scalar
		return true
	}
	for k, v := range r.Scalars {
		if v > 0 && v > avail.Scalars[k] {
			return false
		}
	}
	return true
}

// Insufficient names the first resource r does not fit in avail, in a fixed
// order (cpu, memory, ephemeral-storage, pods, then scalars by name), so that
// diagnostics are deterministic. It returns false if r fits.
func (r *Resource) Insufficient(avail *Resource) (corev1.ResourceName, bool) {
	switch {
	case r.MilliCPU > 0 && r.MilliCPU > avail.MilliCPU:
		return corev1.ResourceCPU, true
	case r.Memory > 0 && r.Memory > avail.Memory:
		return corev1.ResourceMemory, true
	case r.EphemeralStorage > 0 && r.EphemeralStorage > avail.EphemeralStorage:
		return corev1.ResourceEphemeralStorage, true
	case r.Pods > 0 && r.Pods > avail.Pods:
		return corev1.ResourcePods, true
	}
	var worst corev1.ResourceName
	found := false
	for k, v := range r.Scalars {
		if v > 0 && v > avail.Scalars[k] && (!found || k < worst) {
			worst, found = k, true
		}
	}
	return worst, found
}

// AddNonNegative adds what rr holds above zero: what a node whose idle is
// rr frees for others (an over-committed node frees nothing of what it
// lacks).
func (r *Resource) AddNonNegative(rr *Resource) { r.addNonNegative(rr, 1) }

// SubNonNegative takes away what AddNonNegative adds.
func (r *Resource) SubNonNegative(rr *Resource) { r.addNonNegative(rr, -1) }

func (r *Resource) addNonNegative(rr *Resource, sign int64) {
	r.MilliCPU += sign * max(rr.MilliCPU, 0)
	r.Memory += sign * max(rr.Memory, 0)
	r.EphemeralStorage += sign * max(rr.EphemeralStorage, 0)
	r.Pods += sign * max(rr.Pods, 0)
	for k, v := range rr.Scalars {
		if v > 0 {
			r.AddScalar(k, sign*v)
		}
	}
}

// IsZero reports whether r holds nothing at all.
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 || r.Pods != 0 {
		return false
	}
	for _, v := range r.Scalars {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether r and rr hold the same amounts; a missing scalar
// equals a zero one.
func (r *Resource) Equal(rr *Resource) bool {
	if r.MilliCPU != rr.MilliCPU || r.Memory != rr.Memory ||
		r.EphemeralStorage != rr.EphemeralStorage || r.Pods != rr.Pods {
		return false
	}
	for k, v := range r.Scalars {
		if rr.Scalars[k] != v {
			return false
		}
	}
	for k, v := range rr.Scalars {
		if r.Scalars[k] != v {
			return false
		}
	}
	return true
}

// ScalarNames returns the names of the non-zero scalars, sorted.
func (r *Resource) ScalarNames() []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(r.Scalars))
	for k, v := range r.Scalars {
		if v != 0 {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// String prints r deterministically, for logs and test failures.
func (r Resource) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu=%dm memory=%d ephemeral-storage=%d pods=%d", r.MilliCPU, r.Memory, r.EphemeralStorage, r.Pods)
	for _, k := range r.ScalarNames() {
		fmt.Fprintf(&b, " %s=%d", k, r.Scalars[k])
	}
	return b.String()
}
