package peers

import (
	"fmt"
	"os"
	"path/filepath"
)

// The environment variables `make e2e` sets to the binaries
// hack/peer-schedulers.sh built.
const (
	VolcanoBinaryEnv      = "TROUPE_VOLCANO_SCHEDULER"
	CoschedulingBinaryEnv = "TROUPE_COSCHEDULING_SCHEDULER"
	KueueBinaryEnv        = "TROUPE_KUEUE"
)

// VolcanoBinary is the vc-scheduler binary $TROUPE_VOLCANO_SCHEDULER names.
func VolcanoBinary() (string, error) { return binaryFromEnv(VolcanoBinaryEnv, "volcano") }

// CoschedulingBinary is the kube-scheduler binary
// $TROUPE_COSCHEDULING_SCHEDULER names.
func CoschedulingBinary() (string, error) {
	return binaryFromEnv(CoschedulingBinaryEnv, "coscheduling")
}

// KueueBinary is Kueue's manager $TROUPE_KUEUE names.
func KueueBinary() (string, error) { return binaryFromEnv(KueueBinaryEnv, "kueue") }

func binaryFromEnv(env, peer string) (string, error) {
	path := os.Getenv(env)
	if path == "" {
		return "", fmt.Errorf("%s is not set: run `make e2e`, or export %s=$(hack/peer-schedulers.sh %s)", env, env, peer)
	}
	return path, nil
}

// KubeSchedulerBinary is upstream kube-scheduler in $KUBEBUILDER_ASSETS:
// hack/controlplane.sh builds it beside the API server it is tested with,
// so `make test` needs nothing more.
func KubeSchedulerBinary() (string, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/controlplane.sh)")
	}
	return filepath.Join(assets, "kube-scheduler"), nil
}
