package engine_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/tfjob"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// The job's status is written with the resourceVersion its pass read
// (optimistic lock). These specs are about the writes the API server
// refuses: for a conflict, or for a job deleted meanwhile.
var _ = Describe("Job status writes", func() {
	f := newOperatorFixture()
	// statusPatches wraps the operator's client: each status patch of a
	// TFJob goes through before, then to the API server, and each the API
	// server refuses, as a conflict or for a job not found, is counted in
	// refused.
	statusPatches := func(before func(*kubeflowv1.TFJob), refused *atomic.Int32) testutil.OperatorOption {
		return testutil.WithClientWrapper(func(c client.WithWatch) client.Client {
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					job, isJob := obj.(*kubeflowv1.TFJob)
					if isJob && before != nil {
						before(job)
					}
					err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
					if isJob && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
						refused.Add(1)
					}
					return err
				},
			})
		})
	}
	reconcileErrors := func() float64 {
		n, err := testutil.CounterValue("controller_runtime_reconcile_errors_total", map[string]string{"controller": tfjob.ControllerName})
		Expect(err).NotTo(HaveOccurred())
		return n
	}

	// The operator's caches of pods and of jobs are fed by separate
	// watches: a pod's event can bring a pass before the job's cache shows
	// the job's last change. laggingJobCache delays the job's cache by
	// 300 ms at every change, as a cache behind a busy API server would,
	// so every pass its pods' events bring within that time reads a stale
	// job.
	laggingJobCache := func(o *ctrl.Options) {
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&kubeflowv1.TFJob{}: {Transform: func(obj any) (any, error) {
				time.Sleep(300 * time.Millisecond)
				return obj, nil
			}},
		}
	}

	It("does not write the status over a job the cache shows from before its own last write", func() {
		var refused atomic.Int32
		f.start(statusPatches(nil, &refused), laggingJobCache)
		Expect(suite.Client.Create(f.ctx, testutil.MakeTFJob("lagging", f.ns).ReplicaSpec(worker,
			testutil.MakeReplica(3, kubeflowv1.TFJobDefaultContainerName).Obj()).Obj())).To(Succeed())
		f.jobs.runAll(f.jobs.livePods("lagging", 3))
		f.jobs.expectCondition("lagging", "Running", "TFJobRunning")
		Expect(refused.Load()).To(BeZero(), "status writes refused")
	})

	// Another writer (a user, Kueue, a garbage collector) changes or
	// deletes the job between the pass's read and its status write: the
	// API server refuses the write, and the watch brings the pass that
	// follows the change. With the job's cache lagging, the passes the
	// job's pods bring meanwhile read the version the write was refused
	// over: they wait for the change rather than write again.
	DescribeTable("takes a status write refused for a job changed meanwhile as no error",
		func(name string, change func(*kubeflowv1.TFJob), check func()) {
			var refused, changed atomic.Int32
			f.start(statusPatches(func(job *kubeflowv1.TFJob) {
				if job.Name == name && changed.Add(1) == 1 {
					stored := &kubeflowv1.TFJob{}
					Expect(suite.Client.Get(f.ctx, client.ObjectKeyFromObject(job), stored)).To(Succeed())
					change(stored)
				}
			}, &refused), laggingJobCache)
			errorsBefore := reconcileErrors()
			Expect(suite.Client.Create(f.ctx, testutil.MakeTFJob(name, f.ns).ReplicaSpec(worker,
				testutil.MakeReplica(2, kubeflowv1.TFJobDefaultContainerName).Obj()).Obj())).To(Succeed())
			check()
			// The write the change refused may still be on its way back when
			// check sees the change; a second refused write would follow
			// within the job cache's lag.
			Eventually(refused.Load).Should(Equal(int32(1)), "the change made a status write refused")
			Consistently(refused.Load, time.Second).Should(Equal(int32(1)), "the change made exactly one status write refused")
			Expect(reconcileErrors()).To(Equal(errorsBefore), "a refused status write is reported as a reconcile error")
		},
		Entry("changed: the pass over the newer job writes the status", "raced", func(stored *kubeflowv1.TFJob) {
			stored.Labels = map[string]string{"edited-by": "another-writer"}
			Expect(suite.Client.Update(f.ctx, stored)).To(Succeed())
		}, func() {
			f.jobs.runAll(f.jobs.livePods("raced", 2))
			job := f.jobs.expectCondition("raced", "Running", "TFJobRunning")
			Expect(job.Labels).To(HaveKeyWithValue("edited-by", "another-writer"))
			Expect(testutil.ConditionTrue(&job.Status, "Created")).To(BeTrue())
		}),
		Entry("deleted: nothing is left of it", "gone", func(stored *kubeflowv1.TFJob) {
			Expect(suite.Client.Delete(f.ctx, stored)).To(Succeed())
		}, func() {
			Eventually(func(g Gomega) {
				err := suite.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "gone"}, &kubeflowv1.TFJob{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "job still there: %v", err)
			}).Should(Succeed())
		}),
	)
})
