package pytorch_test

import (
	"context"
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite("pytorchjob")

func TestPyTorchJob(t *testing.T) { testutil.RunSuite(t, "PyTorchJob controller suite") }

func newNamespace(ctx context.Context) string { return suite.NewNamespace(ctx, "pytorchjob") }
