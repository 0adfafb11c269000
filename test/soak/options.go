package soak

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Options are the soak's flags.
type Options struct {
	ControlPlaneDir string
	KwokDir         string
	CRDDir          string
	Operator        string
	Scheduler       string
	WorkDir         string

	// Duration is how long the churn runs; the quiet period follows.
	Duration time.Duration
	// Settle bounds the quiet period: every job must be Running or have
	// finished by then.
	Settle time.Duration
	// Seed seeds the driver and the chaos; 0 draws a fresh one.
	Seed uint64

	CPUNodes, GPUNodes int
	// MaxJobs is how many jobs the driver keeps at most: more than the
	// cluster holds, so that gangs queue.
	MaxJobs int
	// ActionEvery and ChaosEvery are the mean times between two driver
	// actions (jobs and faults) and between two process faults (kills,
	// stops).
	ActionEvery, ChaosEvery time.Duration

	// PartialGrace is the schedulers' --partial-gang-grace-period;
	// PartialMargin what a gang may stay partial beyond it while a
	// scheduler leads.
	PartialGrace, PartialMargin time.Duration
	// WaitLimit is how long a gang may wait with room while no other gang
	// wants any and a scheduler leads (check.Config.WaitLimit).
	WaitLimit time.Duration
	// LeaseDuration, RenewDeadline and RetryPeriod are every replica's
	// leader-election timing.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// Report is a markdown file to write the report to; empty writes none.
	Report string
	// Command is the command line the report shows.
	Command string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		ControlPlaneDir: os.Getenv("KUBEBUILDER_ASSETS"),
		CRDDir:          "config/crd/bases",
		Operator:        "bin/operator",
		Scheduler:       "bin/scheduler",
		WorkDir:         filepath.Join(os.TempDir(), "troupe-soak"),
		Duration:        10 * time.Minute,
		Settle:          4 * time.Minute,
		CPUNodes:        3,
		GPUNodes:        6,
		MaxJobs:         14,
		ActionEvery:     2 * time.Second,
		ChaosEvery:      12 * time.Second,
		PartialGrace:    10 * time.Second,
		PartialMargin:   15 * time.Second,
		WaitLimit:       15 * time.Second,
		LeaseDuration:   8 * time.Second,
		RenewDeadline:   5 * time.Second,
		RetryPeriod:     time.Second,
	}
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ControlPlaneDir, "control-plane-dir", o.ControlPlaneDir, "Folder with etcd, kube-apiserver and kube-controller-manager (hack/controlplane.sh prints it; default $KUBEBUILDER_ASSETS).")
	fs.StringVar(&o.KwokDir, "kwok-dir", o.KwokDir, "Folder with kwok and its stages/*.yaml (hack/kwok.sh prints it).")
	fs.StringVar(&o.CRDDir, "crd-dir", o.CRDDir, "Folder of the CRDs to install.")
	fs.StringVar(&o.Operator, "operator", o.Operator, "Path to the operator binary (make build).")
	fs.StringVar(&o.Scheduler, "scheduler", o.Scheduler, "Path to troupe-scheduler (make build).")
	fs.StringVar(&o.WorkDir, "work-dir", o.WorkDir, "Folder for the cluster's state and every process's log (emptied first; the logs stay).")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "How long the churn runs: jobs, faults, kills. The quiet period follows.")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "Longest quiet period after the churn: by its end every job must be Running or finished.")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "Seed of the driver's and the chaos's choices; 0 draws a fresh one (printed).")
	fs.IntVar(&o.CPUNodes, "cpu-nodes", o.CPUNodes, "Simulated CPU nodes (16 CPU, 64Gi).")
	fs.IntVar(&o.GPUNodes, "gpu-nodes", o.GPUNodes, "Simulated GPU nodes (32 CPU, 256Gi, 8 GPUs).")
	fs.IntVar(&o.MaxJobs, "max-jobs", o.MaxJobs, "Most jobs at once; more than the cluster holds, so that gangs queue.")
	fs.DurationVar(&o.ActionEvery, "action-every", o.ActionEvery, "Mean time between two driver actions (apply, delete, finish a job; fail, evict a member; cordon, delete a node).")
	fs.DurationVar(&o.ChaosEvery, "chaos-every", o.ChaosEvery, "Mean time between two process faults (SIGKILL of a leader, of both, SIGSTOP past the lease).")
	fs.DurationVar(&o.PartialGrace, "partial-gang-grace-period", o.PartialGrace, "The schedulers' --partial-gang-grace-period.")
	fs.DurationVar(&o.PartialMargin, "partial-gang-margin", o.PartialMargin, "How long beyond the grace a gang may stay partial while a scheduler leads before it is a violation.")
	fs.DurationVar(&o.WaitLimit, "wait-limit", o.WaitLimit, "How long a gang may wait, with a scheduler leading, while the free room holds it however it is placed and no other gang wants room, before it is a violation.")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", o.LeaseDuration, "Every replica's --leader-elect-lease-duration.")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", o.RenewDeadline, "Every replica's --leader-elect-renew-deadline.")
	fs.DurationVar(&o.RetryPeriod, "retry-period", o.RetryPeriod, "Every replica's --leader-elect-retry-period.")
	fs.StringVar(&o.Report, "report", o.Report, "Markdown file to write the report to (default: report.md in --work-dir; it is printed either way).")
	fs.StringVar(&o.Command, "command", o.Command, "The command line the report shows (default: the soak's own).")
}

