// The generator against a real API server that serves Troupe's Topology
// and Volcano's HyperNode CRDs: through the operator as cmd/operator runs
// it (--volcano-hypernode-topology), and its Reconcile called directly
// where a spec needs to know when it has run.
package hypernodes_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuiteWithEnv([]testutil.EnvOption{testutil.WithCRDDirs(testutil.PeerCRDDir())})

func TestHyperNodes(t *testing.T) { testutil.RunSuite(t, "Volcano HyperNode generator") }
