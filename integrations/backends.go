package integrations

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GangSchedulerAnnotation on a job chooses its gang backend by name,
// overriding the operator's --gang-scheduler-name for that job alone; "none"
// turns gang scheduling off for it. It is read on every reconcile, so the
// choice stays visible on the job itself.
const GangSchedulerAnnotation = "troupe.dev/gang-scheduler-name"

// None is the backend name that turns gang scheduling off.
const None = "none"

// Reasons of the Failed condition of a job whose annotation names a
// backend the operator cannot use.
const (
	ReasonInvalidGangScheduler      = "InvalidGangScheduler"
	ReasonGangSchedulerNotInstalled = "GangSchedulerNotInstalled"
)

// Backends is every gang backend an operator can place jobs with.
type Backends struct {
	// Default serves the jobs that choose none; nil means none.
	Default Backend
	// Available maps each name a job may choose to its backend (nil for
	// None). It holds only backends whose PodGroup the cluster serves.
	Available map[string]Backend
	// Unavailable maps the names of known backends whose PodGroup the
	// cluster does not serve to CheckInstalled's error.
	Unavailable map[string]error
}

// SelectionError is a job's choice of a backend the operator cannot use.
// Retrying cannot fix it: the job fails with Reason.
type SelectionError struct {
	Reason  string
	Message string
}

func (e *SelectionError) Error() string { return e.Message }

// For returns the backend of a job: the one its annotation names, or the
// default. An unknown or uninstalled name is a *SelectionError.
func (b Backends) For(job metav1.Object) (Backend, error) {
	name, chosen := job.GetAnnotations()[GangSchedulerAnnotation]
	if !chosen {
		return b.Default, nil
	}
	if backend, ok := b.Available[name]; ok {
		return backend, nil
	}
	if err, ok := b.Unavailable[name]; ok {
		return nil, &SelectionError{
			Reason:  ReasonGangSchedulerNotInstalled,
			Message: fmt.Sprintf("annotation %s=%s: %v", GangSchedulerAnnotation, name, err),
		}
	}
	names := slices.Sorted(maps.Keys(b.Available))
	names = append(names, slices.Sorted(maps.Keys(b.Unavailable))...)
	slices.Sort(names)
	return nil, &SelectionError{
		Reason:  ReasonInvalidGangScheduler,
		Message: fmt.Sprintf("annotation %s: %q is not a gang scheduler; allowed: %s", GangSchedulerAnnotation, name, strings.Join(names, ", ")),
	}
}

// All returns every backend a job can be placed with, once each, by name:
// the PodGroup types the operator watches and cleans up after.
func (b Backends) All() []Backend {
	byName := map[string]Backend{}
	if b.Default != nil {
		byName[b.Default.Name()] = b.Default
	}
	for _, backend := range b.Available {
		if backend != nil {
			byName[backend.Name()] = backend
		}
	}
	out := make([]Backend, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}
