// Package integration runs the operator and the in-repo scheduler together
// against one real API server: job manifest in, gang bound on the right
// nodes out.
package integration

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestIntegration(t *testing.T) {
	testutil.RunSuite(t, "operator + troupe-scheduler integration suite")
}
