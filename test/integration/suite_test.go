// Package integration runs the operator and the in-repo scheduler together
// against one real API server: job manifest in, gang bound on the right
// nodes out.
package integration

import (
	"os"
	"testing"

	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

// TestMain lets the test binary double as troupe-scheduler: the specs
// that kill the scheduler for real start it as a process of its own
// (peers.StartTestScheduler).
func TestMain(m *testing.M) {
	peers.RunTestScheduler()
	os.Exit(m.Run())
}

func TestIntegration(t *testing.T) {
	testutil.RunSuite(t, "operator + troupe-scheduler integration suite")
}
