package queues_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/queues"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var defaultKey = client.ObjectKey{Name: schedulingv1alpha1.DefaultQueueName}

// getDefault reads the default Queue.
func getDefault(ctx context.Context) *schedulingv1alpha1.Queue {
	q := &schedulingv1alpha1.Queue{}
	ExpectWithOffset(1, suite.Client.Get(ctx, defaultKey, q)).To(Succeed())
	return q
}

// deleteDefault removes the default Queue and waits until it is gone.
func deleteDefault(ctx context.Context) {
	q := &schedulingv1alpha1.Queue{}
	q.Name = schedulingv1alpha1.DefaultQueueName
	err := suite.Client.Delete(ctx, q)
	ExpectWithOffset(1, client.IgnoreNotFound(err)).To(Succeed())
	EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(suite.Client.Get(ctx, defaultKey, &schedulingv1alpha1.Queue{}))
	}).Should(BeTrue())
}

// Ordered: the specs share the cluster's one default Queue.
var _ = Describe("EnsureDefaultQueue", Ordered, func() {

	It("starts from a cluster without a default Queue", func(ctx context.Context) {
		// Otherwise the next spec could pass without creating anything.
		err := suite.Client.Get(ctx, defaultKey, &schedulingv1alpha1.Queue{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "want NotFound, got %v", err)
	})

	It("creates the default Queue, open and of weight 1", func(ctx context.Context) {
		Expect(queues.EnsureDefaultQueue(ctx, suite.Client)).To(Succeed())
		q := getDefault(ctx)
		Expect(q.Spec.Weight).To(Equal(int32(1)))
		Expect(q.Spec.State).To(Equal(schedulingv1alpha1.QueueStateOpen))
		Expect(q.Spec.Capability).To(BeEmpty(), "the default Queue must not limit anything")
	})

	It("is idempotent, and leaves an administrator's changes to the queue alone", func(ctx context.Context) {
		q := getDefault(ctx)
		q.Spec.Weight = 5
		q.Spec.State = schedulingv1alpha1.QueueStateClosed
		Expect(suite.Client.Update(ctx, q)).To(Succeed())
		changed := getDefault(ctx)

		Expect(queues.EnsureDefaultQueue(ctx, suite.Client)).To(Succeed())
		Expect(queues.EnsureDefaultQueue(ctx, suite.Client)).To(Succeed())

		after := getDefault(ctx)
		Expect(after.UID).To(Equal(changed.UID), "the queue was recreated")
		Expect(after.ResourceVersion).To(Equal(changed.ResourceVersion), "the queue was written to")
		Expect(after.Spec.Weight).To(Equal(int32(5)))
		Expect(after.Spec.State).To(Equal(schedulingv1alpha1.QueueStateClosed))
	})

	It("succeeds for every one of several schedulers starting at once", func(ctx context.Context) {
		// Replicas of the scheduler race to create the queue; the losers
		// see AlreadyExists and must not fail their start.
		deleteDefault(ctx)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer GinkgoRecover()
				errs[i] = queues.EnsureDefaultQueue(ctx, suite.Client)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			Expect(err).NotTo(HaveOccurred(), "caller %d", i)
		}
		q := getDefault(ctx)
		Expect(q.Spec.Weight).To(Equal(int32(1)))
		Expect(q.Spec.State).To(Equal(schedulingv1alpha1.QueueStateOpen))
	})

	It("returns the API server's refusal instead of swallowing it", func(ctx context.Context) {
		// A scheduler without RBAC for queues must fail at start, not run
		// with PodGroups that can never be admitted.
		deleteDefault(ctx)
		cfg := rest.CopyConfig(suite.Env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:troupe:no-permissions"}
		unprivileged, err := client.New(cfg, client.Options{Scheme: suite.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		err = queues.EnsureDefaultQueue(ctx, unprivileged)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want the Forbidden error, wrapped; got %v", err)
		Expect(err.Error()).To(ContainSubstring(`"default" Queue`))
		Expect(apierrors.IsNotFound(suite.Client.Get(ctx, defaultKey, &schedulingv1alpha1.Queue{}))).To(BeTrue())
	})

	It("returns an error when the client's scheme does not know Queue", func(ctx context.Context) {
		bare, err := client.New(suite.Env.Config, client.Options{Scheme: runtime.NewScheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(queues.EnsureDefaultQueue(ctx, bare)).NotTo(Succeed())
	})
})

var _ = Describe("config/samples/default-queue.yaml", func() {
	It("is accepted by the API server and describes the queue EnsureDefaultQueue creates", func(ctx context.Context) {
		raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "samples", "default-queue.yaml"))
		Expect(err).NotTo(HaveOccurred())
		sample := &schedulingv1alpha1.Queue{}
		Expect(yaml.UnmarshalStrict(raw, sample)).To(Succeed())
		Expect(sample.APIVersion).To(Equal(schedulingv1alpha1.GroupVersion.String()))
		Expect(sample.Kind).To(Equal("Queue"))
		Expect(sample.Name).To(Equal(schedulingv1alpha1.DefaultQueueName))

		// Server-side dry run: full validation and defaulting, nothing
		// stored. A rename keeps it clear of the real default Queue.
		sample.Name = "sample-dry-run"
		Expect(suite.Client.Create(ctx, sample, client.DryRunAll)).To(Succeed())
		Expect(sample.Spec.Weight).To(Equal(int32(1)))
		Expect(sample.Spec.State).To(Equal(schedulingv1alpha1.QueueStateOpen))
		Expect(sample.Spec.Capability).To(BeEmpty())
	})
})
