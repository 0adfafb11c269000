package soak

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// The work folder's layout, and the cluster's names.
const (
	logsDir   = "logs"
	namespace = "soak"
	// leaseNamespace holds the replicas' leader-election Leases.
	leaseNamespace = "troupe-system"
	// Priority classes of the jobs, so that gangs queue by priority.
	priorityHigh = "soak-high"
	priorityLow  = "soak-low"
	// completeLabel finishes a Running pod with exit code 0 through the
	// soak's own kwok stage (stages/soak-pod-complete.yaml).
	completeLabel = "soak.troupe.dev/complete"
)

//go:embed stages/soak-pod-complete.yaml
var completeStage []byte

// soakBinaries are the programs the soak starts; a leftover one (from a
// soak killed before it could stop them) is found by its name and the
// work folder on its command line.
var soakBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "operator", "scheduler"}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kubeflowv1.AddToScheme(s))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(s))
	return s
}()

// cluster is the soak's control plane, kube-controller-manager, kwok and
// nodes: localcluster's, as the demo runs them, plus the pod garbage
// collector (the driver deletes nodes).
type cluster struct {
	dir        string
	env        *envtest.Environment
	files      []*os.File
	cfg        *rest.Config
	kubeconfig string
	client     client.Client
	clientset  kubernetes.Interface
	procs      []*localcluster.Proc
	nodes      []*corev1.Node
}

func (c *cluster) logPath(name string) string { return filepath.Join(c.dir, logsDir, name+".log") }

// startCluster starts everything but Troupe, in o.WorkDir.
func startCluster(ctx context.Context, o *Options, note func(string)) (*cluster, error) {
	c := &cluster{dir: o.WorkDir}
	if n := localcluster.KillLeftovers(o.WorkDir, soakBinaries); n > 0 {
		note(fmt.Sprintf("stopped %d processes an earlier soak left running on %s", n, o.WorkDir))
	}
	if err := os.RemoveAll(o.WorkDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.WorkDir, logsDir), 0o755); err != nil {
		return nil, err
	}
	stage := filepath.Join(o.WorkDir, "soak-pod-complete.yaml")
	if err := os.WriteFile(stage, completeStage, 0o644); err != nil {
		return nil, err
	}
	env, files, err := localcluster.NewControlPlane(o.ControlPlaneDir, []string{o.CRDDir}, o.WorkDir, filepath.Join(o.WorkDir, logsDir))
	c.files = files
	if err != nil {
		return c, err
	}
	c.env = env
	if c.cfg, err = env.Start(); err != nil {
		return c, fmt.Errorf("start the control plane: %w", err)
	}
	c.kubeconfig = filepath.Join(o.WorkDir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(c.cfg, c.kubeconfig, "troupe-soak"); err != nil {
		return c, err
	}
	// The harness's own client is fast: it must not fall behind the
	// chaos it drives.
	c.cfg = rest.CopyConfig(c.cfg)
	c.cfg.QPS, c.cfg.Burst = 200, 400
	if c.client, err = client.New(c.cfg, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	if c.clientset, err = kubernetes.NewForConfig(c.cfg); err != nil {
		return c, err
	}
	note("API server ready at " + c.cfg.Host)

	controllers := append(append([]string(nil), localcluster.DefaultControllers...), localcluster.PodGCController)
	kcm, err := localcluster.Start("kube-controller-manager", filepath.Join(o.ControlPlaneDir, "kube-controller-manager"),
		localcluster.ControllerManagerArgs(c.kubeconfig, controllers...), c.logPath("kube-controller-manager"))
	if err != nil {
		return c, err
	}
	c.procs = append(c.procs, kcm)
	kargs, err := localcluster.KwokArgs(c.kubeconfig, o.KwokDir, stage)
	if err != nil {
		return c, err
	}
	kwok, err := localcluster.Start("kwok", filepath.Join(o.KwokDir, "kwok"), kargs, c.logPath("kwok"))
	if err != nil {
		return c, err
	}
	c.procs = append(c.procs, kwok)

	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityHigh}, Value: 1000, Description: "the soak's high-priority jobs"},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityLow}, Value: 100, Description: "the soak's low-priority jobs"},
	} {
		if err := c.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return c, fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	c.nodes = localcluster.Nodes(o.CPUNodes, o.GPUNodes)
	if err := localcluster.CreateNodes(ctx, c.client, copyNodes(c.nodes)); err != nil {
		return c, err
	}
	var names []string
	for _, n := range c.nodes {
		names = append(names, n.Name)
	}
	if err := localcluster.WaitNodesReady(ctx, c.client, names, 20*time.Second, 2*time.Minute, note); err != nil {
		return c, err
	}
	note(fmt.Sprintf("%d CPU and %d GPU nodes Ready", o.CPUNodes, o.GPUNodes))
	return c, nil
}

func copyNodes(nodes []*corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		out[i] = n.DeepCopy()
	}
	return out
}

// nodeShape is the node the soak made under that name, to add it back
// after the driver deleted it.
func (c *cluster) nodeShape(name string) *corev1.Node {
	for _, n := range c.nodes {
		if n.Name == name {
			return n.DeepCopy()
		}
	}
	return nil
}

// stop ends kwok, kube-controller-manager and the control plane, in that
// order; the logs stay.
func (c *cluster) stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd and kube-apiserver: %w", err))
		}
	}
	for _, f := range c.files {
		_ = f.Close()
	}
	if n := localcluster.KillLeftovers(c.dir, soakBinaries); n > 0 {
		errs = append(errs, fmt.Errorf("killed %d processes that did not stop", n))
	}
	return errors.Join(errs...)
}

// health reports a cluster process that exited on its own.
func (c *cluster) health() error {
	for _, p := range c.procs {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v (see %s)", p.Name, err, c.logPath(p.Name))
		}
	}
	return nil
}
