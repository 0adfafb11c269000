package troupe_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The install suite: a real API server with no CRDs, into which the chart
// is installed with `helm install` as a cluster admin would.
var (
	env *testutil.Env
	// clientset has no client-side rate limit: the suite sends thousands
	// of SubjectAccessReviews.
	clientset *kubernetes.Clientset
	// kubeconfig is an admin's, for helm.
	kubeconfig string
	// notes is what helm printed after installing the release.
	notes string
)

func TestInstall(t *testing.T) { testutil.RunSuite(t, "Helm chart install suite") }

var _ = BeforeSuite(func() {
	if os.Getenv("HELM") == "" {
		Fail("HELM is not set: run the chart's tests with `make test`, or export HELM=$(hack/helm.sh)")
	}
	var err error
	// The chart installs the CRDs; the API server starts without them.
	env, err = testutil.StartEnv(func(e *envtest.Environment) { e.CRDDirectoryPaths = nil })
	Expect(err).NotTo(HaveOccurred())
	admin, err := env.AddUser(envtest.User{Name: "chart-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "troupe-chart-install-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())

	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	notes, err = helmInstall(release, namespace)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// helmInstall installs the chart as a release into a new namespace and
// returns what helm prints.
func helmInstall(name, ns string, args ...string) (string, error) {
	out, err := runHelm(append([]string{"install", name, chartDir(), "--namespace", ns, "--create-namespace", "--kubeconfig", kubeconfig}, args...)...)
	GinkgoWriter.Println(out)
	return out, err
}

// createNamespace creates a namespace of that name.
func createNamespace(ctx context.Context, name string) {
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}
