package operatorbench

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// Options are the flags of `bench operator`.
type Options struct {
	ControlPlaneDir string
	KwokDir         string
	CRDs            string
	WorkDir         string

	// The binaries under test: Troupe's operator and scheduler (bin/),
	// training-operator, Volcano's scheduler and kube-scheduler with
	// Coscheduling (hack/peer-schedulers.sh).
	TroupeOperator        string
	TroupeScheduler       string
	TrainingOperator      string
	VolcanoScheduler      string
	CoschedulingScheduler string

	Combinations string
	Jobs         int
	Workers      int
	Repeat       int
	// QPS and Burst are every operator's and scheduler's client flags:
	// the same limit for both operators, each of which shares one token
	// bucket among all its clients (Troupe's since cmdutil.LimitClients).
	// A negative QPS sets no client-side limit.
	QPS   float64
	Burst int
	// TrainingOperatorQPS and TrainingOperatorBurst, when set, replace
	// QPS and Burst for training-operator alone.
	TrainingOperatorQPS, TrainingOperatorBurst int

	RunTimeout time.Duration
	// Settle is how long CPU time and API writes are still counted after
	// every pod runs: the operators write the jobs' Running status then.
	Settle time.Duration
	// Restart measures the gang-restart comparison in every run.
	Restart bool
	// Check fails the command unless every run of every combination
	// brought every pod to Running with every PodGroup in place.
	Check bool

	Out     string
	Command string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		CRDs:         filepath.Join("config", "crd"),
		WorkDir:      filepath.Join(os.TempDir(), "troupe-bench-operator"),
		Combinations: strings.Join(CombinationNames(), ","),
		Jobs:         500,
		Workers:      3,
		Repeat:       1,
		QPS:          50,
		Burst:        100,
		RunTimeout:   15 * time.Minute,
		Settle:       5 * time.Second,
		Restart:      true,
	}
}

// BindFlags implements cmdutil.Options.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ControlPlaneDir, "control-plane-dir", o.ControlPlaneDir, "Folder of etcd and kube-apiserver (hack/controlplane.sh prints it).")
	fs.StringVar(&o.KwokDir, "kwok-dir", o.KwokDir, "Folder of kwok and its stages (hack/kwok.sh prints it).")
	fs.StringVar(&o.CRDs, "crds", o.CRDs, "Troupe's CRD folder, with bases/ and peers/.")
	fs.StringVar(&o.WorkDir, "work-dir", o.WorkDir, "Scratch folder for the runs' data and logs; emptied at start.")
	fs.StringVar(&o.TroupeOperator, "troupe-operator", o.TroupeOperator, "Troupe's operator binary (bin/operator).")
	fs.StringVar(&o.TroupeScheduler, "troupe-scheduler", o.TroupeScheduler, "troupe-scheduler binary (bin/scheduler).")
	fs.StringVar(&o.TrainingOperator, "training-operator", o.TrainingOperator, "training-operator binary (hack/peer-schedulers.sh training-operator); its CRDs in crds/ beside it.")
	fs.StringVar(&o.VolcanoScheduler, "volcano-scheduler", o.VolcanoScheduler, "Volcano's vc-scheduler (hack/peer-schedulers.sh volcano).")
	fs.StringVar(&o.CoschedulingScheduler, "coscheduling-scheduler", o.CoschedulingScheduler, "kube-scheduler with Coscheduling (hack/peer-schedulers.sh coscheduling).")
	fs.StringVar(&o.Combinations, "combinations", o.Combinations, "Comma-separated operator+scheduler combinations to run: "+strings.Join(CombinationNames(), ", ")+".")
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "PyTorchJobs applied at once per run.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Workers per PyTorchJob, beside its one master.")
	fs.IntVar(&o.Repeat, "repeat", o.Repeat, "Runs of each combination, the combinations taking turns; figures are medians with ranges.")
	fs.Float64Var(&o.QPS, "qps", o.QPS, "Client QPS of every operator and scheduler; negative: no client-side limit (training-operator, whose flags always build a token bucket, then gets one too large to be reached).")
	fs.IntVar(&o.Burst, "burst", o.Burst, "Client burst of every operator and scheduler.")
	fs.IntVar(&o.TrainingOperatorQPS, "training-operator-qps", 0, "training-operator's client QPS, if not --qps: to compare the operators at different rates (each shares one token bucket among all its clients).")
	fs.IntVar(&o.TrainingOperatorBurst, "training-operator-burst", 0, "training-operator's client burst, if not --burst.")
	fs.DurationVar(&o.RunTimeout, "run-timeout", o.RunTimeout, "Longest wait for every pod to run, in one run.")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "CPU and writes are still counted this long after every pod runs.")
	fs.BoolVar(&o.Restart, "restart", o.Restart, "After every pod runs, fail one worker of one job and time until the job runs whole again.")
	fs.BoolVar(&o.Check, "check", o.Check, "Fail unless every run brought every pod to Running with every PodGroup in place (and, with --restart, the failed job back).")
	fs.StringVar(&o.Out, "out", o.Out, "Markdown file whose operator section (between its markers) gets the results; empty prints only.")
	fs.StringVar(&o.Command, "command", o.Command, "The command shown in the report (default: this one).")
}

