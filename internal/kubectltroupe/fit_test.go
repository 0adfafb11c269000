package kubectltroupe_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// fitManifest is a PyTorchJob of a CPU master and WORKERS workers of 4
// GPUs each, on the spec's nodes (POOL), of priority class CLASS.
const fitManifest = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: NAME
spec:
  runPolicy:
    schedulingPolicy:
      priorityClass: CLASS
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector: {troupe.test/pool: POOL-cpu}
          containers:
          - name: pytorch
            image: registry.example/train:1
            resources: {requests: {cpu: "1"}}
    Worker:
      replicas: WORKERS
      template:
        spec:
          nodeSelector: {troupe.test/pool: POOL-gpu}
          containers:
          - name: pytorch
            image: registry.example/train:1
            resources: {limits: {nvidia.com/gpu: "4"}}
`

// These specs ask `kubectl troupe fit` where a job would go, then create
// the job and check that troupe-scheduler does what fit said, on a real
// API server with the operator and the scheduler running.
var _ = Describe("kubectl troupe fit", Ordered, func() {
	var (
		ctx        context.Context
		kubeconfig string
		ns         string
		dir        string
		// config is troupe-scheduler's configuration, which fit is given.
		config string
	)
	// manifest writes the job's manifest to a file and returns its path
	// and text.
	manifest := func(name string, workers int, class string) (string, string) {
		text := strings.NewReplacer("NAME", name, "WORKERS", fmt.Sprint(workers), "POOL", ns, "CLASS", ns+"-"+class).Replace(fitManifest)
		path := filepath.Join(dir, name+".yaml")
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		return path, text
	}
	fitJob := func(path string, args ...string) string {
		out, err := plugin(kubeconfig, append([]string{"fit", "-n", ns, "-f", path, "--scheduler-config", config}, args...)...)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return out
	}
	// placements reads fit's table: pod -> node ("-" for waiting).
	placements := func(out string) map[string]string {
		got := map[string]string{}
		row := regexp.MustCompile(`^(master|worker)\s+(\S+)\s+(\S+)$`)
		for _, l := range strings.Split(out, "\n") {
			if m := row.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				got[m[2]] = m[3]
			}
		}
		return got
	}
	bound := func(g Gomega, job string) map[string]string {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, job)
		g.Expect(err).NotTo(HaveOccurred())
		got := map[string]string{}
		for _, p := range testutil.Live(pods) {
			got[p.Name] = p.Spec.NodeName
		}
		return got
	}

	BeforeAll(func() {
		ctx = context.Background()
		kubeconfig = userKubeconfig("fit-user")
		dir = GinkgoT().TempDir()
		ns = suite.NewNamespace(ctx, "fit")
		for _, n := range []*corev1.Node{
			testutil.MakeNode(ns+"-cpu").Capacity("16", "64Gi").Label("troupe.test/pool", ns+"-cpu").Obj(),
			testutil.MakeNode(ns+"-gpu-0").Capacity("32", "128Gi").GPU(4).Label("troupe.test/pool", ns+"-gpu").Obj(),
			testutil.MakeNode(ns+"-gpu-1").Capacity("32", "128Gi").GPU(4).Label("troupe.test/pool", ns+"-gpu").Obj(),
		} {
			Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), n))).To(Succeed()) })
		}
		for name, value := range map[string]int32{"low": 10, "high": 1000} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Value: value}
			Expect(suite.Client.Create(ctx, pc)).To(Succeed())
			DeferCleanup(func() { Expect(suite.Client.Delete(context.Background(), pc)).To(Succeed()) })
		}
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe", "--enable-scheme=pytorchjob"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
		config = filepath.Join(dir, "scheduler.yaml")
		Expect(os.WriteFile(config, []byte("actions: [enqueue, preempt, allocate, backfill]\n"), 0o600)).To(Succeed())
		s, err := testutil.StartScheduler(suite.Env.Config, "--config="+config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})
	})

	It("says where the job would go, and the scheduler then places it there", func() {
		path, text := manifest("first", 2, "low")
		out := fitJob(path)
		Expect(out).To(ContainSubstring("PyTorchJob " + ns + "/first: troupe-scheduler would place it now."))
		said := placements(out)
		Expect(said).To(HaveLen(3))
		Expect(said).To(HaveKeyWithValue("first-master-0", ns+"-cpu"))
		Expect(said).NotTo(ContainElement("-"))

		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, text)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) { g.Expect(bound(g, "first")).To(Equal(said)) }, 30*time.Second).Should(Succeed())
	})

	It("says why a job would not be placed, as the scheduler's PodGroup then says, and that preemption would not help", func() {
		path, text := manifest("second", 1, "low")
		out := fitJob(path)
		Expect(out).To(ContainSubstring("PyTorchJob " + ns + "/second: troupe-scheduler would not place it now."))
		Expect(placements(out)).To(Equal(map[string]string{"second-master-0": "-", "second-worker-0": "-"}))
		Expect(out).To(ContainSubstring("Preemption would take nothing for it"))
		why := regexp.MustCompile(`Why \((\w+)\): (.*)`).FindStringSubmatch(out)
		Expect(why).NotTo(BeNil(), out)

		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, text)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			pg := &schedulingv1alpha1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, pg)).To(Succeed())
			c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(why[1]))
			g.Expect(c.Message).To(Equal(why[2]))
		}, 30*time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(bound(g, "second")).To(HaveEach(BeEmpty())) }, 2*time.Second).Should(Succeed())
	})

	It("names the gang preemption would take for a job of higher priority, and the scheduler then takes it", func() {
		path, text := manifest("urgent", 1, "high")
		out := fitJob(path)
		Expect(out).To(ContainSubstring("would not place it now"))
		Expect(out).To(ContainSubstring("Preemption would delete these pods, and the gang would be placed once they are gone:"))
		Expect(out).To(ContainSubstring(fmt.Sprintf("%s/first (priority 10): first-master-0, first-worker-0, first-worker-1 (the whole gang)", ns)))

		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, text)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "first")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.DeletionTimestamp).NotTo(BeNil(), "%s is preempted", p.Name)
			}
			pods, err = testutil.JobPods(ctx, suite.Client, ns, "second")
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods {
				g.Expect(p.DeletionTimestamp).To(BeNil(), "%s of the same priority is not", p.Name)
			}
		}, 30*time.Second).Should(Succeed())
	})

	It("refuses what it cannot answer, naming why", func() {
		twoJobs := filepath.Join(dir, "two.yaml")
		_, one := manifest("one", 1, "low")
		Expect(os.WriteFile(twoJobs, []byte(one+"\n---\n"+strings.ReplaceAll(one, "name: one", "name: two")), 0o600)).To(Succeed())
		noJob := filepath.Join(dir, "none.yaml")
		Expect(os.WriteFile(noJob, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600)).To(Succeed())
		invalid, _ := manifest("invalid", 1, "low")
		text, err := os.ReadFile(invalid)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(invalid, []byte(strings.Replace(string(text), "runPolicy:\n", "runPolicy:\n    backoffLimit: -1\n", 1)), 0o600)).To(Succeed())
		volcano, _ := manifest("volcano", 1, "low")
		text, err = os.ReadFile(volcano)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(volcano, []byte(strings.Replace(string(text), "name: volcano\n", "name: volcano\n  annotations: {troupe.dev/gang-scheduler-name: volcano}\n", 1)), 0o600)).To(Succeed())

		for args, want := range map[string]string{
			"":              "-f: the job's manifest is required",
			"-f " + twoJobs: "2 training jobs found; want exactly one TFJob, PyTorchJob, MPIJob of kubeflow.org/v1",
			"-f " + noJob:   "0 training jobs found",
			"-f " + invalid: "the API server refuses the job",
			"-f " + volcano: `annotation troupe.dev/gang-scheduler-name is "volcano": fit answers for the troupe backend only`,
			"-f " + noJob + " --scheduler-config x --scheduler-config-map y/z": "give one, not both",
		} {
			_, err := plugin(kubeconfig, append([]string{"fit", "-n", ns}, strings.Fields(args)...)...)
			Expect(err).To(HaveOccurred(), args)
			Expect(err.Error()).To(ContainSubstring(want), args)
		}
		_, err = plugin(kubeconfig, "fit", "-n", ns, "-f", filepath.Join(dir, "first.yaml"), "--scheduler-config-map", "nope")
		Expect(err).To(MatchError(ContainSubstring(`--scheduler-config-map "nope": want NAMESPACE/NAME`)))
		_, err = plugin(kubeconfig, "fit", "-n", ns, "-f", filepath.Join(dir, "first.yaml"), "--scheduler-config-map", ns+"/missing")
		Expect(err).To(MatchError(ContainSubstring("--scheduler-config-map: configmaps \"missing\" not found")))
	})
})
