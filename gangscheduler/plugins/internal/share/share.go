// Package share has the resource arithmetic the queue-share (proportion)
// and dominant-resource-share (drf) plugins have in common: which
// dimensions a share is computed over, and reading one dimension of an
// api.Resource by name.
package share

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Dims returns the share dimensions of rs: cpu, memory and
// ephemeral-storage, then every scalar that any of rs holds non-zero, sorted
// by name. Pods are not a share dimension: every pod takes exactly one,
// whatever it does, so counting them would make a queue of many small pods
// look bigger than one of a few huge ones.
func Dims(rs ...*api.Resource) []corev1.ResourceName {
	dims := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	var scalars []corev1.ResourceName
	for _, r := range rs {
		for k, v := range r.Scalars {
			if v != 0 && !slices.Contains(scalars, k) {
				scalars = append(scalars, k)
			}
		}
	}
	slices.Sort(scalars)
	return append(dims, scalars...)
}

// Get returns r's amount of d.
func Get(r *api.Resource, d corev1.ResourceName) int64 {
	switch d {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case corev1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case corev1.ResourcePods:
		return r.Pods
	}
	return r.Scalars[d]
}

// Set sets r's amount of d.
func Set(r *api.Resource, d corev1.ResourceName, v int64) {
	switch d {
	case corev1.ResourceCPU:
		r.MilliCPU = v
	case corev1.ResourceMemory:
		r.Memory = v
	case corev1.ResourceEphemeralStorage:
		r.EphemeralStorage = v
	case corev1.ResourcePods:
		r.Pods = v
	default:
		if r.Scalars == nil {
			if v == 0 {
				return
			}
			r.Scalars = map[corev1.ResourceName]int64{}
		}
		r.Scalars[d] = v
	}
}

// Dominant is held's dominant share of of: the largest held[d]/of[d] over
// the share dimensions held has a positive amount of. A dimension held has
// but of lacks (of[d] <= 0) makes it +Inf. Holding nothing is 0.
//
// Equal inputs give bit-equal results (each ratio is one correctly rounded
// division), so comparing two shares with == is deterministic.
func Dominant(held, of *api.Resource) float64 {
	s := 0.0
	ratio := func(h, o int64) {
		if h <= 0 {
			return
		}
		if o <= 0 {
			s = math.Inf(1)
			return
		}
		s = max(s, float64(h)/float64(o))
	}
	ratio(held.MilliCPU, of.MilliCPU)
	ratio(held.Memory, of.Memory)
	ratio(held.EphemeralStorage, of.EphemeralStorage)
	for k, v := range held.Scalars {
		ratio(v, of.Scalars[k])
	}
	return s
}

// WithoutPods returns a copy of r with no pods: what r amounts to in the
// share dimensions.
func WithoutPods(r *api.Resource) api.Resource {
	c := r.Clone()
	c.Pods = 0
	return c
}
