package operator

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// The operator's permissions, generated into config/rbac by `make generate`.
// Pods and pods/exec are listed because the MPI launcher's Role grants
// them, and Kubernetes lets a controller grant only what it holds itself.
// Leases are for leader election only (get, create, update, as
// controller-runtime's lock needs); the Helm chart grants them in the
// operator's own namespace only (hack/chartgen).
//
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs;pytorchjobs;mpijobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs/status;pytorchjobs/status;mpijobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods;services;configmaps;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/exec,verbs=create
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.troupe.dev,resources=topologies,verbs=get;list;watch
// +kubebuilder:rbac:groups=topology.volcano.sh,resources=hypernodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Main parses the command line, validates it and runs the operator until
// the context ends. It returns the process exit code: 2 for bad flags, 1
// when the operator fails.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	run := func(ctx context.Context, cfg *rest.Config, opts *Options) error { return Run(ctx, cfg, opts) }
	return cmdutil.Main(ctx, "operator", args, stderr, ParseFlags, run)
}

// ParseFlags parses and validates the operator's flags; the error names
// every invalid flag and what it allows.
func ParseFlags(args []string, stderr io.Writer) (*Options, error) {
	opts := NewOptions()
	if err := cmdutil.ParseFlags("operator", args, stderr, opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// Run starts the manager with the enabled controllers. Tuning functions
// adjust the manager's options; tests use them to run several managers in
// one process.
func Run(ctx context.Context, cfg *rest.Config, opts *Options, tuning ...func(*ctrl.Options)) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(scheme))
	utilruntime.Must(volcanov1beta1.AddToScheme(scheme))
	utilruntime.Must(spv1alpha1.AddToScheme(scheme))
	utilruntime.Must(topologyv1alpha1.AddToScheme(scheme))
	clients := cmdutil.LimitClients(cfg, opts.QPS, opts.Burst)
	cfg = clients.API

	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
	}
	opts.LeaderElection.Apply(&mgrOpts)
	if opts.Namespace != "" {
		mgrOpts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	}
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
	if err := SetupControllers(mgr, opts, engine.WithFence(fence.Checker())); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
