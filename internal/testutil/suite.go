package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Suite is the shared state of one envtest suite: a real API server with
// the CRDs and, when the suite names job kinds, an operator running them.
// Its fields are set once the suite's BeforeSuite has run.
type Suite struct {
	Env      *Env
	Client   client.Client
	Operator *Operator
	schemes  []string
}

// NewSuite registers the suite's BeforeSuite and AfterSuite nodes; call it
// from a package-level variable of the test package.
func NewSuite(schemes ...string) *Suite { return newSuite(nil, schemes) }

func newSuite(envOpts []EnvOption, schemes []string) *Suite {
	s := &Suite{schemes: schemes}
	ginkgo.BeforeSuite(func() {
		var err error
		s.Env, err = StartEnv(envOpts...)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		s.Client = s.Env.Client
		if len(schemes) > 0 {
			s.Operator, err = StartOperator(s.Env.Config, schemes)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
		}
	})
	ginkgo.AfterSuite(func() {
		if s.Operator != nil {
			gomega.Expect(s.Operator.Stop()).To(gomega.Succeed())
		}
		if s.Env != nil {
			gomega.Expect(s.Env.Stop()).To(gomega.Succeed())
		}
	})
	return s
}

// RunSuite runs a test binary's ginkgo specs with the Eventually defaults
// every suite shares: the API server and the operator share two cores with
// other suites, so waits are generous and polls frequent.
func RunSuite(t *testing.T, name string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(20 * time.Second)
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ginkgo.RunSpecs(t, name)
}

// NewNamespace creates a namespace for one spec.
func (s *Suite) NewNamespace(ctx context.Context, prefix string) string {
	ns, err := CreateNamespace(ctx, s.Client, prefix)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return ns.Name
}
