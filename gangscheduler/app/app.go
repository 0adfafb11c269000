// Package app is the scheduler binary: its flags and their validation,
// its RBAC, and Run, which wires the cache, the binder, the status writer
// and the loop into a controller-runtime manager. cmd/scheduler only calls
// Main; tests call ParseFlags and Run.
package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/binder"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/gangscheduler/eventsink"
	"github.com/troupe-ml/troupe/gangscheduler/queues"
	"github.com/troupe-ml/troupe/gangscheduler/scheduler"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// The scheduler's permissions, generated into config/rbac/scheduler by
// `make generate`; least privilege: it reads what it schedules over,
// binds pods, deletes the pods that preemption evicts (only with the
// preempt action configured) and the members of partial gangs it reclaims,
// marking each first with a DisruptionTarget condition (pods/status),
// writes the status of PodGroups and Queues,
// creates the default Queue, records events and holds its leader Lease. It
// never changes a pod, node or PodGroup spec.
//
// +kubebuilder:rbac:groups="",resources=nodes;pods;namespaces;persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete
// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=queues,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=topologies,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=podgroups/status;queues/status,verbs=update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Main parses the command line, validates it and the configuration file,
// and runs the scheduler until the context ends. It returns the process
// exit code: 2 for bad flags or a bad configuration file, 1 when the
// scheduler cannot start or fails.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	run := func(ctx context.Context, cfg *rest.Config, opts *Options) error { return Run(ctx, cfg, opts) }
	return cmdutil.Main(ctx, "scheduler", args, stderr, ParseFlags, run)
}

// ParseFlags parses and validates the flags and the --config file; the
// error names every invalid flag, or the file and every invalid field.
func ParseFlags(args []string, stderr io.Writer) (*Options, error) {
	opts := NewOptions()
	if err := cmdutil.ParseFlags("scheduler", args, stderr, opts); err != nil {
		return nil, err
	}
	c, err := config.Load(opts.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--config %s: invalid configuration:\n%w", opts.ConfigFile, err)
	}
	opts.Config = c
	return opts, nil
}

// defaultQueueWait bounds how long the first cycle waits for the cache to
// show the default Queue the scheduler creates at start.
const defaultQueueWait = 5 * time.Second

// CRDs the scheduler cannot run without, and the file that installs each.
var requiredCRDs = []struct {
	kind schema.GroupVersionKind
	file string
}{
	{schedulingv1alpha1.GroupVersion.WithKind("PodGroup"), "config/crd/bases/scheduling.troupe.dev_podgroups.yaml"},
	{schedulingv1alpha1.GroupVersion.WithKind("Queue"), "config/crd/bases/scheduling.troupe.dev_queues.yaml"},
	{schedulingv1alpha1.GroupVersion.WithKind("Topology"), "config/crd/bases/scheduling.troupe.dev_topologies.yaml"},
}

