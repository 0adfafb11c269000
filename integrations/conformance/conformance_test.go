package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	chief  = kubeflowv1.TFJobReplicaTypeChief
	worker = kubeflowv1.TFJobReplicaTypeWorker
	gpu    = corev1.ResourceName("nvidia.com/gpu")
	// quiet is how long a scenario watches for something that must not
	// happen, after a positive sign that the operator has acted.
	quiet = 2 * time.Second
)

var _ = Describe("Gang backend", func() {
	for i, b := range backends {
		// other is the backend a job may choose instead of b.
		other := backends[(i+1)%len(backends)]

		Describe(b.name, func() {
			var (
				ctx context.Context
				ns  string
			)
			BeforeEach(func() {
				ctx = context.Background()
				ns = suite.NewNamespace(ctx, b.name)
			})

			// run starts the operator with b as its backend; start also
			// stops it when the spec ends.
			run := func(flags ...string) *testutil.Operator {
				op, err := testutil.StartOperatorWithFlags(suite.Env.Config, append([]string{"--gang-scheduler-name=" + b.name}, flags...))
				ExpectWithOffset(1, err).NotTo(HaveOccurred())
				return op
			}
			start := func(flags ...string) {
				DeferCleanup(run(flags...).Stop)
			}

			key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
			podGroupOf := func(g Gomega, bk backend, name string) client.Object {
				pg := bk.newPodGroup()
				g.ExpectWithOffset(1, suite.Client.Get(ctx, key(name), pg)).To(Succeed())
				return pg
			}
			noPodGroup := func(bk backend, name string) func() bool {
				return func() bool {
					return apierrors.IsNotFound(suite.Client.Get(ctx, key(name), bk.newPodGroup()))
				}
			}
			// setPhase plays the scheduler, for backends that admit gangs.
			setPhase := func(bk backend, name string, set func(client.Object)) {
				if set == nil {
					return
				}
				EventuallyWithOffset(2, func(g Gomega) {
					pg := podGroupOf(g, bk, name)
					set(pg)
					g.Expect(suite.Client.Update(ctx, pg)).To(Succeed())
				}).Should(Succeed())
			}
			admit := func(bk backend, name string) { setPhase(bk, name, bk.admit) }
			livePods := func(name string, n int) []corev1.Pod {
				var live []corev1.Pod
				EventuallyWithOffset(1, func(g Gomega) {
					pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
					g.Expect(err).NotTo(HaveOccurred())
					live = testutil.Live(pods)
					g.Expect(live).To(HaveLen(n))
				}).Should(Succeed())
				return live
			}
			podCount := func(name string) func() (int, error) {
				return func() (int, error) {
					pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
					return len(pods), err
				}
			}
			tfJob := func(g Gomega, name string) *kubeflowv1.TFJob {
				job := &kubeflowv1.TFJob{}
				g.ExpectWithOffset(1, suite.Client.Get(ctx, key(name), job)).To(Succeed())
				return job
			}
			updateJob := func(name string, mutate func(*kubeflowv1.TFJob)) {
				EventuallyWithOffset(1, func(g Gomega) {
					job := tfJob(g, name)
					mutate(job)
					g.Expect(suite.Client.Update(ctx, job)).To(Succeed())
				}).Should(Succeed())
			}
			// expectCondition waits for a condition of a TFJob and returns it.
			expectCondition := func(name string, ctype kubeflowv1.JobConditionType, status corev1.ConditionStatus, reason string) *kubeflowv1.JobCondition {
				var c *kubeflowv1.JobCondition
				EventuallyWithOffset(1, func(g Gomega) {
					c = testutil.Condition(&tfJob(g, name).Status, ctype)
					g.Expect(c).NotTo(BeNil())
					g.Expect(c.Status).To(Equal(status))
					g.Expect(c.Reason).To(Equal(reason))
				}).Should(Succeed())
				return c
			}
			jobEvents := func(name, reason string) func() ([]eventsv1.Event, error) {
				return func() ([]eventsv1.Event, error) {
					var list eventsv1.EventList
					if err := suite.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
						return nil, err
					}
					var out []eventsv1.Event
					for _, e := range list.Items {
						if e.Regarding.Name == name && e.Reason == reason {
							out = append(out, e)
						}
					}
					return out, nil
				}
			}
			// mixedJob has a CPU-only chief and GPU workers that ask for
			// GPUs by limits only, as most GPU manifests do.
			mixedJob := func(name string, workers int32) *kubeflowv1.TFJob {
				return testutil.MakeTFJob(name, ns).
					ReplicaSpec(chief, testutil.MakeReplica(1, "tensorflow").
						Request(corev1.ResourceCPU, "2").NodeSelector("node-pool", "cpu").Obj()).
					ReplicaSpec(worker, testutil.MakeReplica(workers, "tensorflow").
						Request(corev1.ResourceCPU, "4").Limit(gpu, "2").Obj()).
					Obj()
			}

			It("writes the job's gang into its PodGroup", func() {
				start()
				// kube-apiserver admits a PodGroup's priority class only if
				// it exists.
				Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, &schedulingv1.PriorityClass{
					ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000,
				}))).To(Succeed())
				job := mixedJob("fields", 3)
				job.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{
					MinAvailable: ptr.To[int32](3), Queue: "research", PriorityClass: "high", ScheduleTimeoutSeconds: ptr.To[int32](120),
				}
				Expect(suite.Client.Create(ctx, job)).To(Succeed())
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("defaults", ns).Replica(worker, 2).Obj())).To(Succeed())

				var obj client.Object
				Eventually(func(g Gomega) { obj = podGroupOf(g, b, "fields") }).Should(Succeed())
				pg := b.read(obj)
				Expect(pg.MinMember).To(Equal(int32(3)))
				if b.has.minTaskMember {
					// minAvailable 3 of 4 pods lowers the latest role's minimum.
					Expect(pg.MinTaskMember).To(Equal(map[string]int32{"chief": 1, "worker": 2}))
				}
				if b.has.minResources {
					// Exactly the minMember pods that start the gang: the
					// chief and two workers, whose GPUs are limits only.
					Expect(pg.MinResources.Cpu().String()).To(Equal("10"))
					Expect(pg.MinResources.Name(gpu, resource.DecimalSI).String()).To(Equal("4"))
				}
				if b.has.queue {
					Expect(pg.Queue).To(Equal("research"))
				}
				if b.has.priority {
					Expect(pg.PriorityClassName).To(Equal("high"))
				}
				if b.has.timeout {
					Expect(pg.ScheduleTimeoutSeconds).To(Equal(ptr.To[int32](120)))
				}
				Expect(obj.GetOwnerReferences()).To(ConsistOf(And(
					HaveField("Kind", "TFJob"), HaveField("Name", "fields"), HaveField("Controller", Equal(ptr.To(true))))))

				Eventually(func(g Gomega) {
					pg := b.read(podGroupOf(g, b, "defaults"))
					g.Expect(pg.MinMember).To(Equal(int32(2)))
					if b.has.queue {
						g.Expect(pg.Queue).To(Equal("default"), "a job without a queue lands in the default one")
					}
				}).Should(Succeed())
			})

			if b.has.minTaskMember {
				It("writes gangPolicy.minMembers as the per-role minimum", func() {
					start()
					job := mixedJob("minimums", 4)
					job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{MinMembers: map[kubeflowv1.ReplicaType]int32{"worker": 2}}
					Expect(suite.Client.Create(ctx, job)).To(Succeed())
					Eventually(func(g Gomega) {
						pg := b.read(podGroupOf(g, b, "minimums"))
						g.Expect(pg.MinTaskMember).To(Equal(map[string]int32{"chief": 1, "worker": 2}))
						g.Expect(pg.MinMember).To(Equal(int32(5)), "minMember stays the whole gang unless minAvailable lowers it")
					}).Should(Succeed())
				})
			}

			if !b.has.minTaskMember {
				It("refuses a job whose gangPolicy.minMembers its one minimum cannot keep, creating nothing, and says why", func() {
					start()
					job := mixedJob("minimums", 4)
					job.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{MinAvailable: ptr.To[int32](3)}
					job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{MinMembers: map[kubeflowv1.ReplicaType]int32{"Chief": 1}}
					Expect(suite.Client.Create(ctx, job)).To(Succeed())
					c := expectCondition("minimums", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonRoleMinimumsUnsupported)
					Expect(c.Message).To(And(
						ContainSubstring("runPolicy.gangPolicy.minMembers: the "+b.name+" gang backend has no minimum per replica type"),
						ContainSubstring("only minCount 3 for the gang's 5 pods, which does not keep chief 1 (it guarantees 0)"),
						ContainSubstring("No pod is created."),
					))
					Eventually(jobEvents("minimums", engine.ReasonRoleMinimumsUnsupported)).Should(ContainElement(HaveField("Note", c.Message)))
					Consistently(podCount("minimums"), quiet).Should(BeZero())
					Expect(noPodGroup(b, "minimums")()).To(BeTrue())

					// A role's minimum that one minCount implies runs: 4 of 5
					// pods leave the workers at least 3.
					implied := mixedJob("implied", 4)
					implied.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{MinAvailable: ptr.To[int32](4)}
					implied.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{MinMembers: map[kubeflowv1.ReplicaType]int32{"Worker": 3}}
					Expect(suite.Client.Create(ctx, implied)).To(Succeed())
					livePods("implied", 5)
				})
			}

			// gangRestartJob is mixedJob restarted whole on any break,
			// without backoff.
			gangRestartJob := func(name string) *kubeflowv1.TFJob {
				job := mixedJob(name, 2)
				for _, spec := range job.Spec.TFReplicaSpecs {
					spec.RestartPolicy = "ExitCode"
				}
				job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{
					RestartPolicy: kubeflowv1.GangRestartPolicyGang,
					Backoff:       &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](0), MaxSeconds: ptr.To[int32](0)},
				}
				return job
			}

			It("restarts a broken gang as a new gang that the backend admits afresh", func() {
				start()
				Expect(suite.Client.Create(ctx, gangRestartJob("regang"))).To(Succeed())
				admit(b, "regang")
				pods := livePods("regang", 3)
				var uid types.UID
				Eventually(func(g Gomega) { uid = podGroupOf(g, b, "regang").GetUID() }).Should(Succeed())
				for i := range pods {
					Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
				}
				expectCondition("regang", engine.ConditionGangScheduled, corev1.ConditionTrue, engine.ReasonGangScheduled)

				Expect(testutil.FailPod(ctx, suite.Client, &pods[2], 137)).To(Succeed())
				var fresh client.Object
				Eventually(func(g Gomega) {
					fresh = podGroupOf(g, b, "regang")
					g.Expect(fresh.GetUID()).NotTo(Equal(uid), "the PodGroup was reset")
				}).Should(Succeed())
				if b.admit != nil {
					Consistently(podCount("regang"), quiet).Should(BeZero(), "no member of the new gang before the backend admits it")
					admit(b, "regang")
				}
				for _, p := range livePods("regang", 3) {
					Expect(p.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "1"))
					Expect(p.Spec.SchedulerName).To(Equal(b.schedulerName))
					Expect(b.groupOf(&p)).To(Equal("regang"))
					Expect(p.UID).NotTo(BeElementOf(pods[0].UID, pods[1].UID, pods[2].UID))
				}
				expectCondition("regang", "Restarting", corev1.ConditionTrue, "MemberFailed")
			})

			if b.unadmit != nil {
				// The members' finalizer holds them until the operator has
				// judged them: a backend that stopped admitting the gang
				// must not keep the operator from doing so.
				It("restarts a gang whose members are all deleted while the backend no longer admits it", func() {
					op := run()
					Expect(suite.Client.Create(ctx, gangRestartJob("lost"))).To(Succeed())
					admit(b, "lost")
					pods := livePods("lost", 3)
					for i := range pods {
						Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
					}
					expectCondition("lost", engine.ConditionGangScheduled, corev1.ConditionTrue, engine.ReasonGangScheduled)

					// All of it happens while no operator runs, so that the
					// next one finds every member being deleted at once.
					Expect(op.Stop()).To(Succeed())
					setPhase(b, "lost", b.unadmit)
					for i := range pods {
						Expect(suite.Client.Delete(ctx, &pods[i], client.GracePeriodSeconds(0))).To(Succeed())
					}
					start()
					c := expectCondition("lost", "Restarting", corev1.ConditionTrue, "MemberEvicted")
					Expect(c.Message).To(ContainSubstring("was deleted while it ran"))
					Eventually(podCount("lost")).Should(BeZero(), "the deleted members are released")
					Consistently(podCount("lost"), quiet).Should(BeZero(), "no member of the new gang before the backend admits it")
					admit(b, "lost")
					for _, p := range livePods("lost", 3) {
						Expect(p.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "1"))
					}
				})
			}

			It("marks every pod of every kind with its scheduler, group and role", func() {
				start()
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("tf", ns).Replica(chief, 1).Replica(worker, 2).Obj())).To(Succeed())
				Expect(suite.Client.Create(ctx, testutil.MakePyTorchJob("pt", ns).
					Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 1).Obj())).To(Succeed())
				Expect(suite.Client.Create(ctx, testutil.MakeMPIJob("mpi", ns).Launcher().Workers(2).Obj())).To(Succeed())
				wantRoles := map[string][]string{
					"tf":  {"chief", "worker", "worker"},
					"pt":  {"master", "worker"},
					"mpi": {"launcher", "worker", "worker"},
				}
				for name, roles := range wantRoles {
					admit(b, name)
					var got []string
					for _, p := range livePods(name, len(roles)) {
						Expect(p.Spec.SchedulerName).To(Equal(b.schedulerName), "pod %s", p.Name)
						Expect(b.groupOf(&p)).To(Equal(name), "pod %s", p.Name)
						Expect(p.Annotations).To(HaveKeyWithValue(integrations.TaskSpecAnnotation, p.Labels[kubeflowv1.ReplicaTypeLabel]),
							"pod %s carries its own role, so master and workers never share the scheduler's per-role answers", p.Name)
						got = append(got, p.Annotations[integrations.TaskSpecAnnotation])
					}
					Expect(got).To(ConsistOf(roles), "job %s", name)
				}
			})

			It("follows spec changes and re-creates a deleted PodGroup", func() {
				start()
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("lifecycle", ns).Replica(worker, 2).Obj())).To(Succeed())
				var uid types.UID
				Eventually(func(g Gomega) { uid = podGroupOf(g, b, "lifecycle").GetUID() }).Should(Succeed())

				updateJob("lifecycle", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs[worker].Replicas = ptr.To[int32](4) })
				Eventually(func(g Gomega) {
					pg := b.read(podGroupOf(g, b, "lifecycle"))
					g.Expect(pg.MinMember).To(Equal(int32(4)))
					if b.has.minTaskMember {
						g.Expect(pg.MinTaskMember).To(HaveKeyWithValue("worker", int32(4)))
					}
				}).Should(Succeed())

				pg := b.newPodGroup()
				pg.SetNamespace(ns)
				pg.SetName("lifecycle")
				Expect(suite.Client.Delete(ctx, pg)).To(Succeed())
				Eventually(func(g Gomega) {
					g.Expect(podGroupOf(g, b, "lifecycle").GetUID()).NotTo(Equal(uid))
				}).Should(Succeed())
			})

			It("deletes the PodGroup of a finished or a suspended job, so it holds no queue capacity", func() {
				start()
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("done", ns).Replica(worker, 1).Obj())).To(Succeed())
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("paused", ns).Replica(worker, 1).Obj())).To(Succeed())
				admit(b, "done")
				admit(b, "paused")
				pods := livePods("done", 1)
				Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())
				updateJob("paused", func(j *kubeflowv1.TFJob) { j.Spec.RunPolicy.Suspend = ptr.To(true) })

				Eventually(noPodGroup(b, "done")).Should(BeTrue())
				Eventually(noPodGroup(b, "paused")).Should(BeTrue())
				Consistently(noPodGroup(b, "done"), quiet).Should(BeTrue(), "a finished job's PodGroup is not re-created")
				// Like Running, GangScheduled ends with the job.
				expectCondition("done", engine.ConditionGangScheduled, corev1.ConditionFalse, "TFJobSucceeded")
			})

			It("creates pods only once the backend admits the gang", func() {
				start()
				Expect(suite.Client.Create(ctx, mixedJob("waits", 2))).To(Succeed())
				if b.admit != nil {
					c := expectCondition("waits", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangPending)
					Expect(c.Message).To(ContainSubstring("waiting for " + b.name + " to admit the gang before creating its pods"))
					Eventually(jobEvents("waits", engine.ReasonGangPending)).Should(ContainElement(And(
						HaveField("Type", corev1.EventTypeWarning), HaveField("Note", c.Message))))
					Consistently(podCount("waits"), quiet).Should(BeZero())
					admit(b, "waits")
				}
				pods := livePods("waits", 3)
				expectCondition("waits", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangScheduling)

				if b.unadmit != nil {
					// A gang that lost a member is not admitted any more, but
					// its members run: the lost one is replaced at once.
					setPhase(b, "waits", b.unadmit)
					expectCondition("waits", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangPending)
					Expect(suite.Client.Delete(ctx, &pods[0])).To(Succeed())
					Eventually(func(g Gomega) {
						now, err := testutil.JobPods(ctx, suite.Client, ns, "waits")
						g.Expect(err).NotTo(HaveOccurred())
						g.Expect(now).To(HaveLen(3))
						g.Expect(now).NotTo(ContainElement(HaveField("UID", pods[0].UID)))
					}).Should(Succeed())
				}
			})

			It("creates pods at once with --wait-for-podgroup-admission=false", func() {
				start("--wait-for-podgroup-admission=false")
				Expect(suite.Client.Create(ctx, mixedJob("eager", 2))).To(Succeed())
				livePods("eager", 3)
				if b.admit != nil {
					// Nothing admitted it: the pods came without waiting.
					c := expectCondition("eager", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangPending)
					Expect(c.Message).NotTo(ContainSubstring("before creating its pods"))
				}
			})

			It("shows the scheduler's verdict on the job until the gang runs", func() {
				start()
				Expect(suite.Client.Create(ctx, mixedJob("verdict", 2))).To(Succeed())
				admit(b, "verdict")
				pods := livePods("verdict", 3)
				expectCondition("verdict", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangScheduling)

				var workers []corev1.Pod
				for _, p := range pods {
					if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
						workers = append(workers, p)
					}
				}
				var want string
				Eventually(func(g Gomega) {
					want = b.unschedulable(ctx, g, podGroupOf(g, b, "verdict"), workers, "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
				}).Should(Succeed())
				c := expectCondition("verdict", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangUnschedulable)
				Expect(c.Message).To(Equal(want))
				Eventually(jobEvents("verdict", engine.ReasonGangUnschedulable)).Should(ContainElement(And(
					HaveField("Type", corev1.EventTypeWarning), HaveField("Note", want))))

				for i := range pods {
					Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
				}
				expectCondition("verdict", engine.ConditionGangScheduled, corev1.ConditionTrue, engine.ReasonGangScheduled)
				Eventually(jobEvents("verdict", engine.ReasonGangScheduled)).Should(ContainElement(HaveField("Type", corev1.EventTypeNormal)))
			})

			It("survives an operator restart without a second PodGroup or pod", func() {
				first, stopped := run(), false
				DeferCleanup(func() {
					if !stopped {
						Expect(first.Stop()).To(Succeed())
					}
				})
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("restart", ns).Replica(worker, 2).Obj())).To(Succeed())
				admit(b, "restart")
				before := livePods("restart", 2)
				var pgUID types.UID
				Eventually(func(g Gomega) { pgUID = podGroupOf(g, b, "restart").GetUID() }).Should(Succeed())
				Expect(first.Stop()).To(Succeed())
				stopped = true

				start()
				// A spec change shows that the new operator has taken over.
				updateJob("restart", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs[worker].Replicas = ptr.To[int32](3) })
				Eventually(func(g Gomega) {
					g.Expect(b.read(podGroupOf(g, b, "restart")).MinMember).To(Equal(int32(3)))
				}).Should(Succeed())
				after := livePods("restart", 3)
				Expect(testutil.PodNames(after)).To(ContainElements(testutil.PodNames(before)))
				for _, p := range before {
					Expect(after).To(ContainElement(HaveField("UID", p.UID)), "pod %s kept", p.Name)
				}
				Expect(podGroupOf(Default, b, "restart").GetUID()).To(Equal(pgUID))
			})

			It("lets a job choose another backend, or none, by annotation", func() {
				start()
				chosen := testutil.MakeTFJob("chosen", ns).Replica(worker, 2).Obj()
				chosen.Annotations = map[string]string{integrations.GangSchedulerAnnotation: other.name}
				plain := testutil.MakeTFJob("plain", ns).Replica(worker, 1).Obj()
				plain.Annotations = map[string]string{integrations.GangSchedulerAnnotation: "none"}
				Expect(suite.Client.Create(ctx, chosen)).To(Succeed())
				Expect(suite.Client.Create(ctx, plain)).To(Succeed())

				admit(other, "chosen")
				for _, p := range livePods("chosen", 2) {
					Expect(p.Spec.SchedulerName).To(Equal(other.schedulerName))
					Expect(other.groupOf(&p)).To(Equal("chosen"))
				}
				Expect(other.read(podGroupOf(Default, other, "chosen")).MinMember).To(Equal(int32(2)))
				Expect(noPodGroup(b, "chosen")()).To(BeTrue(), "the operator's default backend keeps out of it")

				p := livePods("plain", 1)[0]
				Expect(p.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))
				Expect(p.Annotations).NotTo(HaveKey(integrations.TaskSpecAnnotation))
				for _, bk := range backends {
					Expect(noPodGroup(bk, "plain")()).To(BeTrue(), "no %s PodGroup for a job without a gang", bk.name)
				}

				// Back to the default: its PodGroup replaces the other's.
				updateJob("chosen", func(j *kubeflowv1.TFJob) { delete(j.Annotations, integrations.GangSchedulerAnnotation) })
				Eventually(func(g Gomega) { podGroupOf(g, b, "chosen") }).Should(Succeed())
				Eventually(noPodGroup(other, "chosen")).Should(BeTrue())
			})

			It("fails a job whose annotation names no backend, and only that job", func() {
				start()
				bad := testutil.MakeTFJob("bad", ns).Replica(worker, 1).Obj()
				bad.Annotations = map[string]string{integrations.GangSchedulerAnnotation: "slurm"}
				Expect(suite.Client.Create(ctx, bad)).To(Succeed())
				Expect(suite.Client.Create(ctx, testutil.MakeTFJob("good", ns).Replica(worker, 1).Obj())).To(Succeed())

				c := expectCondition("bad", engine.ConditionFailed, corev1.ConditionTrue, integrations.ReasonInvalidGangScheduler)
				Expect(c.Message).To(Equal(`annotation troupe.dev/gang-scheduler-name: "slurm" is not a gang scheduler; allowed: kube-scheduler, none, scheduler-plugins, troupe, volcano`))
				admit(b, "good")
				livePods("good", 1)
				Consistently(podCount("bad"), quiet).Should(BeZero())
				for _, bk := range backends {
					Expect(noPodGroup(bk, "bad")()).To(BeTrue(), "no %s PodGroup for the failed job", bk.name)
				}
			})

			// topologyJob is mixedJob with a topology policy at the rack level.
			topologyJob := func(name string, rule schedulingv1alpha1.TopologyLevelPolicy) *kubeflowv1.TFJob {
				job := mixedJob(name, 2)
				job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{Topology: &kubeflowv1.JobTopologyPolicy{
					TopologyPolicy: schedulingv1alpha1.TopologyPolicy{Levels: []schedulingv1alpha1.TopologyLevelPolicy{rule}},
				}}
				return job
			}
			rackRule := func(policy schedulingv1alpha1.TopologyPolicyType, required bool) schedulingv1alpha1.TopologyLevelPolicy {
				return schedulingv1alpha1.TopologyLevelPolicy{Level: "rack", Policy: policy, Required: required}
			}
			// startKeeping starts the operator as b keeps topology rules
			// with, and makes what it needs of the cluster.
			startKeeping := func() {
				start(b.topology.flags...)
				if b.topology.setup != nil {
					b.topology.setup(ctx)
				}
			}

			// refusesAndWarns: the backend, started by startWith, cannot
			// keep rule (Spread or Pack) at the rack level, and says so as
			// what.
			refusesAndWarns := func(how string, startWith func(), policy schedulingv1alpha1.TopologyPolicyType, what string) {
				It("refuses a job whose "+how+" rule is required, creating nothing, and says why", func() {
					startWith()
					Expect(suite.Client.Create(ctx, topologyJob("required", rackRule(policy, true)))).To(Succeed())
					c := expectCondition("required", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonTopologyUnsupported)
					Expect(c.Message).To(HavePrefix("runPolicy.gangPolicy.topology: the " + b.name + " gang backend cannot keep rack: " + what + ", and the rules are required: no pod is created."))
					Eventually(jobEvents("required", engine.ReasonTopologyUnsupported)).Should(ContainElement(And(
						HaveField("Type", corev1.EventTypeWarning), HaveField("Note", c.Message))))
					Consistently(podCount("required"), quiet).Should(BeZero())
					Expect(noPodGroup(b, "required")()).To(BeTrue(), "no PodGroup holds capacity for a job that cannot run")

					// Made preferred, the job runs.
					updateJob("required", func(j *kubeflowv1.TFJob) {
						j.Spec.RunPolicy.GangPolicy.Topology.Levels[0].Required = false
					})
					admit(b, "required")
					livePods("required", 3)
				})

				It("keeps the running pods of a job moved to it with a required "+how+" rule, and warns once", func() {
					startWith()
					job := topologyJob("moved", rackRule(policy, true))
					job.Annotations = map[string]string{integrations.GangSchedulerAnnotation: "troupe"}
					Expect(suite.Client.Create(ctx, job)).To(Succeed())
					before := livePods("moved", 3)
					updateJob("moved", func(j *kubeflowv1.TFJob) { j.Annotations[integrations.GangSchedulerAnnotation] = b.name })
					Eventually(jobEvents("moved", engine.ReasonTopologyUnsupported)).Should(ConsistOf(And(
						HaveField("Type", corev1.EventTypeWarning),
						HaveField("Note", ContainSubstring("the job's running pods are kept, but nothing places them by the rules")))))
					Consistently(func(g Gomega) {
						pods, err := testutil.JobPods(ctx, suite.Client, ns, "moved")
						g.Expect(err).NotTo(HaveOccurred())
						g.Expect(testutil.Live(pods)).To(HaveLen(3))
						for _, p := range before {
							g.Expect(pods).To(ContainElement(HaveField("UID", p.UID)), "pod %s kept", p.Name)
						}
					}, quiet).Should(Succeed())
					Expect(jobEvents("moved", engine.ReasonTopologyUnsupported)()).To(HaveLen(1))
				})

				It("runs a job whose "+how+" rule is preferred, and warns once", func() {
					startWith()
					Expect(suite.Client.Create(ctx, topologyJob("preferred", rackRule(policy, false)))).To(Succeed())
					admit(b, "preferred")
					pods := livePods("preferred", 3)
					Eventually(jobEvents("preferred", engine.ReasonTopologyIgnored)).Should(ConsistOf(And(
						HaveField("Type", corev1.EventTypeWarning),
						HaveField("Note", HavePrefix("runPolicy.gangPolicy.topology: the "+b.name+" gang backend cannot keep rack: "+what+"; these preferred rules are not kept")))))
					for i := range pods {
						Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
					}
					expectCondition("preferred", engine.ConditionGangScheduled, corev1.ConditionTrue, engine.ReasonGangScheduled)
					Consistently(jobEvents("preferred", engine.ReasonTopologyIgnored), quiet).Should(ConsistOf(HaveField("Series", BeNil())))
				})
			}

			if t := b.topology; t != nil {
				for _, required := range []bool{true, false} {
					It(fmt.Sprintf("writes the job's rack Pack rule (required %v) into its PodGroup, covering the GPU roles by default", required), func() {
						startKeeping()
						Expect(suite.Client.Create(ctx, topologyJob("placed", rackRule(schedulingv1alpha1.TopologyPack, required)))).To(Succeed())
						Eventually(func(g Gomega) {
							t.placed(g, podGroupOf(g, b, "placed"), "worker", required)
						}).Should(Succeed())
						admit(b, "placed")
						livePods("placed", 3)
						Consistently(jobEvents("placed", engine.ReasonTopologyIgnored), quiet).Should(BeEmpty())
					})
				}
				if t.setup != nil {
					It("holds a job whose required rule waits for what the backend needs (its Topology), saying why, and runs it once there", func() {
						def := &schedulingv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.DefaultTopologyName}}
						Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, def))).To(Succeed())
						Eventually(func() bool { return apierrors.IsNotFound(suite.Client.Get(ctx, client.ObjectKeyFromObject(def), def)) }).Should(BeTrue())
						start(t.flags...)
						Expect(suite.Client.Create(ctx, topologyJob("early", rackRule(schedulingv1alpha1.TopologyPack, true)))).To(Succeed())
						c := expectCondition("early", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonGangPending)
						Expect(c.Message).To(ContainSubstring(`runPolicy.gangPolicy.topology: a required rule waits for Topology "default", which does not exist`))
						Consistently(podCount("early"), quiet).Should(BeZero())
						Expect(noPodGroup(b, "early")()).To(BeTrue(), "no PodGroup lets the scheduler place the gang before its rule can be written")

						t.setup(ctx)
						Eventually(func(g Gomega) { t.placed(g, podGroupOf(g, b, "early"), "worker", true) }, 30*time.Second).Should(Succeed())
						admit(b, "early")
						livePods("early", 3)
					})

					It("refuses a job whose required rule names a level its Topology lacks, and runs it once the Topology has the level", func() {
						def := testutil.MakeTopology(schedulingv1alpha1.DefaultTopologyName).Level("host", corev1.LabelHostname).Obj()
						Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, def.DeepCopy()))).To(Succeed())
						Eventually(func() bool {
							return apierrors.IsNotFound(suite.Client.Get(ctx, client.ObjectKeyFromObject(def), &schedulingv1alpha1.Topology{}))
						}).Should(BeTrue())
						Expect(suite.Client.Create(ctx, def)).To(Succeed())
						start(t.flags...)
						Expect(suite.Client.Create(ctx, topologyJob("nolevel", rackRule(schedulingv1alpha1.TopologyPack, true)))).To(Succeed())
						c := expectCondition("nolevel", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonTopologyUnsupported)
						Expect(c.Message).To(ContainSubstring(`Topology "default" has no level "rack"`))
						Consistently(podCount("nolevel"), quiet).Should(BeZero())

						// The cluster's description gains the level: nothing
						// about the job changed, and it runs.
						Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(def), def)).To(Succeed())
						def.Spec.Levels = append([]schedulingv1alpha1.TopologyLevel{{Name: "rack", NodeLabel: "example.com/rack"}}, def.Spec.Levels...)
						Expect(suite.Client.Update(ctx, def)).To(Succeed())
						Eventually(func(g Gomega) { t.placed(g, podGroupOf(g, b, "nolevel"), "worker", true) }, 30*time.Second).Should(Succeed())
						admit(b, "nolevel")
						livePods("nolevel", 3)
					})
				}
				if len(t.flags) > 0 {
					refusesAndWarns("Pack (without "+strings.Join(t.flags, " ")+")", func() { start() }, schedulingv1alpha1.TopologyPack, t.unkeptWithoutFlags)
				}
				if t.unkept != "" {
					refusesAndWarns(string(t.unkept), startKeeping, t.unkept, "policy "+string(t.unkept))
				}
			} else {
				refusesAndWarns("Pack", func() { start() }, schedulingv1alpha1.TopologyPack, "rule")
			}

			if i == 0 {
				It("refuses a required topology rule with gang scheduling off (none)", func() {
					start()
					job := topologyJob("ungrouped", rackRule(schedulingv1alpha1.TopologyPack, true))
					job.Annotations = map[string]string{integrations.GangSchedulerAnnotation: integrations.None}
					Expect(suite.Client.Create(ctx, job)).To(Succeed())
					c := expectCondition("ungrouped", engine.ConditionGangScheduled, corev1.ConditionFalse, engine.ReasonTopologyUnsupported)
					Expect(c.Message).To(HavePrefix("runPolicy.gangPolicy.topology: the none gang backend cannot keep rack: rule"))
					Consistently(podCount("ungrouped"), quiet).Should(BeZero())
				})
			}

			It("keeps a schedulerName the user chose, and warns once", func() {
				start()
				job := testutil.MakeTFJob("custom", ns).Replica(chief, 1).Replica(worker, 1).Obj()
				job.Spec.TFReplicaSpecs[worker].Template.Spec.SchedulerName = "my-scheduler"
				Expect(suite.Client.Create(ctx, job)).To(Succeed())
				admit(b, "custom")
				pods := livePods("custom", 2)
				for _, p := range pods {
					want := b.schedulerName
					if p.Labels[kubeflowv1.ReplicaTypeLabel] == "worker" {
						want = "my-scheduler"
					}
					Expect(p.Spec.SchedulerName).To(Equal(want), "pod %s", p.Name)
					Expect(b.groupOf(&p)).To(Equal("custom"), "pod %s is still a member of the gang", p.Name)
				}
				Eventually(jobEvents("custom", engine.ReasonCustomSchedulerName)).Should(ConsistOf(And(
					HaveField("Type", corev1.EventTypeWarning),
					HaveField("Note", ContainSubstring("Worker pods use schedulerName my-scheduler, not "+b.name+"'s "+b.schedulerName)))))

				// More passes (the pods start) give no second warning: a
				// repeat would turn the event into a series.
				for i := range pods {
					Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
				}
				expectCondition("custom", engine.ConditionGangScheduled, corev1.ConditionTrue, engine.ReasonGangScheduled)
				Consistently(jobEvents("custom", engine.ReasonCustomSchedulerName), quiet).Should(ConsistOf(HaveField("Series", BeNil())))
			})
		})
	}
})
