package operatorbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/localcluster"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/test/bench/measure"
)

const (
	namespace = "bench"
	// toNamespace is where training-operator looks for its webhook
	// certificate's Secret (MY_POD_NAMESPACE).
	toNamespace = "kubeflow"
	// toCertSecret is the Secret its certificate rotator keeps.
	toCertSecret = "training-operator-webhook-cert"
	// toCertMarker is where training-operator v1.9.4's rotator looks for
	// the mounted certificate (a fixed path in its code): it waits for the
	// file to exist before it sets up any controller.
	toCertMarker = "/tmp/k8s-webhook-server/serving-certs"
	// podsPerNode is how many of the benchmark's pods a node takes at most
	// (kubelets' 110, less a margin), which sets the node count.
	podsPerNode = 100
	// restartTimeout bounds the gang-restart probe.
	restartTimeout = 3 * time.Minute
	// syncTimeout bounds the wait for an operator's controllers to start.
	syncTimeout = 2 * time.Minute
)

// started is the log line of controller-runtime, which both operators
// use, once a controller's caches synced and its workers run.
const started = "Starting workers"

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kubeflowv1.AddToScheme(s))
	return s
}()

// stopper is a process the run stops at its end.
type stopper func() error

// runOne runs combination c once in dir and measures it.
func runOne(ctx context.Context, o *Options, c Combination, dir string, log io.Writer) (res Result) {
	res = Result{Combination: c.Name, Jobs: o.Jobs, Pods: o.Jobs * (1 + o.Workers)}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		res.Err = err
		return res
	}
	note := func(format string, args ...any) { fmt.Fprintf(log, "  "+format+"\n", args...) }
	var stops []stopper
	defer func() {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		if err := errors.Join(errs...); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("stop: %w", err)
		}
		// etcd's data (tens of MB a run, most of it preallocated log) is
		// kept only where a run failed, beside the logs.
		if res.Err == nil {
			_ = os.RemoveAll(filepath.Join(dir, "etcd"))
		}
	}()

	crds := []string{filepath.Join(o.CRDs, "bases")}
	if c.Operator == OperatorTraining {
		crds = []string{filepath.Join(filepath.Dir(o.TrainingOperator), "crds")}
	}
	env, files, err := localcluster.NewControlPlane(o.ControlPlaneDir, crds, dir, logs)
	stops = append(stops, func() error {
		for _, f := range files {
			_ = f.Close()
		}
		return nil
	})
	if err != nil {
		res.Err = err
		return res
	}
	auditLog := filepath.Join(logs, "audit.log")
	if err := measure.EnableAudit(env, auditPolicy, filepath.Join(dir, "audit-policy.yaml"), auditLog); err != nil {
		res.Err = err
		return res
	}
	// Stopped also when it starts only in part: etcd may be up.
	stops = append(stops, env.Stop)
	cfg, err := env.Start()
	if err != nil {
		res.Err = fmt.Errorf("start the control plane: %w", err)
		return res
	}
	cl, err := connect(cfg, dir)
	if err != nil {
		res.Err = err
		return res
	}
	err = cl.prepare(ctx, cfg, o, c, logs)
	stops = append(stops, cl.stops...)
	if err != nil {
		res.Err = err
		return res
	}
	note("%d nodes Ready; starting the scheduler and the operator", cl.nodes)

	sched, err := startScheduler(ctx, o, c, cl.kubeconfig, filepath.Join(logs, "scheduler.log"))
	if err != nil {
		res.Err = err
		return res
	}
	stops = append(stops, sched.Stop)
	op, opLog, err := startOperator(o, c, cl.kubeconfig, dir, logs)
	if err != nil {
		res.Err = err
		return res
	}
	stops = append(stops, func() error { return op.Stop(10 * time.Second) })
	if err := waitStarted(ctx, op, opLog); err != nil {
		res.Err = err
		return res
	}

	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	tr := newTracker(res.Jobs, res.Pods)
	if err := tr.start(trackCtx, cl.clientset, cl.dynamic, c, namespace); err != nil {
		res.Err = err
		return res
	}

	// The harness's client finds the PyTorchJob resource now (discovery),
	// not on the clock.
	if err := cl.client.List(ctx, &kubeflowv1.PyTorchJobList{}, client.InNamespace(namespace)); err != nil {
		res.Err = fmt.Errorf("list PyTorchJobs: %w", err)
		return res
	}
	// The clock starts at the first create, with the operator running and
	// synced and the scheduler running.
	cpu0, err := measure.ReadProcStat(op.Pid())
	if err != nil {
		res.Err = err
		return res
	}
	start := time.Now()
	if err := createJobs(ctx, cl.client, namespace, o.Jobs, o.Workers, c.Operator == OperatorTroupe); err != nil {
		res.Err = err
		return res
	}
	note("%d jobs created in %v", o.Jobs, time.Since(start).Round(time.Millisecond))
	timeout := time.NewTimer(o.RunTimeout)
	defer timeout.Stop()
	select {
	case <-tr.running:
	case <-op.Done():
		res.Err = fmt.Errorf("the operator exited (see %s); %s", opLog, tr.progress())
		return res
	case <-sched.Done():
		res.Err = fmt.Errorf("the scheduler exited (see %s); %s", sched.LogFile(), tr.progress())
		return res
	case <-timeout.C:
		res.Err = fmt.Errorf("not every pod Running after %v: %s", o.RunTimeout, tr.progress())
		return res
	case <-ctx.Done():
		res.Err = ctx.Err()
		return res
	}
	created, running := tr.times()
	if created.IsZero() {
		res.Err = fmt.Errorf("every pod runs, but not every job has a PodGroup: %s", tr.progress())
		return res
	}
	res.Created, res.Running = created.Sub(start), running.Sub(start)
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		res.Err = ctx.Err()
		return res
	}
	cpu1, err := measure.ReadProcStat(op.Pid())
	if err != nil {
		res.Err = fmt.Errorf("the operator's CPU time: %w", err)
		return res
	}
	end := time.Now()
	res.OperatorCPU = cpu1.CPU - cpu0.CPU
	w, err := countWrites(auditLog, operatorAgent(o, c), start, end)
	if err != nil {
		res.Err = fmt.Errorf("read the audit log: %w", err)
		return res
	}
	res.OperatorWrites, res.AllWrites = w.Agent, w.All
	note("all pods and PodGroups after %v, all Running after %v; operator CPU %v, %d writes (%s), %d writes by all",
		res.Created.Round(time.Millisecond), res.Running.Round(time.Millisecond), res.OperatorCPU, w.Agent, kinds(w.ByKind), w.All)

	if o.Restart {
		res.Restart = probeRestart(ctx, cl.client, tr, jobName(0))
		note("restart probe: %s", res.Restart)
	}
	return res
}

