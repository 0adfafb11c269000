// Package nullbinder is the benchmark's logic-free placer: it binds every
// pending pod of its scheduler name to the next node, round-robin, through
// the pods/binding subresource, with the client settings the schedulers
// get. What it reaches is the API server's limit on this machine; the
// harness runs it as its own process, as it runs every scheduler.
package nullbinder

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// SchedulerName is the spec.schedulerName of the pods it binds.
const SchedulerName = "bench-null-binder"

// Client are the client settings the harness gives every placer, with
// troupe-scheduler's flag names.
type Client struct {
	// QPS and Burst are the client's rate limit; a negative QPS sets
	// none (client-go's meaning).
	QPS   float64
	Burst int
	// BindWorkers are the binds in flight at once, for the placers that
	// have such a setting; each checks its own.
	BindWorkers int
}

// Limit says what the rate limit is, for a report: "none", or the QPS and
// burst.
func (c Client) Limit() string {
	if c.QPS < 0 {
		return "none (client-go's limiter off)"
	}
	return fmt.Sprintf("QPS %v, burst %d", c.QPS, c.Burst)
}

// BindFlags registers the settings, with their current values as
// defaults.
func (c *Client) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.QPS, "kube-api-qps", c.QPS, "Client queries per second to the API server; a negative value sets no client-side limit.")
	fs.IntVar(&c.Burst, "kube-api-burst", c.Burst, "Client burst of queries to the API server.")
	fs.IntVar(&c.BindWorkers, "bind-workers", c.BindWorkers, "Binds in flight at once.")
}

// Validate reports every invalid rate limit, naming its flag; BindWorkers
// is its user's to check.
func (c Client) Validate() []error {
	var errs []error
	if c.QPS == 0 {
		errs = append(errs, errors.New("--kube-api-qps: must not be 0 (a negative value sets no client-side limit)"))
	}
	if c.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: must be at least 1, got %d", c.Burst))
	}
	return errs
}

// Options are the null binder's flags.
type Options struct {
	Kubeconfig    string
	SchedulerName string
	Client
}

// NewOptions returns the defaults: no client-side limit, 16 binds in
// flight. The harness sets every one of them.
func NewOptions() *Options {
	return &Options{SchedulerName: SchedulerName, Client: Client{QPS: -1, Burst: 1000, BindWorkers: 16}}
}

// BindFlags registers the options.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig.")
	fs.StringVar(&o.SchedulerName, "scheduler-name", o.SchedulerName, "Bind the pods whose spec.schedulerName is this.")
	o.Client.BindFlags(fs)
}

// Validate reports every invalid option, naming its flag.
func (o *Options) Validate() error {
	errs := o.Client.Validate()
	if o.BindWorkers < 1 {
		errs = append(errs, fmt.Errorf("--bind-workers: must be at least 1, got %d", o.BindWorkers))
	}
	if o.SchedulerName == "" {
		errs = append(errs, errors.New("--scheduler-name: must not be empty"))
	}
	return errors.Join(errs...)
}

// KubeconfigPath is the --kubeconfig flag.
func (o *Options) KubeconfigPath() string { return o.Kubeconfig }

// ParseFlags parses and validates the null binder's flags.
func ParseFlags(args []string, stderr io.Writer) (*Options, error) {
	o := NewOptions()
	if err := cmdutil.ParseFlags("null-binder", args, stderr, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Main runs the null binder until ctx ends and returns its exit code.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	return cmdutil.Main(ctx, "null-binder", args, stderr, ParseFlags, Run)
}

// Run binds pending pods until ctx ends. The node list is read once at
// start: the benchmark's nodes exist before any placer starts.
func Run(ctx context.Context, cfg *rest.Config, o *Options) error {
	// Protobuf, as kube-scheduler speaks: the ceiling is the least the API
	// server can be asked to do for a bind.
	cfg = cmdutil.Protobuf(cfg)
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodeList, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]string, 0, len(nodeList.Items))
	for _, n := range nodeList.Items {
		nodes = append(nodes, n.Name)
	}
	if len(nodes) == 0 {
		return errors.New("no nodes to bind to")
	}
	slices.Sort(nodes)

	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer queue.ShutDown()
	selector := fields.AndSelectors(
		fields.OneTermEqualSelector("spec.schedulerName", o.SchedulerName),
		fields.OneTermEqualSelector("spec.nodeName", ""),
	).String()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = selector
	}))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())

	var next atomic.Uint64
	log := ctrl.Log.WithName("null-binder")
	for range o.BindWorkers {
		go func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				node := nodes[int(next.Add(1)-1)%len(nodes)]
				err := cs.CoreV1().Pods(key.Namespace).Bind(ctx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
					Target:     corev1.ObjectReference{Kind: "Node", Name: node},
				}, metav1.CreateOptions{})
				switch {
				case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
					// Bound, gone, or bound already: nothing more to do.
					queue.Forget(key)
				case ctx.Err() == nil:
					log.Error(err, "Bind", "pod", key)
					queue.AddRateLimited(key)
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}
