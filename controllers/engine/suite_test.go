package engine_test

import (
	"context"
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The engine's behaviour is framework-agnostic; this suite drives it through
// TFJob manifests against a real API server, starting an operator per spec.

var suite = testutil.NewSuite()

func TestEngine(t *testing.T) { testutil.RunSuite(t, "Job engine suite") }

func newNamespace(ctx context.Context) string { return suite.NewNamespace(ctx, "engine") }
