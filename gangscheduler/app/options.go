package app

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/gangscheduler/scheduler"
	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// DefaultSchedulerName is the spec.schedulerName of the pods the scheduler
// places unless --scheduler-name says otherwise; the operator's "troupe"
// backend sets it.
const DefaultSchedulerName = "troupe-scheduler"

// DefaultQPS is --kube-api-qps's and --kube-api-burst's default.
const DefaultQPS = 5000

// Options are the scheduler's settings, one per flag.
type Options struct {
	SchedulerName           string
	ConfigFile              string
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaderElection          cmdutil.LeaderElectionTiming
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	PprofBindAddress        string
	QPS                     float64
	Burst                   int
	BindWorkers             int
	StatusWriteWorkers      int
	PodScheduledEvents      bool
	MinCyclePeriod          time.Duration
	MaxIdlePeriod           time.Duration
	PartialGangGrace        time.Duration
	UnschedulableRefresh    time.Duration
	// WatchListClient starts informers with client-go's streamed watch
	// list (cmdutil.SetWatchListClient).
	WatchListClient bool

	// Config is the parsed --config file (the default without one); set
	// by ParseFlags.
	Config *config.Config
}

// NewOptions returns the defaults. The endpoints' ports differ from the
// operator's so that both can run on one machine.
func NewOptions() *Options {
	return &Options{
		SchedulerName:          DefaultSchedulerName,
		LeaderElectionID:       "troupe-scheduler.troupe.dev",
		LeaderElection:         cmdutil.DefaultLeaderElectionTiming(),
		MetricsBindAddress:     ":8090",
		HealthProbeBindAddress: ":8091",
		// The client limit is set above what one API server serves binds
		// at (the benchmark's ceiling on 2 cores is about 2000 a second),
		// so that it never paces a burst of binds: --bind-workers bounds
		// the binds in flight, and the API server's priority and fairness
		// protects it.
		QPS:   DefaultQPS,
		Burst: DefaultQPS,
		// 256, measured: at 16 a 5000-node backlog's binds waited on
		// the API server's latency, and once status writes waited for
		// the binds to be seen, 256 beat 64 at 1000 nodes too
		// (docs/benchmarks.md, "Binds in flight", "Status after the
		// binds are seen").
		BindWorkers: 256,
		// Few, so that a cycle's binds, which no longer wait for the last
		// cycle's status writes, are not crowded out by them at the API
		// server. Alone, 16 in flight write about three quarters as fast
		// as 256; beside the binds, 256 of them slowed a cycle's binds
		// enough to fail an S7x5 run (docs/benchmarks.md, "S7x5 with the
		// status writes off the binds' path").
		StatusWriteWorkers:   16,
		PodScheduledEvents:   true,
		MinCyclePeriod:       scheduler.DefaultMinCyclePeriod,
		MaxIdlePeriod:        scheduler.DefaultMaxIdlePeriod,
		PartialGangGrace:     actions.DefaultPartialGangGrace,
		UnschedulableRefresh: scheduler.DefaultUnschedulableRefresh,
	}
}

