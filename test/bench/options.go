package bench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/internal/cmdutil"
	"github.com/troupe-ml/troupe/test/bench/nullbinder"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Placer names, in the order they run.
const (
	PlacerNull          = "null"
	PlacerTroupe        = "troupe"
	PlacerTroupeGang    = "troupe-gang-events"
	PlacerVolcano       = "volcano"
	PlacerVolcanoFast   = "volcano-200ms"
	PlacerCoscheduling  = "coscheduling"
	PlacerKubeNative    = "kube-native"
	defaultPlacerFilter = PlacerNull + "," + PlacerTroupe + "," + PlacerTroupeGang + "," + PlacerVolcano + "," + PlacerVolcanoFast + "," + PlacerCoscheduling + "," + PlacerKubeNative
)

// PlacerNames are every placer the harness knows.
var PlacerNames = strings.Split(defaultPlacerFilter, ",")

// Options are the harness's flags.
type Options struct {
	ControlPlaneDir string
	CRDs            string
	WorkDir         string

	TroupeScheduler       string
	VolcanoScheduler      string
	CoschedulingScheduler string

	Scenarios string
	Placers   string
	Scale     float64
	Hold      time.Duration

	// Client are every placer's client settings: the same rate limit for
	// all, and troupe-scheduler's binds in flight (0: its own default).
	nullbinder.Client
	// NullBindWorkers are the null binder's binds in flight, swept: each
	// is a placer of its own, null-<n>, and the best is the ceiling.
	NullBindWorkers string
	// TroupeBindWorkers are further binds in flight to run
	// troupe-scheduler at, each a variant placer troupe-<n> beside
	// troupe (its own default): to choose the default by measurement.
	// The goals judge troupe as it ships, never a variant.
	TroupeBindWorkers string
	// PartialGrace is how long a gang may be partly bound during a run
	// before it is recorded as a partial gang, with its duration.
	PartialGrace time.Duration

	// Repeat is how many times each placer runs each scenario.
	Repeat int

	RunTimeout time.Duration
	Settle     time.Duration
	// Trailing is the longest its placer's CPU time and API writes are
	// still counted after a run, waiting for the writes to stop.
	Trailing time.Duration

	Profile bool
	Out     string
	Check   bool
	// Command is the command line to print in the report; empty prints
	// the harness's own.
	Command string
}

