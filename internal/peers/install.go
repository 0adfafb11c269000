package peers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// The CRDs each peer scheduler watches, as hack/peer-crds.sh copies them
// from the pinned modules into config/crd/peers. A scheduler started
// without one waits for its informer forever and schedules nothing.
var (
	volcanoCRDs = []string{
		"scheduling.volcano.sh_podgroups.yaml",
		"scheduling.volcano.sh_queues.yaml",
		"topology.volcano.sh_hypernodes.yaml",
		"nodeinfo.volcano.sh_numatopologies.yaml",
	}
	coschedulingCRDs = []string{"scheduling.x-k8s.io_podgroups.yaml"}
)

// VolcanoDefaultQueue is the queue a Volcano PodGroup without one joins;
// Volcano's controller manager, which does not run here, would create it.
const VolcanoDefaultQueue = "default"

// crdDir is config/crd/peers, found from this file's location.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "peers")
}

// InstallVolcano makes an API server ready for Volcano's scheduler, as
// Volcano's installation would: its PodGroup, Queue, HyperNode and
// Numatopology CRDs, served before it returns, and the open default queue.
// It may run again on the same server.
func InstallVolcano(ctx context.Context, cfg *rest.Config) error {
	if err := installCRDs(cfg, volcanoCRDs); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	if err := volcanov1beta1.AddToScheme(c.Scheme()); err != nil {
		return err
	}
	q := &volcanov1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: VolcanoDefaultQueue},
		Spec:       volcanov1beta1.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)},
	}
	if err := c.Create(ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Volcano queue %q: %w", VolcanoDefaultQueue, err)
	}
	// Queue-aware plugins (proportion, capacity) place nothing from a queue
	// that is not Open; Volcano's queue controller would open it.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		if q.Status.State == volcanov1beta1.QueueStateOpen {
			return nil
		}
		q.Status.State = volcanov1beta1.QueueStateOpen
		return c.Status().Update(ctx, q)
	})
	if err != nil {
		return fmt.Errorf("open the Volcano queue %q: %w", VolcanoDefaultQueue, err)
	}
	return nil
}

// InstallCoscheduling makes an API server ready for kube-scheduler with
// Coscheduling: scheduler-plugins' PodGroup CRD, served before it returns.
// It may run again on the same server.
func InstallCoscheduling(cfg *rest.Config) error {
	return installCRDs(cfg, coschedulingCRDs)
}

func installCRDs(cfg *rest.Config, files []string) error {
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(crdDir(), f))
	}
	// Installing waits until the API server serves every CRD.
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("install the CRDs %v (run hack/peer-crds.sh if one is missing): %w", files, err)
	}
	return nil
}

// WriteKubeconfig writes the admin kubeconfig envtest made for a started
// env to path, for a scheduler process to use.
func WriteKubeconfig(env *envtest.Environment, path string) error {
	if len(env.KubeConfig) == 0 {
		return fmt.Errorf("envtest has no kubeconfig yet: start the environment first")
	}
	return os.WriteFile(path, env.KubeConfig, 0o600)
}
