package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/troupe-ml/troupe/integrations/kubenative"
)

// NewControlPlane configures etcd and kube-apiserver from binDir with
// their data and certificates under dataDir, their output in
// logDir/etcd.log and logDir/kube-apiserver.log, and the CRDs of crdDirs
// installed at start. The log files it opened are returned for the caller
// to close after the control plane stops, also on error.
func NewControlPlane(binDir string, crdDirs []string, dataDir, logDir string) (*envtest.Environment, []*os.File, error) {
	var files []*os.File
	open := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(logDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    ptr.To(false),
		// Two cores shared with the operator, the scheduler and kwok.
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(binDir, "etcd"),
				DataDir: filepath.Join(dataDir, "etcd"),
				Out:     etcdLog,
				Err:     etcdLog,
			},
			APIServer: &envtest.APIServer{
				Path:    filepath.Join(binDir, "kube-apiserver"),
				CertDir: filepath.Join(dataDir, "pki"),
				Out:     apiLog,
				Err:     apiLog,
			},
		},
	}
	ServeWorkloadAPI(env, true)
	for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, files, err
		}
	}
	return env, files, nil
}

// WriteKubeconfig writes an admin kubeconfig for cfg, with one context
// named name.
func WriteKubeconfig(cfg *rest.Config, path, name string) error {
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

// DefaultControllers are what a cluster of simulated nodes needs: the
// garbage collector (a deleted job's pods and services go with it), the
// namespace controller (namespaces can be deleted), and the node
// lifecycle controller (it removes the not-ready taint admission puts on
// every new node once kwok reports the node Ready).
var DefaultControllers = []string{"garbage-collector-controller", "namespace-controller", "node-lifecycle-controller", kubenative.ProtectionController}

// PodGCController deletes the pods bound to a node that no longer exists,
// as on any real cluster; a cluster whose nodes get deleted needs it, or
// such pods stay Running on no node forever.
const PodGCController = "pod-garbage-collector-controller"

// ControllerManagerArgs runs the named controllers of
// kube-controller-manager (DefaultControllers if none). No controller
// needs service-account keys, and nothing is served.
func ControllerManagerArgs(kubeconfig string, controllers ...string) []string {
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--node-monitor-period=2s",
		"--feature-gates=" + kubenative.FeatureGate,
	}
}

// KwokArgs runs kwok on the nodes annotated kwok.x-k8s.io/node=fake, with
// the stage configs of kwokDir (fast node start, heartbeats, fast pod
// start, the chaos stages) and any extra stage files, node leases like a
// kubelet, and pod IPs away from the service range.
func KwokArgs(kubeconfig, kwokDir string, extraStages ...string) ([]string, error) {
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
		"--manage-nodes-with-annotation-selector=" + KwokSelector,
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
	}
	for _, s := range append(stages, extraStages...) {
		args = append(args, "--config="+s)
	}
	return args, nil
}

// ServeWorkloadAPI turns on the Workload API (scheduling.k8s.io/v1beta1,
// off by default in Kubernetes 1.37) in env's API server, so that the
// kube-scheduler gang backend can be used on it. Its admission puts a
// finalizer on every PodGroup that kube-controller-manager's
// PodGroupProtection controller lifts once no pod names the group; where
// no controller manager runs that (protect false), it is turned off, or no
// PodGroup could ever be deleted.
func ServeWorkloadAPI(env *envtest.Environment, protect bool) {
	args := env.ControlPlane.GetAPIServer().Configure()
	for flag, value := range kubenative.APIServerFlags {
		args.Append(flag, value)
	}
	if !protect {
		args.Append("disable-admission-plugins", kubenative.ProtectionAdmission)
	}
}