// Run starts the scheduler in a manager and runs it until ctx ends. Tuning
// functions adjust the manager's options; tests use them to wrap the
// client or to run several schedulers in one process.
func Run(ctx context.Context, cfg *rest.Config, opts *Options, tuning ...func(*ctrl.Options)) error {
	if opts.Config == nil {
		opts.Config = config.Default()
	}
	if err := cmdutil.SetWatchListClient(opts.WatchListClient); err != nil {
		return err
	}
	acts, plugs, err := opts.Config.Build()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(scheme))
	clients := cmdutil.LimitClients(cfg, opts.QPS, opts.Burst)
	cfg = clients.API

	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Every pod of the cluster is cached; managed fields are most of
		// a pod's bytes and the scheduler never reads them.
		Cache: ctrlcache.Options{DefaultTransform: ctrlcache.TransformStripManagedFields()},
		// The first cycle starts as soon as the informers have listed the
		// cluster, not at the sync check's next 100 ms poll.
		NewCache: cmdutil.PromptSync(ctrlcache.New),
	}
	opts.LeaderElection.Apply(&mgrOpts)
	for _, tune := range tuning {
		tune(&mgrOpts)
	}
	fence, err := cmdutil.FenceLeaderElection(clients.LeaderElection, &mgrOpts)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	for _, crd := range requiredCRDs {
		if _, err := mgr.GetRESTMapper().RESTMapping(crd.kind.GroupKind(), crd.kind.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("the %s CRD (%s) is not installed: install %s, e.g. kubectl apply --server-side -f %s",
					crd.kind.Kind, crd.kind.GroupVersion(), crd.file, crd.file)
			}
			return fmt.Errorf("look up the %s CRD: %w", crd.kind.Kind, err)
		}
	}
	// Every replica may do this: creating is idempotent, and a PodGroup
	// that names no queue must find one however the scheduler starts.
	if err := queues.EnsureDefaultQueue(ctx, mgr.GetClient()); err != nil {
		return err
	}

	c, err := cache.New(ctx, mgr.GetCache(), cache.Options{SchedulerName: opts.SchedulerName})
	if err != nil {
		return err
	}
	// The scheduler's own recorder rather than the manager's: its events
	// wait while a cycle commits (see eventsink).
	gate := eventsink.NewGate()
	recorder, stopEvents, err := startRecorder(ctx, cfg, scheme, opts.SchedulerName, gate)
	if err != nil {
		return err
	}
	defer stopEvents()
	binderOpts := []binder.Option{binder.WithSchedulerName(opts.SchedulerName)}
	if !opts.PodScheduledEvents {
		binderOpts = append(binderOpts, binder.WithoutScheduledEvents())
	}
	// The status writer runs beside the loop, so that what a user reads
	// never holds the binds back.
	writer := status.NewWriter(mgr.GetClient(), recorder, status.WriterOptions{
		Workers:   opts.StatusWriteWorkers,
		Fence:     fence.Checker(),
		EventGate: gate,
	})
	if err := mgr.Add(writer); err != nil {
		return err
	}
	sched := scheduler.New(c,
		binder.New(mgr.GetClient(), recorder, opts.BindWorkers, binderOpts...),
		writer,
		scheduler.Options{
			Actions:              acts,
			Plugins:              plugs,
			MinCyclePeriod:       opts.MinCyclePeriod,
			MaxIdlePeriod:        opts.MaxIdlePeriod,
			EventGate:            gate,
			PartialGangGrace:     opts.PartialGangGrace,
			UnschedulableRefresh: opts.UnschedulableRefresh,
			Fence:                fence.Checker(),
			Log:                  ctrl.Log.WithName("scheduler"),
			// The informers list at resourceVersion "0", from the API
			// server's watch cache, which may not hold yet the default
			// Queue created above; a first cycle without it would refuse
			// every gang of that queue (QueueNotFound) in their status and
			// events, and bind them a cycle later.
			StartAfter: func(ctx context.Context) {
				if !c.AwaitObject(ctx, queues.DefaultQueue(), defaultQueueWait) {
					ctrl.Log.WithName("scheduler").Info("The default Queue is not in the cache yet; scheduling without it",
						"queue", schedulingv1alpha1.DefaultQueueName, "waited", defaultQueueWait)
				}
			},
		})
	if err := mgr.Add(sched); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// startRecorder starts an events.k8s.io/v1 recorder whose writes wait for
// gate. Its client has its own rate limiter, as kube-scheduler's events
// client does, so events never take a bind's place in the client's queue.
func startRecorder(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, name string, gate *eventsink.Gate) (events.EventRecorder, func(), error) {
	own := cmdutil.Protobuf(cfg)
	own.RateLimiter = nil // a bucket of its own at the same rate, not the binds' (cmdutil.LimitClients)
	cl, err := eventsv1client.NewForConfig(own)
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	broadcaster := events.NewBroadcaster(eventsink.New(&events.EventSinkImpl{Interface: cl}, gate, eventsink.Options{}))
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("start recording events: %w", err)
	}
	return broadcaster.NewRecorder(scheme, name), broadcaster.Shutdown, nil
}
