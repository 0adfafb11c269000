// Package testutil starts a real kube-apiserver and etcd for the suites,
// runs the operator's controllers against them, and builds test objects.
package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// RepoRoot is the repository root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Env is a running API server with the project's CRDs installed.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
}

// StartEnv starts etcd and kube-apiserver from KUBEBUILDER_ASSETS (built by
// hack/controlplane.sh; `make test` sets it) and installs the CRDs under
// config/crd/bases, and those the options add.
func StartEnv(opts ...EnvOption) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or export KUBEBUILDER_ASSETS=$(hack/controlplane.sh)")
	}
	adds := []func(*k8sruntime.Scheme) error{kubeflowv1.AddToScheme, schedulingv1alpha1.AddToScheme, volcanov1beta1.AddToScheme, spv1alpha1.AddToScheme, topologyv1alpha1.AddToScheme}
	for _, add := range adds {
		if err := add(scheme.Scheme); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// No kube-controller-manager runs here.
	localcluster.ServeWorkloadAPI(env, false)
	for _, o := range opts {
		o(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: c}, nil
}
