package kubectltroupe_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// These specs run `kubectl troupe status` as kubectl runs it, with a
// kubeconfig, against jobs the operator runs on a real API server.
var _ = Describe("kubectl troupe status", Ordered, func() {
	var (
		ctx        context.Context
		kubeconfig string
		ns         string
	)

	// status runs the plugin with args and returns what it printed, or its
	// error.
	status := func(args ...string) (string, error) {
		return plugin(kubeconfig, append([]string{"status"}, args...)...)
	}
	// line is the list's line of a job, split into its columns' words.
	line := func(out, job string) []string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == job {
				return f
			}
		}
		return nil
	}

	BeforeAll(func() {
		ctx = context.Background()
		kubeconfig = userKubeconfig("status-user")

		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe", "--enable-scheme=tfjob,pytorchjob"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
		ns = suite.NewNamespace(ctx, "plugin")

		// No troupe-scheduler runs: this gang is never admitted.
		pt := testutil.MakePyTorchJob("llama", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj()
		pt.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{Queue: "research"}
		Expect(suite.Client.Create(ctx, pt)).To(Succeed())
		// Without a gang, the TFJob's pods are created at once.
		tf := testutil.MakeTFJob("resnet", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 2).Obj()
		tf.Annotations = map[string]string{integrations.GangSchedulerAnnotation: integrations.None}
		Expect(suite.Client.Create(ctx, tf)).To(Succeed())
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "resnet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
			g.Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodRunning)).To(Succeed())
		}).Should(Succeed())
	})

	It("lists each job with its state, backend, queue and members running against the minimum per role", func() {
		Eventually(func(g Gomega) {
			out, err := status("-n", ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(line(out, "pytorchjob/llama")).To(HaveExactElements("pytorchjob/llama", "GangPending", "troupe", "research", "Master", "0/1,", "Worker", "0/2", "0", "0", Not(BeEmpty()),
				"PyTorchJob", "llama:", "0", "of", "minMember", "3", "pods", "run;", "troupe-scheduler", "is", "placing", "the", "rest."))
			g.Expect(line(out, "tfjob/resnet")).To(HaveExactElements("tfjob/resnet", "Running", "none", "-", "Worker", "1/2", "0", "0", Not(BeEmpty()), "Worker:", "not", "placed", "yet"))
		}).Should(Succeed())
	})

	It("shows one job in detail, with why each role waits", func() {
		out, err := status("-n", ns, "pytorchjob/llama")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`PyTorchJob:\s+` + ns + `/llama\n`))
		Expect(out).To(MatchRegexp(`Backend:\s+troupe \(PodGroup llama: no status yet\)`))
		Expect(out).To(MatchRegexp(`Worker\s+2\s+2\s+0\s+2\s+0\s+0\s+the gang waits \(see Waiting\)\n`))

		byName, err := status("-n", ns, "resnet")
		Expect(err).NotTo(HaveOccurred())
		Expect(byName).To(MatchRegexp(`TFJob:\s+` + ns + `/resnet\n`))
	})

	It("shows a kube-scheduler gang's phase from its PodGroupInitiallyScheduled condition", func() {
		native := testutil.MakePyTorchJob("native", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj()
		native.Annotations = map[string]string{integrations.GangSchedulerAnnotation: kubenative.Name}
		Expect(suite.Client.Create(ctx, native)).To(Succeed())
		Eventually(func(g Gomega) {
			out, err := status("-n", ns, "pytorchjob/native")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(MatchRegexp(`Backend:\s+kube-scheduler \(PodGroup native: no status yet\)`))
		}).Should(Succeed())
		// What kube-scheduler's GangScheduling writes when the gang does
		// not fit.
		Eventually(func(g Gomega) {
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "native"}, pg)).To(Succeed())
			meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{
				Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
				Reason: schedulingv1beta1.PodGroupReasonUnschedulable, Message: "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
			})
			g.Expect(suite.Client.Status().Update(ctx, pg)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			out, err := status("-n", ns, "pytorchjob/native")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(MatchRegexp(`Backend:\s+kube-scheduler \(PodGroup native: Unschedulable\)`))
			g.Expect(out).To(ContainSubstring("minCount (3) cannot be satisfied: 2 scheduled"))
		}).Should(Succeed())
	})

	It("refuses what it cannot show, saying why", func() {
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("llama", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		for args, want := range map[string]string{
			"llama":        `"llama" names tfjob/llama and pytorchjob/llama: say which`,
			"jaxjob/llama": `"jaxjob/llama": unknown job kind "jaxjob"; known: tfjob, pytorchjob, mpijob`,
			"gpt":          `no TFJob, PyTorchJob or MPIJob "gpt" in namespace ` + ns,
		} {
			_, err := status("-n", ns, args)
			Expect(err).To(MatchError(want), args)
		}
		_, err := status("-A", "llama")
		Expect(err).To(MatchError(ContainSubstring("--all-namespaces lists jobs")))
	})
})
