package kubectltroupe_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/troupe-ml/troupe/internal/kubectltroupe"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestKubectlTroupe(t *testing.T) { testutil.RunSuite(t, "kubectl-troupe suite") }

// userKubeconfig writes a kubeconfig of a cluster admin of the suite's API
// server, as a kubectl user has one, and returns its path.
func userKubeconfig(name string) string {
	user, err := suite.Env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	raw, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}

// plugin runs `kubectl troupe` as kubectl runs it, with the kubeconfig
// and args, and returns what it printed, or its error.
func plugin(kubeconfig string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := kubectltroupe.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(append([]string{}, args...), "--kubeconfig", kubeconfig))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	return out.String(), err
}
