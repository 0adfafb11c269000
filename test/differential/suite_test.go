// Package differential is the differential suite: it gives the same pod,
// on the same cluster, to upstream kube-scheduler v1.37.2 (built from Go
// modules by hack/controlplane.sh) and to troupe-scheduler, and requires
//
//   - the same feasibility decision: kube-scheduler places the pod if and
//     only if troupe-scheduler does;
//   - every placement either makes to satisfy every required placement
//     rule, as judged by an independent checker (./checker), which shares
//     no code with either scheduler;
//   - the checker to agree with kube-scheduler: kube-scheduler's placements
//     pass it, and it finds a feasible node exactly when kube-scheduler
//     places the pod. That is what makes the checker a trustworthy judge
//     of troupe-scheduler.
//
// The cases are hand-written (one per rule and edge of the rule), seeded
// random mixtures of the rules, and gangs that only troupe-scheduler can
// place whole, judged by the checker alone.
package differential

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// One API server for the suite. Nodes are cluster-wide, so the cases run
// one at a time, each with its own nodes, namespaces and pods, and remove
// them when done.
var suite = testutil.NewSuite()

func TestDifferential(t *testing.T) {
	testutil.RunSuite(t, "differential: troupe-scheduler against kube-scheduler")
}