// cluster are the clients of a run's API server and what runs beside it.
type cluster struct {
	kubeconfig string
	client     client.Client
	clientset  kubernetes.Interface
	dynamic    dynamic.Interface
	nodes      int
	stops      []stopper
}

func connect(cfg *rest.Config, dir string) (*cluster, error) {
	cl := &cluster{kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := localcluster.WriteKubeconfig(cfg, cl.kubeconfig, "bench-operator"); err != nil {
		return nil, err
	}
	// The harness creates the jobs as fast as it can: its client must not
	// be what limits the operators.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	var err error
	if cl.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if cl.clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if cl.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return cl, nil
}

// prepare installs the backend's CRDs, starts kwok and registers the
// nodes, enough for every pod.
func (cl *cluster) prepare(ctx context.Context, restCfg *rest.Config, o *Options, c Combination, logs string) error {
	var err error
	switch c.Backend {
	case BackendVolcano:
		err = peers.InstallVolcano(ctx, restCfg)
	case BackendCoscheduling:
		err = peers.InstallCoscheduling(restCfg)
	}
	if err != nil {
		return err
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}}
	if c.Operator == OperatorTraining {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: toNamespace}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: toCertSecret, Namespace: toNamespace}})
	}
	for _, obj := range objs {
		if err := cl.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	kargs, err := localcluster.KwokArgs(cl.kubeconfig, o.KwokDir)
	if err != nil {
		return err
	}
	kwok, err := localcluster.Start("kwok", filepath.Join(o.KwokDir, "kwok"), kargs, filepath.Join(logs, "kwok.log"))
	if err != nil {
		return err
	}
	cl.stops = append(cl.stops, func() error { return kwok.Stop(10 * time.Second) })
	pods := o.Jobs * (1 + o.Workers)
	cl.nodes = (pods+podsPerNode-1)/podsPerNode + 1
	nodes := localcluster.Nodes(cl.nodes, 0)
	if err := localcluster.CreateNodes(ctx, cl.client, nodes); err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	// No controller manager runs (nothing here needs one), so the harness
	// lifts the not-ready taints itself once kwok reports the nodes Ready.
	return localcluster.WaitNodesReady(ctx, cl.client, names, 0, 2*time.Minute, func(string) {})
}

