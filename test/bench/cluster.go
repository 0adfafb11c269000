package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/cmdutil"
	"github.com/troupe-ml/troupe/internal/localcluster"
	"github.com/troupe-ml/troupe/test/bench/measure"
)

// scheme knows every PodGroup dialect the harness writes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(s))
	utilruntime.Must(volcanov1beta1.AddToScheme(s))
	utilruntime.Must(spv1alpha1.AddToScheme(s))
	utilruntime.Must(topologyv1alpha1.AddToScheme(s))
	return s
}()

// cluster is one run's fresh kube-apiserver and etcd.
type cluster struct {
	env *envtest.Environment
	// cfg is the harness's own: fast, since setup is not measured.
	cfg       *rest.Config
	client    client.Client
	clientset kubernetes.Interface
	// kubeconfig is a file with an admin user for the placer.
	kubeconfig string
	// up is when the control plane and its CRDs were ready.
	up time.Time
	// apiserver and etcd are the processes' pids, for their CPU time.
	apiserver, etcd []int
	// auditLog is the API server's audit log of binds and pod removals
	// (measure.BindAuditPolicy), which the run's times are read from.
	auditLog string
	logs     []io.Closer
}

// startCluster starts etcd and kube-apiserver from binDir with the CRDs
// crds (files or folders), their logs and the placer's kubeconfig in dir.
func startCluster(binDir string, crds []string, dir string) (*cluster, error) {
	c := &cluster{}
	open := func(name string) (*os.File, error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			c.logs = append(c.logs, f)
		}
		return f, err
	}
	etcdLog, err := open("etcd.log")
	if err != nil {
		return nil, err
	}
	apiLog, err := open("kube-apiserver.log")
	if err != nil {
		c.closeLogs()
		return nil, err
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    ptr.To(false),
		Scheme:                scheme,
		// Two cores, and the last run's processes may still be exiting.
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Path: filepath.Join(binDir, "etcd"), Out: etcdLog, Err: etcdLog},
			APIServer: &envtest.APIServer{Path: filepath.Join(binDir, "kube-apiserver"), Out: apiLog, Err: apiLog},
		},
	}
	// No kube-controller-manager runs here.
	localcluster.ServeWorkloadAPI(c.env, false)
	c.auditLog = filepath.Join(dir, "audit.log")
	if err := measure.EnableAudit(c.env, measure.BindAuditPolicy, filepath.Join(dir, "audit-policy.yaml"), c.auditLog); err != nil {
		c.closeLogs()
		return nil, err
	}
	cfg, err := c.env.Start()
	if err != nil {
		c.closeLogs()
		return nil, fmt.Errorf("start the control plane from %s: %w", binDir, err)
	}
	c.up = time.Now()
	if err := c.connect(cfg, dir); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) connect(cfg *rest.Config, dir string) error {
	c.cfg = rest.CopyConfig(cfg)
	c.cfg.QPS, c.cfg.Burst = 5000, 5000
	var err error
	if c.client, err = client.New(c.cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	// Protobuf, as the schedulers speak it: the harness's own watch of
	// every bind should cost the API server as little as it can.
	if c.clientset, err = kubernetes.NewForConfig(cmdutil.Protobuf(c.cfg)); err != nil {
		return err
	}
	// The placer is its own user, with every right, as a scheduler
	// deployed with cluster-admin would be.
	user, err := c.env.AddUser(envtest.User{Name: "bench-placer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add the placer's user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kc, 0o600); err != nil {
		return err
	}
	procs := measure.ChildrenNamed("kube-apiserver", "etcd")
	c.apiserver, c.etcd = procs["kube-apiserver"], procs["etcd"]
	if len(c.apiserver) != 1 || len(c.etcd) != 1 {
		return fmt.Errorf("found %d kube-apiserver and %d etcd processes started by the harness, want one each", len(c.apiserver), len(c.etcd))
	}
	return nil
}

// metrics reads the API server's /metrics.
func (c *cluster) metrics(ctx context.Context) ([]measure.Sample, error) {
	raw, err := c.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return measure.ParseText(bytes.NewReader(raw))
}

// writesQuiet reads the API server's metrics until its count of writes has
// not moved for quiet, or at most max after the first read, and returns
// the last read, and whether the count went quiet. What a placer writes
// just after its last bind (status, events) is its work too; a placer
// that keeps writing while idle is cut off at max.
func (c *cluster) writesQuiet(ctx context.Context, quiet, max time.Duration) ([]measure.Sample, bool, error) {
	const poll = 250 * time.Millisecond
	deadline := time.Now().Add(max)
	last, err := c.metrics(ctx)
	if err != nil {
		return nil, false, err
	}
	since := time.Now()
	for time.Now().Before(deadline) && time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(poll):
		}
		cur, err := c.metrics(ctx)
		if err != nil {
			return nil, false, err
		}
		if measure.WritesFrom(cur).Total() != measure.WritesFrom(last).Total() {
			since = time.Now()
		}
		last = cur
	}
	return last, time.Since(since) >= quiet, nil
}

func (c *cluster) stop() error {
	err := c.env.Stop()
	c.closeLogs()
	return err
}

func (c *cluster) closeLogs() {
	for _, l := range c.logs {
		_ = l.Close()
	}
}
