package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const worker = kubeflowv1.TFJobReplicaTypeWorker

var _ = Describe("Job engine", func() {
	var (
		ctx  context.Context
		ns   string
		op   *testutil.Operator
		jobs *tfJobs
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		jobs = &tfJobs{ctx: ctx, ns: ns}
		var err error
		op, err = testutil.StartOperator(suite.Env.Config, []string{"tfjob"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			if op != nil {
				Expect(op.Stop()).To(Succeed())
			}
		})
	})

	workers := func(name string, n int32, policy kubeflowv1.RestartPolicy) *testutil.TFJobBuilder {
		return testutil.MakeTFJob(name, ns).ReplicaSpec(worker,
			testutil.MakeReplica(n, kubeflowv1.TFJobDefaultContainerName).RestartPolicy(policy).Obj())
	}

	Describe("restartPolicy ExitCode", func() {
		It("replaces a pod that exited with a retryable code, then runs again", func() {
			Expect(suite.Client.Create(ctx, workers("retry", 2, "ExitCode").Obj())).To(Succeed())
			pods := jobs.livePods("retry", 2)
			Expect(pods[0].Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever), "the engine, not the kubelet, restarts under ExitCode")
			jobs.runAll(pods)
			jobs.expectCondition("retry", "Running", "TFJobRunning")

			oldUID := pods[1].UID
			Expect(testutil.FailPod(ctx, suite.Client, &pods[1], 137)).To(Succeed())
			job := jobs.expectCondition("retry", "Restarting", "TFJobRestarting")
			Expect(testutil.Condition(&job.Status, "Restarting").Message).To(ContainSubstring("retryable code 137"))
			Expect(job.Status.RecreatedPods).To(Equal(int32(1)))

			var replaced []corev1.Pod
			Eventually(func(g Gomega) {
				replaced = jobs.livePods("retry", 2)
				g.Expect(replaced[1].UID).NotTo(Equal(oldUID))
			}).Should(Succeed())
			Expect(replaced[1].Name).To(Equal("retry-worker-1"))
			jobs.runAll(replaced)
			job = jobs.expectCondition("retry", "Running", "TFJobRunning")
			Expect(testutil.ConditionTrue(&job.Status, "Restarting")).To(BeFalse())
		})

		It("fails the job when a pod exits with a permanent code, and replaces nothing", func() {
			Expect(suite.Client.Create(ctx, workers("permanent", 2, "ExitCode").Obj())).To(Succeed())
			pods := jobs.livePods("permanent", 2)
			jobs.runAll(pods)
			Expect(testutil.FailPod(ctx, suite.Client, &pods[1], 1)).To(Succeed())
			job := jobs.expectCondition("permanent", "Failed", "TFJobFailed")
			Expect(testutil.Condition(&job.Status, "Failed").Message).To(ContainSubstring("permanent code 1"))
			Expect(job.Status.RecreatedPods).To(BeZero())
			Expect(job.Status.CompletionTime).NotTo(BeNil())
			failedUID := pods[1].UID
			Consistently(func(g Gomega) {
				pods, err := testutil.JobPods(ctx, suite.Client, ns, "permanent")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pods).To(HaveLen(2))
				g.Expect(pods[1].UID).To(Equal(failedUID), "the failed pod is kept, not replaced")
				g.Expect(pods[1].Status.Phase).To(Equal(corev1.PodFailed))
			}, 2*time.Second).Should(Succeed())
		})
	})

	It("fails the job on any failure under restartPolicy Never", func() {
		Expect(suite.Client.Create(ctx, workers("never", 2, "Never").Obj())).To(Succeed())
		pods := jobs.livePods("never", 2)
		Expect(testutil.FailPod(ctx, suite.Client, &pods[0], 137)).To(Succeed())
		job := jobs.expectCondition("never", "Failed", "TFJobFailed")
		Expect(job.Status.ReplicaStatuses[worker].Failed).To(Equal(int32(1)))
	})

	It("lets the kubelet restart containers under OnFailure and replaces an evicted pod", func() {
		Expect(suite.Client.Create(ctx, workers("onfailure", 2, "OnFailure").Obj())).To(Succeed())
		pods := jobs.livePods("onfailure", 2)
		Expect(pods[0].Spec.RestartPolicy).To(Equal(corev1.RestartPolicyOnFailure))
		Expect(pods[1].Spec.RestartPolicy).To(Equal(corev1.RestartPolicyOnFailure))
		jobs.runAll(pods)
		jobs.expectCondition("onfailure", "Running", "TFJobRunning")

		Expect(testutil.EvictPod(ctx, suite.Client, &pods[0])).To(Succeed())
		job := jobs.expectCondition("onfailure", "Restarting", "TFJobRestarting")
		Expect(testutil.Condition(&job.Status, "Restarting").Message).To(ContainSubstring("Evicted"))
		Eventually(func(g Gomega) {
			g.Expect(jobs.livePods("onfailure", 2)[0].UID).NotTo(Equal(pods[0].UID))
		}).Should(Succeed())
	})

	Describe("backoffLimit", func() {
		It("counts in-place container restarts and stops the job past the limit", func() {
			Expect(suite.Client.Create(ctx, workers("backoff-inplace", 2, "OnFailure").BackoffLimit(2).Obj())).To(Succeed())
			pods := jobs.livePods("backoff-inplace", 2)
			jobs.runAll(pods)
			Expect(testutil.RestartContainers(ctx, suite.Client, &pods[0], 2)).To(Succeed())
			Consistently(func(g Gomega) {
				g.Expect(testutil.ConditionTrue(&jobs.get(g, "backoff-inplace").Status, "Failed")).To(BeFalse())
			}, 2*time.Second).Should(Succeed(), "2 restarts are within backoffLimit 2")

			Expect(testutil.RestartContainers(ctx, suite.Client, &pods[1], 1)).To(Succeed())
			job := jobs.expectCondition("backoff-inplace", "Failed", "BackoffLimitExceeded")
			Expect(testutil.Condition(&job.Status, "Failed").Message).To(ContainSubstring("backoffLimit 2"))
			// Running pods of a job past its budget are stopped.
			Eventually(func(g Gomega) {
				pods, err := testutil.JobPods(ctx, suite.Client, ns, "backoff-inplace")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pods).To(BeEmpty())
			}).Should(Succeed())
		})

		It("counts pods replaced under ExitCode", func() {
			Expect(suite.Client.Create(ctx, workers("backoff-exitcode", 1, "ExitCode").BackoffLimit(1).Obj())).To(Succeed())
			pods := jobs.livePods("backoff-exitcode", 1)
			Expect(testutil.FailPod(ctx, suite.Client, &pods[0], 143)).To(Succeed())
			var second []corev1.Pod
			Eventually(func(g Gomega) {
				second = jobs.livePods("backoff-exitcode", 1)
				g.Expect(second[0].UID).NotTo(Equal(pods[0].UID))
			}).Should(Succeed())
			Expect(testutil.FailPod(ctx, suite.Client, &second[0], 143)).To(Succeed())
			job := jobs.expectCondition("backoff-exitcode", "Failed", "BackoffLimitExceeded")
			Expect(job.Status.RecreatedPods).To(Equal(int32(1)))
		})
	})

	It("fails a job that runs past activeDeadlineSeconds and stops its pods", func() {
		Expect(suite.Client.Create(ctx, workers("deadline", 2, "Never").ActiveDeadlineSeconds(2).Obj())).To(Succeed())
		jobs.runAll(jobs.livePods("deadline", 2))
		job := jobs.expectCondition("deadline", "Failed", "DeadlineExceeded")
		failedAt := testutil.Condition(&job.Status, "Failed").LastTransitionTime
		Expect(failedAt.Sub(job.Status.StartTime.Time)).To(BeNumerically(">=", 2*time.Second),
			"the deadline is counted from the start time")
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "deadline")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(BeEmpty())
		}).Should(Succeed())
	})

	It("deletes a finished job after ttlSecondsAfterFinished", func() {
		Expect(suite.Client.Create(ctx, workers("ttl", 1, "Never").TTLSecondsAfterFinished(1).Obj())).To(Succeed())
		pods := jobs.livePods("ttl", 1)
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())
		job := jobs.expectCondition("ttl", "Succeeded", "TFJobSucceeded")
		finished := job.Status.CompletionTime.Time
		Eventually(func(g Gomega) {
			err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ttl"}, &kubeflowv1.TFJob{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).Should(Succeed())
		Expect(time.Since(finished)).To(BeNumerically(">=", time.Second), "the job lived at least the TTL after finishing")
	})

	It("deletes every pod and service of a finished job under cleanPodPolicy All", func() {
		Expect(suite.Client.Create(ctx, workers("clean-all", 2, "Never").CleanPodPolicy("All").Obj())).To(Succeed())
		pods := jobs.livePods("clean-all", 2)
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[1], corev1.PodRunning)).To(Succeed())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())
		jobs.expectCondition("clean-all", "Succeeded", "TFJobSucceeded")
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "clean-all")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(BeEmpty())
			svcs, err := testutil.JobServices(ctx, suite.Client, ns, "clean-all")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(svcs).To(BeEmpty())
		}).Should(Succeed())
	})

	It("suspends and resumes a job", func() {
		Expect(suite.Client.Create(ctx, workers("suspend", 2, "Never").Suspend(true).Obj())).To(Succeed())
		job := jobs.expectCondition("suspend", "Suspended", "TFJobSuspended")
		Expect(job.Status.StartTime).To(BeNil())
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "suspend")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(BeEmpty())
		}, time.Second).Should(Succeed())

		setSuspend := func(v bool) {
			Eventually(func(g Gomega) {
				job := jobs.get(g, "suspend")
				job.Spec.RunPolicy.Suspend = &v
				g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
			}).Should(Succeed())
		}
		setSuspend(false)
		jobs.runAll(jobs.livePods("suspend", 2))
		job = jobs.expectCondition("suspend", "Running", "TFJobRunning")
		Expect(testutil.Condition(&job.Status, "Suspended").Status).To(Equal(corev1.ConditionFalse))
		Expect(testutil.Condition(&job.Status, "Suspended").Reason).To(Equal("Resumed"))
		Expect(job.Status.StartTime).NotTo(BeNil())

		setSuspend(true)
		job = jobs.expectCondition("suspend", "Suspended", "TFJobSuspended")
		Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeFalse())
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "suspend")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(BeEmpty())
			g.Expect(jobs.get(g, "suspend").Status.StartTime).To(BeNil())
		}).Should(Succeed())
	})

	It("follows a change of replicas: scales down and up", func() {
		Expect(suite.Client.Create(ctx, workers("scale", 3, "Never").Obj())).To(Succeed())
		jobs.livePods("scale", 3)
		setReplicas := func(n int32) {
			Eventually(func(g Gomega) {
				job := jobs.get(g, "scale")
				job.Spec.TFReplicaSpecs[worker].Replicas = &n
				g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
			}).Should(Succeed())
		}
		setReplicas(1)
		Expect(testutil.PodNames(jobs.livePods("scale", 1))).To(Equal([]string{"scale-worker-0"}))
		Eventually(func(g Gomega) {
			svcs, err := testutil.JobServices(ctx, suite.Client, ns, "scale")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(svcs).To(HaveLen(1))
		}).Should(Succeed())
		setReplicas(4)
		Expect(testutil.PodNames(jobs.livePods("scale", 4))).To(Equal([]string{"scale-worker-0", "scale-worker-1", "scale-worker-2", "scale-worker-3"}))
	})

	It("ignores a job that another controller manages (runPolicy.managedBy)", func() {
		job := workers("elsewhere", 2, "Never").Obj()
		managedBy := "kueue.x-k8s.io/multikueue"
		job.Spec.RunPolicy.ManagedBy = &managedBy
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "elsewhere")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(BeEmpty())
			g.Expect(jobs.get(g, "elsewhere").Status.Conditions).To(BeEmpty())
		}, 2*time.Second).Should(Succeed())
	})

	It("stops creating at a pod the API server refuses, says why, and creates the rest once it may", func() {
		// The API server's ResourceQuota admission refuses a pod past
		// spec.hard once the quota has a status (the quota controller,
		// not running here, would write it).
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
		}
		Expect(suite.Client.Create(ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		Expect(suite.Client.Status().Update(ctx, quota)).To(Succeed())

		Expect(suite.Client.Create(ctx, workers("quota", 5, "Never").Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var refused []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "quota" && e.Reason == "FailedCreatePod" {
					refused = append(refused, e.Message)
				}
			}
			g.Expect(refused).To(ContainElement(And(ContainSubstring("Error creating pod quota-worker-"), ContainSubstring("exceeded quota"))))
		}).Should(Succeed())
		before := jobs.livePods("quota", 2)
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "quota")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
		}, 2*time.Second).Should(Succeed())

		By("the quota raised, the other pods are created and the first two kept")
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("10")
		Expect(suite.Client.Update(ctx, quota)).To(Succeed())
		quota.Status.Hard = quota.Spec.Hard
		Expect(suite.Client.Status().Update(ctx, quota)).To(Succeed())
		after := jobs.livePods("quota", 5)
		for _, b := range before {
			Expect(after).To(ContainElement(And(HaveField("Name", b.Name), HaveField("UID", b.UID))), "pod %s was created before the refusal and must be kept", b.Name)
		}
	})

	// Not a real kill (the chaos soak, test/soak, SIGKILLs operators):
	// the writes fail from a point on, as if the process were gone.
	It("survives an operator whose writes fail mid-reconcile, then stops: no duplicate, nothing lost", func() {
		// Stop the suite's operator and run one whose writes all fail
		// once its second pod is created, as if the process were gone,
		// and whose manager is then stopped. Creates already under way
		// beside it (a pass creates in slow-start batches) may still
		// land: created counts every pod whose create returned success,
		// attempted every pod create sent; one the stop cancelled may
		// land without its caller hearing so, so the crash leaves
		// between the two.
		Expect(op.Stop()).To(Succeed())
		var created, attempted atomic.Int32
		var dead atomic.Bool
		errDead := errors.New("operator process is gone")
		var crashing *testutil.Operator
		crashed := make(chan struct{})
		wrap := func(c client.WithWatch) client.Client {
			return interceptor.NewClient(c, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if dead.Load() {
						return errDead
					}
					if _, isPod := obj.(*corev1.Pod); isPod {
						attempted.Add(1)
					}
					if err := c.Create(ctx, obj, opts...); err != nil {
						return err
					}
					if _, isPod := obj.(*corev1.Pod); isPod && created.Add(1) == 2 {
						dead.Store(true)
						close(crashed)
					}
					return nil
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if dead.Load() {
						return errDead
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
		}
		var err error
		crashing, err = testutil.StartOperator(suite.Env.Config, []string{"tfjob"}, testutil.WithClientWrapper(wrap))
		Expect(err).NotTo(HaveOccurred())
		Expect(suite.Client.Create(ctx, workers("crash", 5, "Never").Obj())).To(Succeed())
		Eventually(crashed).Should(BeClosed())
		Expect(crashing.Stop()).To(Succeed())

		Expect(created.Load()).To(BeNumerically("<", 5), "the operator died before it created every pod")
		before := jobs.livePodsBetween("crash", int(created.Load()), int(attempted.Load()))
		beforeUIDs := map[string]types.UID{}
		for _, p := range before {
			beforeUIDs[p.Name] = p.UID
		}
		// The status write of the dying pass never happened.
		Expect(jobs.get(Default, "crash").Status.Conditions).To(BeEmpty())

		op, err = testutil.StartOperator(suite.Env.Config, []string{"tfjob"})
		Expect(err).NotTo(HaveOccurred())
		after := jobs.livePods("crash", 5)
		for _, p := range after {
			if uid, ok := beforeUIDs[p.Name]; ok {
				Expect(p.UID).To(Equal(uid), "pod %s was created before the crash and must be kept, not replaced", p.Name)
			}
			Expect(p.OwnerReferences).To(HaveLen(1))
		}
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "crash")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(5))
		}, 2*time.Second).Should(Succeed())
		jobs.runAll(after)
		jobs.expectCondition("crash", "Running", "TFJobRunning")
		jobs.expectCondition("crash", "Created", "TFJobCreated")
	})
})
