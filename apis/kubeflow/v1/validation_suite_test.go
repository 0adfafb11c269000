package v1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// This suite checks the CRDs' OpenAPI and CEL validation against a real
// kube-apiserver: no operator runs, every object goes through the API
// server's admission exactly as kubectl would send it.

var (
	env *testutil.Env
	k8s client.Client
	// ns is the one namespace every spec creates its jobs in; jobs get
	// generated names, so specs never collide.
	ns string
)

func TestValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubeflow.org/v1 CRD validation suite")
}

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	n, err := testutil.CreateNamespace(ctx, k8s, "validation")
	Expect(err).NotTo(HaveOccurred())
	ns = n.Name
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
