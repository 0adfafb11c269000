package pytorch_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var (
	env *testutil.Env
	k8s client.Client
	op  *testutil.Operator
)

func TestPyTorchJob(t *testing.T) {
	RegisterFailHandler(Fail)
	// The API server and the operator share two cores with other suites.
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "PyTorchJob controller suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	op, err = testutil.StartOperator(env.Config, []string{"pytorchjob"})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if op != nil {
		Expect(op.Stop()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func newNamespace(ctx context.Context) string {
	ns, err := testutil.CreateNamespace(ctx, k8s, "pytorchjob")
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}
