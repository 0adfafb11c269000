package integration

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Elastic PyTorchJobs (elasticPolicy) as elastic gangs, through the
// operator and troupe-scheduler: the gang is the master and minReplicas
// workers; the other workers are placed when room appears, and are the
// first members preemption takes.
var _ = Describe("Elastic PyTorchJobs as elastic gangs through the operator and troupe-scheduler", Ordered, ContinueOnFailure, func() {
	ctx := context.Background()

	f := fixtures("elastic")

	// elastic makes the job a 2-to-4-worker elastic job of 4 workers.
	elastic := func(j *kubeflowv1.PyTorchJob) {
		j.Spec.ElasticPolicy = &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)}
	}
	// runBound plays the kubelet: every bound member of the job runs.
	runBound := func(name string) {
		EventuallyWithOffset(1, func(g Gomega) {
			for _, p := range f.live(g, name) {
				if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning {
					g.Expect(testutil.SetPodPhase(ctx, suite.Client, &p, corev1.PodRunning)).To(Succeed())
				}
			}
		}).Should(Succeed())
	}
	gangScheduled := func(g Gomega, name string) string {
		job := &kubeflowv1.PyTorchJob{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, job)).To(Succeed())
		c := testutil.Condition(&job.Status, kubeflowv1.JobGangScheduled)
		g.ExpectWithOffset(1, c).NotTo(BeNil())
		g.ExpectWithOffset(1, c.Status).To(Equal(corev1.ConditionTrue), c.Message)
		return c.Message
	}

	It("places the master and minReplicas workers as the gang, and the other workers when room appears", func() {
		f.node("cpu", "cpu", 0)
		f.node("gpu-0", "gpu", 2)
		s, err := testutil.StartScheduler(suite.Env.Config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		f.job("elastic", 4, "1", nil, elastic)
		Eventually(func(g Gomega) {
			pg := f.podGroup(g, "elastic")
			g.Expect(pg.Spec.MinMember).To(Equal(int32(3)))
			g.Expect(pg.Spec.MinTaskMember).To(Equal(map[string]int32{"master": 1, "worker": 2}))
		}).Should(Succeed())
		// Two GPUs: the gang runs with two workers, two wait.
		Eventually(func(g Gomega) {
			pods := f.live(g, "elastic")
			g.Expect(pods).To(HaveLen(5))
			g.Expect(f.bound(pods)).To(HaveLen(3))
		}).Should(Succeed())
		runBound("elastic")
		Eventually(func(g Gomega) {
			g.Expect(gangScheduled(g, "elastic")).To(ContainSubstring("Elastic: 0 of the 2 members above the minimum run."))
		}).Should(Succeed())

		f.node("gpu-1", "gpu", 2)
		Eventually(func(g Gomega) { g.Expect(f.bound(f.live(g, "elastic"))).To(HaveLen(5)) }).Should(Succeed())
		runBound("elastic")
		Eventually(func(g Gomega) {
			g.Expect(gangScheduled(g, "elastic")).To(ContainSubstring("Elastic: 2 of the 2 members above the minimum run."))
		}).Should(Succeed())
	})

	It("preempts the workers above the minimum first, and the elastic gang runs on without a restart", func() {
		high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-high"}, Value: 1000}
		Expect(suite.Client.Create(ctx, high)).To(Succeed())
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, high)).To(Succeed()) })
		f.node("cpu", "cpu", 0)
		f.node("gpu", "gpu", 4)
		config := filepath.Join(GinkgoT().TempDir(), "scheduler.yaml")
		Expect(os.WriteFile(config, []byte("actions: [enqueue, preempt, allocate, backfill]\n"), 0o600)).To(Succeed())
		s, err := testutil.StartScheduler(suite.Env.Config, "--config="+config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)

		f.job("elastic", 4, "1", nil, elastic, func(j *kubeflowv1.PyTorchJob) {
			j.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{RestartPolicy: kubeflowv1.GangRestartPolicyGang}
			j.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].RestartPolicy = kubeflowv1.RestartPolicy("ExitCode")
		})
		f.whole("elastic", 5, f.ns+"-gpu")
		runBound("elastic")
		first := map[string]corev1.Pod{}
		for _, p := range f.live(Default, "elastic") {
			first[p.Name] = p
		}

		// A gang of higher priority needs two of the four GPUs.
		f.job("urgent", 2, "1", nil, func(j *kubeflowv1.PyTorchJob) {
			j.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{PriorityClass: high.Name}
		})
		f.whole("urgent", 3, f.ns+"-gpu")

		// Workers 2 and 3 went, and were created again; the master and
		// workers 0 and 1 kept running, in generation 0.
		Eventually(func(g Gomega) {
			live := f.live(g, "elastic")
			// Every member live: one preempted below the minimum would be
			// held Terminating by its finalizer, and left out of live.
			g.Expect(live).To(HaveLen(len(first)), "a member is gone or terminating")
			for _, p := range live {
				g.Expect(first).To(HaveKey(p.Name))
				was := first[p.Name]
				switch p.Name {
				case "elastic-worker-2", "elastic-worker-3":
					g.Expect(p.UID).NotTo(Equal(was.UID), "%s was preempted and created again", p.Name)
					g.Expect(p.Spec.NodeName).To(BeEmpty(), "%s waits for room", p.Name)
				default:
					g.Expect(p.UID).To(Equal(was.UID), "%s was not preempted", p.Name)
				}
				g.Expect(p.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "0"))
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			job := &kubeflowv1.PyTorchJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "elastic"}, job)).To(Succeed())
			g.Expect(job.Status.Gang).NotTo(BeNil())
			// The last restart names its trigger and member, should one come.
			g.Expect(job.Status.Gang.Generation).To(BeZero(), "no gang restart: the minimum held; last restart: %+v", job.Status.Gang.LastRestart)
			g.Expect(gangScheduled(g, "elastic")).To(ContainSubstring("Elastic: 0 of the 2 members above the minimum run."))
		}, 3*time.Second).Should(Succeed())
	})
})