// NewOptions returns the defaults: the full benchmark at the design's
// reference point.
func NewOptions() *Options {
	return &Options{
		ControlPlaneDir: os.Getenv("KUBEBUILDER_ASSETS"),
		// The PodGroup and Queue CRDs of every placer, and no others: the
		// kubeflow.org CRDs are most of config/crd/bases and would only
		// slow every API server's start.
		CRDs:      "config/crd/bases/scheduling.troupe.dev_podgroups.yaml,config/crd/bases/scheduling.troupe.dev_queues.yaml,config/crd/bases/scheduling.troupe.dev_topologies.yaml,config/crd/peers",
		WorkDir:   filepath.Join(os.TempDir(), "troupe-bench"),
		Scenarios: strings.Join(scenario.Names, ","),
		Placers:   defaultPlacerFilter,
		Scale:     1,
		Hold:      5 * time.Second,
		// No client-side limit for any placer: the ceiling is what the
		// API server does, and a limit would be the same for all.
		Client:          nullbinder.Client{QPS: -1, Burst: 1000},
		NullBindWorkers: "16,64,256",
		PartialGrace:    2 * time.Second,
		Repeat:          1,
		RunTimeout:      5 * time.Minute,
		Settle:          15 * time.Second,
		Trailing:        60 * time.Second,
	}
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ControlPlaneDir, "control-plane-dir", o.ControlPlaneDir, "Folder with etcd and kube-apiserver (hack/controlplane.sh prints it; default $KUBEBUILDER_ASSETS).")
	fs.StringVar(&o.CRDs, "crds", o.CRDs, "Comma-separated CRD files and folders to install in every API server.")
	fs.StringVar(&o.WorkDir, "work-dir", o.WorkDir, "Folder for each run's logs, kubeconfig and profiles (emptied first).")
	fs.StringVar(&o.TroupeScheduler, "troupe-scheduler", o.TroupeScheduler, "Path to troupe-scheduler (go build ./cmd/scheduler).")
	fs.StringVar(&o.VolcanoScheduler, "volcano-scheduler", o.VolcanoScheduler, "Path to Volcano's vc-scheduler (hack/peer-schedulers.sh volcano).")
	fs.StringVar(&o.CoschedulingScheduler, "coscheduling-scheduler", o.CoschedulingScheduler, "Path to kube-scheduler with scheduler-plugins (hack/peer-schedulers.sh coscheduling).")
	fs.StringVar(&o.Scenarios, "scenarios", o.Scenarios, "Comma-separated scenarios to run; known: "+strings.Join(scenario.Names, ", ")+".")
	fs.StringVar(&o.Placers, "placers", o.Placers, "Comma-separated placers to measure; known: "+strings.Join(PlacerNames, ", ")+".")
	fs.Float64Var(&o.Scale, "scale", o.Scale, "Size of the scenarios: 1 is the design's reference point (1000 nodes, 500 gangs of 4 pods); the smoke test uses 0.02.")
	fs.DurationVar(&o.Hold, "hold", o.Hold, "How long S3's gangs run: their pods and PodGroup are deleted this long after the gang is bound.")
	// Every placer's QPS and burst; --bind-workers is troupe-scheduler's.
	o.Client.BindFlags(fs)
	fs.Lookup("bind-workers").Usage = "troupe-scheduler's binds in flight; 0 leaves its own default (the null binder's are --null-bind-workers)."
	fs.StringVar(&o.NullBindWorkers, "null-bind-workers", o.NullBindWorkers, "Comma-separated binds in flight to sweep the null binder over, each a placer null-<n> in --placers=null; the ceiling of a scenario is their best median makespan.")
	fs.StringVar(&o.TroupeBindWorkers, "troupe-bind-workers", o.TroupeBindWorkers, "Comma-separated binds in flight to run troupe-scheduler at as well, each a variant placer troupe-<n> in --placers=troupe; the goals judge troupe at its default (or --bind-workers), never a variant.")
	fs.DurationVar(&o.PartialGrace, "partial-grace", o.PartialGrace, "A gang partly bound for longer than this during a run is recorded as a partial gang, with its duration (one partial at the end fails the run).")
	fs.IntVar(&o.Repeat, "repeat", o.Repeat, "Run each scenario this many times with every placer, the placers taking turns; the report shows each placer's run of median mean pods/s, and the range.")
	fs.DurationVar(&o.RunTimeout, "run-timeout", o.RunTimeout, "Longest a placer gets on one scenario.")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "A run ends when no pod was bound for this long since the last bind (a placer that cannot place the rest); before the first bind only --run-timeout ends it.")
	fs.DurationVar(&o.Trailing, "trailing", o.Trailing, "After a run, its placer's CPU time and API writes are counted until the API server has had no write for 1s, at most this long (status writes and events just after the last bind are the placer's work too).")
	fs.BoolVar(&o.Profile, "profile", o.Profile, "Take a CPU profile of troupe-scheduler in every scenario and show its top functions.")
	fs.StringVar(&o.Out, "out", o.Out, "Markdown file whose generated section receives the results (created if missing); empty prints only.")
	fs.BoolVar(&o.Check, "check", o.Check, "Exit 1 unless every run bound every gang whole (the smoke test).")
	fs.StringVar(&o.Command, "command", o.Command, "The command line to show in the report (default: the harness's own arguments).")
}

