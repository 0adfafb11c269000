package peers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/integrations/volcano"
)

// VolcanoSchedulerName is the schedulerName Volcano's scheduler serves,
// the one Troupe's volcano backend gives pods.
const VolcanoSchedulerName = volcano.SchedulerName

// The actions and plugins Volcano v1.14.1 registers
// (pkg/scheduler/actions/factory.go and pkg/scheduler/plugins/factory.go in
// volcano.sh/volcano). Volcano skips a plugin it does not know with no more
// than a log line, so a misspelt one would quietly change what is measured:
// StartVolcano refuses it instead.
var (
	volcanoActions = []string{"allocate", "backfill", "enqueue", "preempt", "reclaim", "shuffle"}
	volcanoPlugins = []string{
		"binpack", "capacity", "cdp", "conformance", "deviceshare", "drf", "extender", "gang",
		"network-topology-aware", "nodegroup", "nodeorder", "numa-aware", "overcommit", "pdb",
		"predicates", "priority", "proportion", "rescheduling", "resource-strategy-fit",
		"resourcequota", "sla", "task-topology", "tdm", "usage",
	}
)

// DefaultVolcanoActions are the actions StartVolcano runs when
// VolcanoOptions.Actions is empty: admit gangs, place them all-or-nothing,
// then place best-effort pods.
func DefaultVolcanoActions() []string { return []string{"enqueue", "allocate", "backfill"} }

// DefaultVolcanoPlugins are the plugins StartVolcano enables when
// VolcanoOptions.Plugins is empty: priority order, gang readiness, the
// kube-scheduler predicates (node selectors, taints, resources) and node
// scoring.
func DefaultVolcanoPlugins() []string {
	return []string{"priority", "gang", "predicates", "nodeorder"}
}

// VolcanoOptions configure Volcano's scheduler.
type VolcanoOptions struct {
	Options
	// SchedulePeriod is the time between scheduling cycles; 0 is Volcano's
	// default, 1s.
	SchedulePeriod time.Duration
	// Actions run in this order every cycle; empty means
	// DefaultVolcanoActions.
	Actions []string
	// Plugins are enabled together in one tier; empty means
	// DefaultVolcanoPlugins.
	Plugins []string
}

func (o VolcanoOptions) withDefaults() VolcanoOptions {
	if len(o.Actions) == 0 {
		o.Actions = DefaultVolcanoActions()
	}
	if len(o.Plugins) == 0 {
		o.Plugins = DefaultVolcanoPlugins()
	}
	return o
}

// Validate reports every invalid option, naming the field and what it
// allows.
func (o VolcanoOptions) Validate() error {
	o = o.withDefaults()
	errs := o.validate()
	if o.SchedulePeriod < 0 {
		errs = append(errs, fieldError("SchedulePeriod", "must be 0 (Volcano's default, 1s) or more, got %v", o.SchedulePeriod))
	}
	errs = append(errs, checkNames("Actions", "action", o.Actions, volcanoActions)...)
	errs = append(errs, checkNames("Plugins", "plugin", o.Plugins, volcanoPlugins)...)
	return errors.Join(errs...)
}

func checkNames(field, what string, names, allowed []string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case !slices.Contains(allowed, n):
			errs = append(errs, fieldError(field, "Volcano has no %s %q; allowed: %s", what, n, strings.Join(allowed, ", ")))
		case seen[n]:
			errs = append(errs, fieldError(field, "%q is listed twice", n))
		}
		seen[n] = true
	}
	return errs
}

// volcanoConf is Volcano's scheduler configuration file, in the shape of
// volcano.sh/volcano/pkg/scheduler/conf.SchedulerConfiguration.
type volcanoConf struct {
	Actions string            `json:"actions"`
	Tiers   []volcanoConfTier `json:"tiers"`
}

type volcanoConfTier struct {
	Plugins []volcanoConfPlugin `json:"plugins"`
}

type volcanoConfPlugin struct {
	Name string `json:"name"`
}

func (o VolcanoOptions) conf() ([]byte, error) {
	tier := volcanoConfTier{}
	for _, p := range o.Plugins {
		tier.Plugins = append(tier.Plugins, volcanoConfPlugin{Name: p})
	}
	return yaml.Marshal(volcanoConf{Actions: strings.Join(o.Actions, ", "), Tiers: []volcanoConfTier{tier}})
}

const volcanoConfFile = "volcano-scheduler.conf"

func (o VolcanoOptions) args(dir string) []string {
	args := []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--scheduler-conf=" + filepath.Join(dir, volcanoConfFile),
		"--scheduler-name=" + VolcanoSchedulerName,
		"--leader-elect=false",
		// An invalid configuration stops the scheduler, rather than
		// leaving it to run Volcano's built-in one.
		"--disable-default-scheduler-config=true",
		// The cache dumper writes to /tmp on a signal; nothing here needs it.
		"--cache-dumper=false",
	}
	if o.SchedulePeriod > 0 {
		args = append(args, "--schedule-period="+o.SchedulePeriod.String())
	}
	if o.QPS != 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%v", o.QPS))
	}
	if o.Burst > 0 {
		args = append(args, fmt.Sprintf("--kube-api-burst=%d", o.Burst))
	}
	return append(args, o.verbosityArgs()...)
}

// verbosityArgs set klog's verbosity, which both schedulers take as --v.
func (o Options) verbosityArgs() []string {
	if o.Verbosity == 0 {
		return nil
	}
	return []string{fmt.Sprintf("--v=%d", o.Verbosity)}
}

// StartVolcano writes the scheduler configuration of o (actions, and its
// plugins in one tier) and starts Volcano's scheduler on it, serving
// VolcanoSchedulerName, with leader election off and no ports open.
// Cancelling ctx stops it as Stop does. The API server must serve what
// InstallVolcano installs.
func StartVolcano(ctx context.Context, o VolcanoOptions) (*Process, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid VolcanoOptions:\n%w", err)
	}
	o = o.withDefaults()
	conf, err := o.conf()
	if err != nil {
		return nil, err
	}
	return startWithConfig(ctx, "vc-scheduler", volcanoConfFile, conf, o.Options, o.args)
}

// startWithConfig writes file with content into a new folder and starts
// the scheduler with the arguments args gives for that folder.
func startWithConfig(ctx context.Context, name, file string, content []byte, o Options, args func(dir string) []string) (*Process, error) {
	dir, err := os.MkdirTemp("", "troupe-"+name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, file), content, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p, err := start(name, dir, o, append(args(dir), o.Args...))
	if err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Stop()
		case <-p.done:
		}
	}()
	return p, nil
}
