//go:build e2e

// Package e2e runs the operator against the real peer gang schedulers it
// has backends for, each a whole process built from the Go module proxy
// (hack/peer-schedulers.sh), on one real API server and etcd: kube-scheduler
// with scheduler-plugins' Coscheduling, Volcano's scheduler, and upstream
// kube-scheduler with its own gang scheduling (built by
// hack/controlplane.sh beside the API server, which serves the Workload
// API; no kube-controller-manager runs, so PodGroup protection is off, as
// internal/localcluster.ServeWorkloadAPI says). envtest
// runs no kubelet, so a pod counts as placed once it is bound
// (spec.nodeName set).
//
// The build tag keeps `go test ./...` (make test) from compiling it: it
// needs the peer binaries, which `make e2e` builds and passes in
// $TROUPE_VOLCANO_SCHEDULER and $TROUPE_COSCHEDULING_SCHEDULER.
package e2e

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// suite is one API server with the kubeflow.org CRDs and no more: each
// peer's container installs what its scheduler needs with internal/peers,
// as on a bare cluster.
var suite = testutil.NewSuite()

func TestE2E(t *testing.T) {
	testutil.RunSuite(t, "e2e: the operator against real peer gang schedulers")
}