// Validate reports every invalid option, naming its flag and what it
// allows.
func (o *Options) Validate() error {
	var errs []error
	if o.ControlPlaneDir == "" {
		errs = append(errs, errors.New("--control-plane-dir: must name the folder of etcd and kube-apiserver (hack/controlplane.sh prints it), or set KUBEBUILDER_ASSETS"))
	}
	if len(cmdutil.SplitList(o.CRDs)) == 0 {
		errs = append(errs, errors.New("--crds: must name at least one file or folder"))
	}
	if o.WorkDir == "" {
		errs = append(errs, errors.New("--work-dir: must not be empty"))
	}
	if err := checkList("--scenarios", o.Scenarios, scenario.Names); err != nil {
		errs = append(errs, err)
	}
	if err := checkList("--placers", o.Placers, PlacerNames); err != nil {
		errs = append(errs, err)
	}
	binaries := map[string]struct{ flag, path string }{
		PlacerTroupe:       {"--troupe-scheduler", o.TroupeScheduler},
		PlacerTroupeGang:   {"--troupe-scheduler", o.TroupeScheduler},
		PlacerVolcano:      {"--volcano-scheduler", o.VolcanoScheduler},
		PlacerVolcanoFast:  {"--volcano-scheduler", o.VolcanoScheduler},
		PlacerCoscheduling: {"--coscheduling-scheduler", o.CoschedulingScheduler},
	}
	reported := map[string]bool{}
	for _, p := range o.PlacerList() {
		b, ok := binaries[p]
		if !ok || b.path != "" || reported[b.flag] {
			continue
		}
		reported[b.flag] = true
		errs = append(errs, fmt.Errorf("%s: must name the binary, since --placers includes %s", b.flag, p))
	}
	if o.Scale <= 0 || o.Scale > 10 {
		errs = append(errs, fmt.Errorf("--scale: must be greater than 0 and at most 10, got %v", o.Scale))
	}
	if o.Hold <= 0 {
		errs = append(errs, fmt.Errorf("--hold: must be greater than 0, got %v", o.Hold))
	}
	errs = append(errs, o.Client.Validate()...)
	if o.BindWorkers < 0 {
		errs = append(errs, fmt.Errorf("--bind-workers: must not be negative (0 is troupe-scheduler's default), got %d", o.BindWorkers))
	}
	if _, err := o.NullWidths(); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.TroupeWidths(); err != nil {
		errs = append(errs, err)
	}
	if o.PartialGrace <= 0 {
		errs = append(errs, fmt.Errorf("--partial-grace: must be greater than 0, got %v", o.PartialGrace))
	}
	if o.Repeat < 1 || o.Repeat > 9 {
		errs = append(errs, fmt.Errorf("--repeat: must be from 1 to 9, got %d", o.Repeat))
	}
	if o.RunTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--run-timeout: must be greater than 0, got %v", o.RunTimeout))
	}
	if o.Settle <= 0 || o.Settle > o.RunTimeout {
		errs = append(errs, fmt.Errorf("--settle: must be greater than 0 and at most --run-timeout (%v), got %v", o.RunTimeout, o.Settle))
	}
	if o.Trailing < 0 {
		errs = append(errs, fmt.Errorf("--trailing: must not be negative, got %v", o.Trailing))
	}
	return errors.Join(errs...)
}

// checkList checks a comma-separated list against the names allowed.
func checkList(flagName, list string, allowed []string) error {
	items := cmdutil.SplitList(list)
	if len(items) == 0 {
		return fmt.Errorf("%s: must name at least one of %s", flagName, strings.Join(allowed, ", "))
	}
	var unknown []string
	for _, it := range items {
		if !slices.Contains(allowed, it) {
			unknown = append(unknown, fmt.Sprintf("%q", it))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%s: unknown %s; known: %s", flagName, strings.Join(unknown, ", "), strings.Join(allowed, ", "))
	}
	return nil
}

// ScenarioList is --scenarios in the catalog's order.
func (o *Options) ScenarioList() []scenario.Scenario {
	want := cmdutil.SplitList(o.Scenarios)
	var out []scenario.Scenario
	for _, s := range scenario.Catalog(o.Scale, o.Hold) {
		if slices.Contains(want, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// NullWidths is --null-bind-workers, in order, without repeats.
func (o *Options) NullWidths() ([]int, error) {
	out, err := widths("--null-bind-workers", o.NullBindWorkers)
	if err == nil && len(out) == 0 {
		err = errors.New("--null-bind-workers: must name at least one number of binds in flight")
	}
	return out, err
}

// TroupeWidths are --troupe-bind-workers, ascending, each once; none by
// default.
func (o *Options) TroupeWidths() ([]int, error) {
	return widths("--troupe-bind-workers", o.TroupeBindWorkers)
}

// widths parses a flag's comma-separated binds in flight: whole numbers
// of at least 1, returned ascending, each once.
func widths(flag, list string) ([]int, error) {
	var out []int
	for _, it := range cmdutil.SplitList(list) {
		n, err := strconv.Atoi(it)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a whole number of at least 1", flag, it)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// PlacerList is --placers in the harness's order.
func (o *Options) PlacerList() []string {
	want := cmdutil.SplitList(o.Placers)
	var out []string
	for _, p := range PlacerNames {
		if slices.Contains(want, p) {
			out = append(out, p)
		}
	}
	return out
}
