package cmdutil

import (
	"flag"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// LeaderElectionTiming is the timing of a binary's leader election, with
// kube-scheduler's flag names and client-go's defaults. A shorter lease
// hands over faster after a leader dies (the soak kills leaders several
// times a minute); a longer one survives a slow API server.
type LeaderElectionTiming struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// DefaultLeaderElectionTiming is controller-runtime's (and kube-scheduler's)
// default: a 15s lease, renewed within 10s, tried every 2s.
func DefaultLeaderElectionTiming() LeaderElectionTiming {
	return LeaderElectionTiming{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// BindFlags registers the three durations.
func (t *LeaderElectionTiming) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&t.LeaseDuration, "leader-elect-lease-duration", t.LeaseDuration, "With --leader-elect: how long a standby waits after the leader's last renewal before it takes the lease over.")
	fs.DurationVar(&t.RenewDeadline, "leader-elect-renew-deadline", t.RenewDeadline, "With --leader-elect: how long the leader keeps trying to renew its lease before it gives up leading (and exits).")
	fs.DurationVar(&t.RetryPeriod, "leader-elect-retry-period", t.RetryPeriod, "With --leader-elect: the time between two tries to acquire or renew the lease.")
}

// Validate reports the durations client-go's leader election refuses:
// it would fail at start with an error that names no flag.
func (t *LeaderElectionTiming) Validate() []error {
	var errs []error
	if t.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period: must be greater than 0, got %v", t.RetryPeriod))
	}
	if t.LeaseDuration <= t.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline (%v), got %v", t.RenewDeadline, t.LeaseDuration))
	}
	// client-go's own rule: the deadline must leave room for a retry with
	// its jitter (factor 1.2).
	if float64(t.RenewDeadline) <= 1.2*float64(t.RetryPeriod) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline: must be greater than 1.2 x --leader-elect-retry-period (%v), got %v", t.RetryPeriod, t.RenewDeadline))
	}
	return errs
}

// Apply sets the durations on a manager's options.
func (t LeaderElectionTiming) Apply(o *ctrl.Options) {
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &t.LeaseDuration, &t.RenewDeadline, &t.RetryPeriod
}
