package mpi_test

import (
	"context"
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// envtest's API server authorizes with RBAC (controller-runtime's default
// --authorization-mode), so SubjectAccessReviews here evaluate the launcher's
// Role and RoleBinding for real.

var suite = testutil.NewSuite("mpijob")

func TestMPIJob(t *testing.T) { testutil.RunSuite(t, "MPIJob controller suite") }

func newNamespace(ctx context.Context) string { return suite.NewNamespace(ctx, "mpijob") }
