package peers

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

var _ = Describe("Installing a peer's prerequisites", func() {
	// served fails unless the API server serves kind in groupVersion.
	served := func(groupVersion, kind string) {
		dc, err := discovery.NewDiscoveryClientForConfig(suite.Env.Config)
		Expect(err).NotTo(HaveOccurred())
		list, err := dc.ServerResourcesForGroupVersion(groupVersion)
		Expect(err).NotTo(HaveOccurred(), "%s is not served", groupVersion)
		Expect(list.APIResources).To(ContainElement(HaveField("Kind", kind)), "%s %s", groupVersion, kind)
	}

	It("serves Volcano's CRDs and opens its default queue, and may run again", func(ctx SpecContext) {
		for range 2 {
			Expect(InstallVolcano(ctx, suite.Env.Config)).To(Succeed())
		}
		served("scheduling.volcano.sh/v1beta1", "PodGroup")
		served("scheduling.volcano.sh/v1beta1", "Queue")
		served("topology.volcano.sh/v1alpha1", "HyperNode")
		served("nodeinfo.volcano.sh/v1alpha1", "Numatopology")
		q := &volcanov1beta1.Queue{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: VolcanoDefaultQueue}, q)).To(Succeed())
		Expect(q.Status.State).To(Equal(volcanov1beta1.QueueStateOpen))
		Expect(q.Spec.Weight).To(Equal(int32(1)))
	})

	It("serves scheduler-plugins' PodGroup, and may run again", func() {
		for range 2 {
			Expect(InstallCoscheduling(suite.Env.Config)).To(Succeed())
		}
		served("scheduling.x-k8s.io/v1alpha1", "PodGroup")
	})

	It("writes a kubeconfig that reaches the API server as an admin", func(ctx context.Context) {
		path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(WriteKubeconfig(suite.Env.Environment, path)).To(Succeed())
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		// Nodes are cluster-wide: only a privileged user lists them.
		Expect(c.List(ctx, &corev1.NodeList{})).To(Succeed())
	})

	It("refuses to write a kubeconfig for an environment that has not started", func() {
		err := WriteKubeconfig(&envtest.Environment{}, filepath.Join(GinkgoT().TempDir(), "kubeconfig"))
		Expect(err).To(MatchError(ContainSubstring("start the environment first")))
	})
})