// Validate reports every invalid option, naming its flag.
func (o *Options) Validate() error {
	var errs []error
	for _, f := range []struct{ flag, path, hint string }{
		{"--control-plane-dir", o.ControlPlaneDir, "hack/controlplane.sh prints it"},
		{"--kwok-dir", o.KwokDir, "hack/kwok.sh prints it"},
		{"--crd-dir", o.CRDDir, "config/crd/bases of the repository"},
		{"--operator", o.Operator, "make build"},
		{"--scheduler", o.Scheduler, "make build"},
	} {
		if f.path == "" {
			errs = append(errs, fmt.Errorf("%s: must not be empty (%s)", f.flag, f.hint))
		} else if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (%s)", f.flag, err, f.hint))
		}
	}
	if o.WorkDir == "" {
		errs = append(errs, errors.New("--work-dir: must not be empty"))
	}
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration: must be greater than 0, got %v", o.Duration))
	}
	if o.Settle < time.Minute {
		errs = append(errs, fmt.Errorf("--settle: must be at least 1m (a gang restart's backoff and a leader's lease fit in it), got %v", o.Settle))
	}
	if o.CPUNodes < 2 || o.GPUNodes < 3 {
		errs = append(errs, fmt.Errorf("--cpu-nodes, --gpu-nodes: need at least 2 and 3 (the driver deletes nodes and keeps the largest job placeable), got %d and %d", o.CPUNodes, o.GPUNodes))
	}
	if o.MaxJobs < 1 {
		errs = append(errs, fmt.Errorf("--max-jobs: must be at least 1, got %d", o.MaxJobs))
	}
	if o.ActionEvery <= 0 || o.ChaosEvery <= 0 {
		errs = append(errs, fmt.Errorf("--action-every, --chaos-every: must be greater than 0, got %v and %v", o.ActionEvery, o.ChaosEvery))
	}
	if o.PartialGrace < 0 || o.PartialMargin < 0 || o.WaitLimit < 0 {
		errs = append(errs, fmt.Errorf("--partial-gang-grace-period, --partial-gang-margin, --wait-limit: must not be negative, got %v, %v and %v", o.PartialGrace, o.PartialMargin, o.WaitLimit))
	}
	if o.LeaseDuration <= o.RenewDeadline || float64(o.RenewDeadline) <= 1.2*float64(o.RetryPeriod) || o.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--lease-duration, --renew-deadline, --retry-period: need lease > renew > 1.2 x retry > 0, got %v, %v, %v", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
	}
	return errors.Join(errs...)
}