// BindFlags registers the options on a flag set.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.SchedulerName, "scheduler-name", o.SchedulerName, "Place the pods whose spec.schedulerName is this.")
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "Path to the scheduler's configuration (actions and plugins, YAML); see config/samples/scheduler-config.yaml. Default: allocate with the default plugins.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader, so that only one replica of the scheduler binds at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election Lease (default: the scheduler's own).")
	o.LeaderElection.BindFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; 0 turns it off.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz endpoints; 0 turns them off.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address of Go's /debug/pprof endpoints, for profiling; empty or 0 turns them off.")
	fs.Float64Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to the API server: binds, status writes and the informers' lists share one token bucket (events and the leader election lease have one each at the same rate); a negative value sets no client-side limit.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to the API server.")
	fs.IntVar(&o.BindWorkers, "bind-workers", o.BindWorkers, "Binds in flight at once.")
	fs.IntVar(&o.StatusWriteWorkers, "status-write-workers", o.StatusWriteWorkers, "PodGroup and Queue status writes in flight at once. They go on while the next cycles bind, so a small number leaves the API server to the binds.")
	fs.BoolVar(&o.PodScheduledEvents, "pod-scheduled-events", o.PodScheduledEvents, "Record a Scheduled event on every pod bound, as kube-scheduler does. Each is one more API write per pod; false keeps the gang's one Scheduled event on its PodGroup (failed binds are recorded on their pods either way).")
	fs.DurationVar(&o.MinCyclePeriod, "min-cycle-period", o.MinCyclePeriod, "Least time between the starts of two scheduling cycles; changes that arrive meanwhile are handled together.")
	fs.DurationVar(&o.MaxIdlePeriod, "max-idle-period", o.MaxIdlePeriod, "Most time between two cycles when nothing changes (schedule timeouts still fall due).")
	fs.DurationVar(&o.UnschedulableRefresh, "unschedulable-refresh-period", o.UnschedulableRefresh, "Least time between two writes of a new reason or message into the Unschedulable condition of a gang that stays unschedulable (its PodGroup's status and event, its pods' FailedScheduling events on a new reason). The condition turning True or False, and a schedule timeout falling due, are written at once. 0 writes every change.")
	fs.BoolVar(&o.WatchListClient, "watch-list-client", o.WatchListClient, "Start the informers with a streamed watch list (client-go's WatchListClient, on by default in client-go) instead of a paged list. Off by default: on a resource nobody wrote lately, the API server holds the stream until its watch cache is provably fresh, which delayed the first cycle by up to a second.")
	fs.DurationVar(&o.PartialGangGrace, "partial-gang-grace-period", o.PartialGangGrace, "How long a gang may stay partial (some members bound, the gang not whole: a bind refused, a member lost, a commit interrupted) before the scheduler deletes its members on nodes for their controller to recreate; it completes such a gang first of all meanwhile. 0 reclaims in the first cycle that cannot complete it.")
}

// Validate reports every invalid option, naming the flag and what it
// allows. It does not read --config; ParseFlags does.
func (o *Options) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(o.SchedulerName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--scheduler-name: %q is not a valid scheduler name: %s", o.SchedulerName, strings.Join(msgs, "; ")))
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id: must not be empty when --leader-elect is set"))
	}
	errs = append(errs, o.LeaderElection.Validate()...)
	if o.LeaderElectionNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.LeaderElectionNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace: %q is not a valid namespace name: %s", o.LeaderElectionNamespace, strings.Join(msgs, "; ")))
		}
	}
	if o.QPS == 0 {
		errs = append(errs, errors.New("--kube-api-qps: must not be 0 (a negative value sets no client-side limit)"))
	}
	if o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: must be at least 1, got %d", o.Burst))
	}
	if o.BindWorkers < 1 {
		errs = append(errs, fmt.Errorf("--bind-workers: must be at least 1, got %d", o.BindWorkers))
	}
	if o.StatusWriteWorkers < 1 {
		errs = append(errs, fmt.Errorf("--status-write-workers: must be at least 1, got %d", o.StatusWriteWorkers))
	}
	if o.MinCyclePeriod < 0 {
		errs = append(errs, fmt.Errorf("--min-cycle-period: must not be negative, got %v", o.MinCyclePeriod))
	}
	if o.PartialGangGrace < 0 {
		errs = append(errs, fmt.Errorf("--partial-gang-grace-period: must not be negative, got %v", o.PartialGangGrace))
	}
	if o.UnschedulableRefresh < 0 {
		errs = append(errs, fmt.Errorf("--unschedulable-refresh-period: must not be negative, got %v", o.UnschedulableRefresh))
	}
	if o.MaxIdlePeriod <= 0 {
		errs = append(errs, fmt.Errorf("--max-idle-period: must be greater than 0, got %v", o.MaxIdlePeriod))
	} else if o.MaxIdlePeriod < o.MinCyclePeriod {
		errs = append(errs, fmt.Errorf("--max-idle-period: must not be less than --min-cycle-period (%v), got %v", o.MinCyclePeriod, o.MaxIdlePeriod))
	}
	return errors.Join(errs...)
}

// KubeconfigPath is the --kubeconfig flag; empty follows the usual rules.
func (o *Options) KubeconfigPath() string { return o.Kubeconfig }
