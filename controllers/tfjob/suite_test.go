package tfjob_test

import (
	"context"
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite("tfjob")

func TestTFJob(t *testing.T) { testutil.RunSuite(t, "TFJob controller suite") }

func newNamespace(ctx context.Context) string { return suite.NewNamespace(ctx, "tfjob") }
