// Package reservation keeps large gangs from starving behind small ones.
//
// Allocate places gangs in the session's order and, when one does not fit,
// goes on to the next: a gang of 8 nodes waits while gangs of 1 or 2 nodes
// that come after it take every node that frees up, for as long as small
// gangs keep coming. With this plugin, a gang that has waited long enough
// (After, counted from its PodGroup's status.scheduleStartTime) and still
// cannot be placed holds the nodes it lacks: those closest to fitting it,
// in the domain its required topology rule would place it in. The gangs
// after it in the session (younger, or of lower priority) cannot take what
// is idle on them; tasks that request nothing still can. When enough of
// the held nodes have emptied, the gang fits and is placed as any other.
//
// Holds cost idle capacity while the holder waits, so at most Gangs gangs
// hold at once, the first in the session's order. A hold lasts one
// session: nothing is written, and the next session holds again if the
// gang still waits (framework.Session.Hold).
package reservation

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "reservation"

// Defaults of Config.
const (
	DefaultAfter = 5 * time.Second
	DefaultGangs = 1
)

// Config configures the plugin.
type Config struct {
	// After is how long a gang waits (since its PodGroup's
	// scheduleStartTime) before it may hold nodes. Default 5s; 0 holds
	// from the first cycle that cannot place it.
	After *metav1.Duration `json:"after,omitempty"`
	// Gangs is the most gangs that hold nodes in one cycle, the first in
	// the session's order. Default 1.
	Gangs *int `json:"gangs,omitempty"`
}

// Validate names each invalid argument and what it allows.
func (c Config) Validate() error {
	var errs []error
	if c.After != nil && c.After.Duration < 0 {
		errs = append(errs, fmt.Errorf("after: must not be negative, got %v", c.After.Duration))
	}
	if c.Gangs != nil && *c.Gangs < 1 {
		errs = append(errs, fmt.Errorf("gangs: must be at least 1, got %d (leave the plugin out to hold for none)", *c.Gangs))
	}
	return errors.Join(errs...)
}

type plugin struct {
	after time.Duration
	gangs int
}

// New returns the reservation plugin.
func New(c Config) framework.Plugin {
	p := plugin{after: DefaultAfter, gangs: DefaultGangs}
	if c.After != nil {
		p.after = c.After.Duration
	}
	if c.Gangs != nil {
		p.gangs = *c.Gangs
	}
	return p
}

func (plugin) Name() string { return Name }

func (p plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.SetHoldLimit(p.gangs)
	ssn.AddHoldFn(func(job *api.JobInfo) bool { return waited(job, ssn.Now) >= p.after })
}

// waited is how long job has waited to be placed at now: since its
// PodGroup's scheduleStartTime, or none if that is not set yet.
func waited(job *api.JobInfo, now time.Time) time.Duration {
	if job.WaitingSince == nil {
		return 0
	}
	return now.Sub(*job.WaitingSince)
}
