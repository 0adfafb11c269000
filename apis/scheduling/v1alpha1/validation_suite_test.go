package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// This suite checks the PodGroup and Queue CRDs' OpenAPI and CEL validation
// and defaults against a real kube-apiserver.

var suite = testutil.NewSuite()

// ns is the namespace of every PodGroup; objects get generated names.
var ns string

func TestValidation(t *testing.T) {
	testutil.RunSuite(t, "scheduling.troupe.dev/v1alpha1 CRD validation suite")
}

var _ = BeforeEach(func(ctx context.Context) {
	if ns == "" {
		ns = suite.NewNamespace(ctx, "validation")
	}
})