// Validate implements cmdutil.Options.
func (o *Options) Validate() error {
	var errs []error
	need := map[string]string{"--control-plane-dir": o.ControlPlaneDir, "--kwok-dir": o.KwokDir, "--crds": o.CRDs}
	for _, c := range o.CombinationList() {
		for flag, path := range c.binaries(o) {
			need[flag] = path
		}
	}
	for _, flag := range slices.Sorted(maps.Keys(need)) {
		if need[flag] == "" {
			errs = append(errs, fmt.Errorf("%s: empty", flag))
		} else if _, err := os.Stat(need[flag]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	for _, name := range cmdutil.SplitList(o.Combinations) {
		if _, ok := combinationByName(name); !ok {
			errs = append(errs, fmt.Errorf("--combinations: unknown %q; known: %s", name, strings.Join(CombinationNames(), ", ")))
		}
	}
	if len(cmdutil.SplitList(o.Combinations)) == 0 {
		errs = append(errs, errors.New("--combinations: none given"))
	}
	if o.Jobs < 1 || o.Workers < 1 || o.Repeat < 1 {
		errs = append(errs, fmt.Errorf("--jobs, --workers and --repeat must be 1 or more, got %d, %d, %d", o.Jobs, o.Workers, o.Repeat))
	}
	if o.QPS == 0 {
		errs = append(errs, errors.New("--qps: must be positive, or negative for no client-side limit, got 0"))
	}
	if o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--burst: must be positive, got %d", o.Burst))
	}
	if o.TrainingOperatorQPS < 0 || o.TrainingOperatorBurst < 0 {
		errs = append(errs, fmt.Errorf("--training-operator-qps and --training-operator-burst must be 0 (as --qps, --burst) or more, got %d, %d", o.TrainingOperatorQPS, o.TrainingOperatorBurst))
	}
	if o.RunTimeout <= 0 || o.Settle < 0 {
		errs = append(errs, fmt.Errorf("--run-timeout must be positive and --settle not negative, got %v, %v", o.RunTimeout, o.Settle))
	}
	return errors.Join(errs...)
}

// CombinationList are the combinations --combinations names, in the
// catalogue's order; unknown names are left out (Validate reports them).
func (o *Options) CombinationList() []Combination {
	want := cmdutil.SplitList(o.Combinations)
	var out []Combination
	for _, c := range Combinations {
		if slices.Contains(want, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// unreachedLimit is training-operator's QPS and burst when the run sets
// no client-side limit: its main.go builds a token bucket whatever its
// flags say, so it gets one that no run comes near.
const unreachedLimit = 1_000_000

// Unlimited reports whether the run sets no client-side limit.
func (o *Options) Unlimited() bool { return o.QPS < 0 }

// trainingOperatorLimits are training-operator's client QPS and burst:
// whole numbers, as its flags take them.
func (o *Options) trainingOperatorLimits() (qps, burst int) {
	qps, burst = int(o.QPS), o.Burst
	if o.Unlimited() {
		qps, burst = unreachedLimit, unreachedLimit
	}
	if o.TrainingOperatorQPS > 0 {
		qps = o.TrainingOperatorQPS
	}
	if o.TrainingOperatorBurst > 0 {
		burst = o.TrainingOperatorBurst
	}
	return qps, burst
}
