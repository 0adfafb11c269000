// Package conformance_test runs the same scenarios against every gang
// backend, through the operator as cmd/operator runs it, on a real API
// server that serves Troupe's CRDs and the peers' (config/crd/peers). No
// scheduler runs: each backend's table entry plays its scheduler's part,
// writing what that scheduler would write (an admission, a verdict).
package conformance_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuiteWithEnv([]testutil.EnvOption{testutil.WithCRDDirs(testutil.PeerCRDDir())})

func TestConformance(t *testing.T) { testutil.RunSuite(t, "Gang backend conformance suite") }
