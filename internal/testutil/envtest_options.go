package testutil

import (
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// EnvOption adjusts the test API server StartEnv starts.
type EnvOption func(*envtest.Environment)

// WithCRDDirs installs the CRDs under dirs too, besides config/crd/bases.
func WithCRDDirs(dirs ...string) EnvOption {
	return func(env *envtest.Environment) {
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, dirs...)
	}
}

// PeerCRDDir holds the PodGroup (and Volcano Queue) CRDs of the peer gang
// schedulers, copied from their pinned modules by hack/peer-crds.sh.
func PeerCRDDir() string { return filepath.Join(RepoRoot(), "config", "crd", "peers") }

// NewSuiteWithEnv is NewSuite with options for its API server, such as
// WithCRDDirs(PeerCRDDir()).
func NewSuiteWithEnv(opts []EnvOption, schemes ...string) *Suite {
	return newSuite(opts, schemes)
}
