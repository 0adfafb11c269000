package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The state folder's layout.
const (
	pidFile        = "demo.pid"
	kubeconfigFile = "kubeconfig"
	logsDir        = "logs"
)

// prepareStateDir makes the state folder ready for a new cluster: it
// refuses if another demo is running on it, stops what a killed demo left
// running there, and empties it (keeping nothing from the last run but
// the folder).
func prepareStateDir(dir string, note func(string)) error {
	if raw, err := os.ReadFile(filepath.Join(dir, pidFile)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid != os.Getpid() && processAlive(pid, "demo") {
			return fmt.Errorf("another demo (pid %d) is running on %s: stop it with Ctrl-C, or pass --state-dir", pid, dir)
		}
	}
	if n := killLeftovers(dir); n > 0 {
		note(fmt.Sprintf("stopped %d processes an earlier demo left running on %s", n, dir))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("empty the state folder: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// killLeftovers kills the control-plane and kwok processes that run on the
// state folder, found by their command line; it returns how many.
func killLeftovers(dir string) int {
	procs := leftoverProcesses(dir)
	for pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(procs) > 0 {
		// Give the kernel a moment to reap them, so that their ports and
		// files are free.
		deadline := time.Now().Add(5 * time.Second)
		for len(leftoverProcesses(dir)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return len(procs)
}

// cleanStateDir removes everything in the state folder but the logs.
func cleanStateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == logsDir {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// newControlPlane configures etcd and kube-apiserver from binDir with
// their data, certificates and output in the state folder, and the CRDs
// of crdDir installed at start.
func newControlPlane(binDir, crdDir, stateDir string) (*envtest.Environment, []*os.File, error) {
	var files []*os.File
	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(stateDir, logsDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	etcdLog, err := open("etcd.log")
	if err != nil {
		return nil, nil, err
	}
	apiLog, err := open("kube-apiserver.log")
	if err != nil {
		return nil, files, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    ptr.To(false),
		// Two cores shared with the operator, the scheduler and kwok.
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(binDir, "etcd"),
				DataDir: filepath.Join(stateDir, "etcd"),
				Out:     etcdLog,
				Err:     etcdLog,
			},
			APIServer: &envtest.APIServer{
				Path:    filepath.Join(binDir, "kube-apiserver"),
				CertDir: filepath.Join(stateDir, "pki"),
				Out:     apiLog,
				Err:     apiLog,
			},
		},
	}
	for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, files, err
		}
	}
	return env, files, nil
}

// writeKubeconfig writes an admin kubeconfig for cfg, with a context named
// troupe-demo.
func writeKubeconfig(cfg *rest.Config, path string) error {
	const name = "troupe-demo"
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: host + cfg.APIPath, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// controllerManagerArgs runs only what a cluster of simulated nodes needs:
// the garbage collector (a deleted job's pods and services go with it),
// the namespace controller (namespaces can be deleted), and the node
// lifecycle controller (it removes the not-ready taint admission puts on
// every new node once kwok reports the node Ready). No controller needs
// service-account keys, and nothing is served.
func controllerManagerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=garbage-collector-controller,namespace-controller,node-lifecycle-controller",
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--node-monitor-period=2s",
	}
}

// kwokArgs runs kwok on the nodes annotated kwok.x-k8s.io/node=fake, with
// the stage configs of kwokDir (fast node start, heartbeats, fast pod
// start), node leases like a kubelet, and pod IPs away from the service
// range.
func kwokArgs(kubeconfig, kwokDir string) ([]string, error) {
	stages, err := filepath.Glob(filepath.Join(kwokDir, "stages", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no kwok stage configs in %s/stages (rebuild with hack/kwok.sh)", kwokDir)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokSelector,
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	return args, nil
}
