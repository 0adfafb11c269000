package v1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// This suite checks the CRDs' OpenAPI and CEL validation against a real
// kube-apiserver: no operator runs, every object goes through the API
// server's admission exactly as kubectl would send it.

var suite = testutil.NewSuite()

// ns is the one namespace every spec creates its jobs in; jobs get
// generated names, so specs never collide.
var ns string

func TestValidation(t *testing.T) { testutil.RunSuite(t, "kubeflow.org/v1 CRD validation suite") }

var _ = BeforeEach(func(ctx context.Context) {
	if ns == "" {
		ns = suite.NewNamespace(ctx, "validation")
	}
})
