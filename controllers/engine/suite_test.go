package engine_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The engine's behaviour is framework-agnostic; this suite drives it through
// TFJob manifests against a real API server.

var (
	env *testutil.Env
	k8s client.Client
)

func TestEngine(t *testing.T) {
	RegisterFailHandler(Fail)
	// The API server and the operator share two cores with other suites.
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Job engine suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func newNamespace(ctx context.Context) string {
	ns, err := testutil.CreateNamespace(ctx, k8s, "engine")
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}