// startScheduler starts the backend's scheduler with the run's client
// limits.
func startScheduler(ctx context.Context, o *Options, c Combination, kubeconfig, logFile string) (*peers.Process, error) {
	po := peers.Options{Kubeconfig: kubeconfig, QPS: o.QPS, Burst: o.Burst, LogFile: logFile}
	switch c.Backend {
	case BackendTroupe:
		po.Binary = o.TroupeScheduler
		return peers.StartTroupeScheduler(po)
	case BackendVolcano:
		po.Binary = o.VolcanoScheduler
		return peers.StartVolcano(ctx, peers.VolcanoOptions{Options: po})
	default:
		po.Binary = o.CoschedulingScheduler
		return peers.StartCoscheduling(ctx, peers.CoschedulingOptions{Options: po})
	}
}

// startOperator starts the combination's operator for PyTorchJobs alone,
// with one reconcile worker (both operators' default), the run's client
// limits, and no metrics, probe or leader election.
func startOperator(o *Options, c Combination, kubeconfig, dir, logs string) (*localcluster.Proc, string, error) {
	logFile := filepath.Join(logs, "operator.log")
	common := []string{
		"--kubeconfig=" + kubeconfig,
		"--enable-scheme=pytorchjob",
		"--gang-scheduler-name=" + c.gangSchedulerName(),
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}
	if c.Operator == OperatorTroupe {
		args := append(common, fmt.Sprintf("--kube-api-qps=%v", o.QPS), fmt.Sprintf("--kube-api-burst=%d", o.Burst))
		p, err := localcluster.Start("operator", o.TroupeOperator, args, logFile)
		return p, logFile, err
	}
	// training-operator v1.9.4 has no flag to run without its webhook
	// server and certificate rotator: the harness gives the rotator an
	// empty Secret to fill, and the server a self-signed certificate in
	// its TMPDIR. The rotator only checks that a file exists at its fixed
	// path; one already there (another run's) is left as it is.
	tmp := filepath.Join(dir, "tmp")
	if err := writeServingCert(filepath.Join(tmp, "k8s-webhook-server", "serving-certs")); err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(filepath.Join(toCertMarker, "tls.crt")); err != nil {
		if err := writeServingCert(toCertMarker); err != nil {
			return nil, "", fmt.Errorf("training-operator's certificate at %s: %w", toCertMarker, err)
		}
	}
	webhook, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	port := webhook[strings.LastIndexByte(webhook, ':')+1:]
	qps, burst := o.trainingOperatorLimits()
	args := append(common, fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", burst),
		"--webhook-server-port="+port, "--controller-threads=1")
	p, err := localcluster.StartEnv("training-operator", o.TrainingOperator, args,
		[]string{"TMPDIR=" + tmp, "MY_POD_NAMESPACE=" + toNamespace}, logFile)
	return p, logFile, err
}

// operatorAgent is the start of the operator's user agent: client-go's
// default (rest.DefaultKubernetesUserAgent), the base name of the binary as
// started and a slash. It follows the path given, so that an operator
// binary under another name (a build to compare with) is still counted.
func operatorAgent(o *Options, c Combination) string {
	_, bin := c.operatorBinary(o)
	return filepath.Base(bin) + "/"
}

// waitStarted waits until the operator's log says its PyTorchJob
// controller runs.
func waitStarted(ctx context.Context, op *localcluster.Proc, logFile string) error {
	deadline := time.Now().Add(syncTimeout)
	for {
		raw, _ := os.ReadFile(logFile)
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if bytes.Contains(line, []byte(started)) && bytes.Contains(bytes.ToLower(line), []byte("pytorchjob")) {
				return nil
			}
		}
		if done, err := op.Exited(); done {
			return fmt.Errorf("the operator exited before its controller started: %v (see %s)", err, logFile)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator's PyTorchJob controller did not start within %v (see %s)", syncTimeout, logFile)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func kinds(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
