package operator_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/internal/operator"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// These specs run the operator exactly as cmd/operator does (operator.Run
// with parsed flags), under the ServiceAccount and ClusterRole that
// config/rbac/operator holds, so they prove the flags and the generated
// permissions, not just the controllers.
var _ = Describe("operator.Run", func() {
	var ctx context.Context

	BeforeEach(func() { ctx = context.Background() })

	// runAs starts the operator with the flags, as a ServiceAccount bound to
	// the generated ClusterRole, and stops it when the spec ends.
	runAs := func(args ...string) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "troupe-", Namespace: "default"}}
		Expect(suite.Client.Create(ctx, sa)).To(Succeed())
		raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "operator", "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		Expect(yaml.Unmarshal(raw, role)).To(Succeed())
		role.Name = sa.Name
		Expect(suite.Client.Create(ctx, role)).To(Succeed())
		Expect(suite.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
		})).To(Succeed())

		cfg := rest.CopyConfig(suite.Env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:default:" + sa.Name}
		opts, err := operator.ParseFlags(append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...), GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		// Controller names are unique per process unless told otherwise;
		// every spec here starts its own manager.
		skipNameValidation := func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) }
		go func() { done <- operator.Run(runCtx, cfg, opts, skipNameValidation) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).Should(Receive(BeNil()))
		})
	}
	newNamespace := func() string {
		ns, err := testutil.CreateNamespace(ctx, suite.Client, "run")
		Expect(err).NotTo(HaveOccurred())
		return ns.Name
	}
	podCount := func(ns, job string) func() (int, error) {
		return func() (int, error) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, job)
			return len(pods), err
		}
	}

	It("runs every kind with the generated permissions, MPI launcher RBAC included", func() {
		runAs()
		ns := newNamespace()
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("tf", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 2).Obj())).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeMPIJob("mpi", ns).Launcher().Workers(2).Obj())).To(Succeed())
		Eventually(podCount(ns, "tf")).Should(Equal(2))
		Eventually(podCount(ns, "mpi")).Should(Equal(3), "the operator may create the launcher's Role only if it holds pods/exec itself")
		Eventually(func(g Gomega) {
			var roles rbacv1.RoleList
			g.Expect(suite.Client.List(ctx, &roles)).To(Succeed())
			names := []string{}
			for _, r := range roles.Items {
				if r.Namespace == ns {
					names = append(names, r.Name)
				}
			}
			g.Expect(names).To(ConsistOf("mpi-launcher"))
		}).Should(Succeed())
	})

	It("keeps a PodGroup per job with --gang-scheduler-name=troupe, within the generated permissions", func() {
		runAs("--gang-scheduler-name=troupe", "--enable-scheme=pytorchjob")
		ns := newNamespace()
		Expect(suite.Client.Create(ctx, testutil.MakePyTorchJob("pt", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			pg := &schedulingv1alpha1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pt"}, pg)).To(Succeed())
			g.Expect(pg.Spec.MinMember).To(Equal(int32(3)))
		}).Should(Succeed())
		Eventually(podCount(ns, "pt")).Should(Equal(3))
	})

	It("keeps a Workload and a PodGroup per job with --gang-scheduler-name=kube-scheduler, within the generated permissions", func() {
		runAs("--gang-scheduler-name=kube-scheduler", "--enable-scheme=pytorchjob")
		ns := newNamespace()
		Expect(suite.Client.Create(ctx, testutil.MakePyTorchJob("pt", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pt"}, &schedulingv1beta1.Workload{})).To(Succeed())
			pg := &schedulingv1beta1.PodGroup{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pt"}, pg)).To(Succeed())
			g.Expect(pg.Spec.SchedulingPolicy.Gang).To(HaveValue(HaveField("MinCount", int32(3))))
		}).Should(Succeed())
		Eventually(podCount(ns, "pt")).Should(Equal(3))
		var pods corev1.PodList
		Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			Expect(p.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))
			Expect(p.Spec.SchedulingGroup).To(HaveValue(HaveField("PodGroupName", HaveValue(Equal("pt")))),
				"the API server kept spec.schedulingGroup: it serves the Workload API")
		}
	})

	It("stops at start, naming the feature gate and runtime-config, when --gang-scheduler-name=kube-scheduler and the API server does not serve the Workload API", func() {
		// An API server as Kubernetes 1.37 starts by default: beta APIs off.
		plain := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(testutil.RepoRoot(), "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
		cfg, err := plain.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(plain.Stop)
		opts, err := operator.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--gang-scheduler-name=kube-scheduler"}, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		err = operator.Run(ctx, cfg, opts, func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) })
		Expect(err).To(MatchError(And(
			ContainSubstring("--gang-scheduler-name=kube-scheduler: the cluster does not serve Workload (scheduling.k8s.io/v1beta1)"),
			ContainSubstring("kube-apiserver --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true"),
			ContainSubstring("kube-scheduler and kube-controller-manager --feature-gates=GenericWorkload=true"),
		)))
	})

	// This suite's API server serves Troupe's CRDs only, not the peers'.
	for flag, install := range map[string]string{"volcano": "install Volcano v1.14", "scheduler-plugins": "install scheduler-plugins v0.34"} {
		It("stops at start, naming what to install, when --gang-scheduler-name="+flag+" has no PodGroup CRD", func() {
			opts, err := operator.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--gang-scheduler-name=" + flag}, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			err = operator.Run(ctx, suite.Env.Config, opts, func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) })
			Expect(err).To(MatchError(And(ContainSubstring("--gang-scheduler-name="+flag+": "), ContainSubstring(install))))
		})
	}

	It("fails a job that chooses a backend whose PodGroup CRD is missing, and runs the others", func() {
		runAs("--gang-scheduler-name=troupe", "--enable-scheme=tfjob")
		ns := newNamespace()
		job := testutil.MakeTFJob("volcanic", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj()
		job.Annotations = map[string]string{integrations.GangSchedulerAnnotation: "volcano"}
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("tf", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			got := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "volcanic"}, got)).To(Succeed())
			c := testutil.Condition(&got.Status, "Failed")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(integrations.ReasonGangSchedulerNotInstalled))
			g.Expect(c.Message).To(And(ContainSubstring("annotation troupe.dev/gang-scheduler-name=volcano: "), ContainSubstring("install Volcano")))
		}).Should(Succeed())
		Eventually(podCount(ns, "tf")).Should(Equal(1))
		Consistently(podCount(ns, "volcanic"), time.Second).Should(BeZero())
	})

	It("watches only the namespace and the kinds the flags name", func() {
		watched, other := newNamespace(), newNamespace()
		runAs("--namespace="+watched, "--enable-scheme=tfjob")
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("tf", watched).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("tf", other).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeMPIJob("mpi", watched).Launcher().Workers(1).Obj())).To(Succeed())
		Eventually(podCount(watched, "tf")).Should(Equal(1))
		Consistently(podCount(other, "tf"), 2*time.Second).Should(BeZero())
		Consistently(podCount(watched, "mpi"), time.Second).Should(BeZero())
	})

	It("serves training-operator's job counters and Troupe's jobs gauge on its metrics endpoint", func() {
		addr := freeAddress()
		runAs("--metrics-bind-address="+addr, "--enable-scheme=tfjob,pytorchjob", "--gang-scheduler-name=troupe")
		ns := newNamespace()
		tf := testutil.MakeTFJob("tf", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj()
		tf.Annotations = map[string]string{integrations.GangSchedulerAnnotation: integrations.None}
		Expect(suite.Client.Create(ctx, tf)).To(Succeed())
		// No troupe-scheduler runs here: this gang waits for good.
		Expect(suite.Client.Create(ctx, testutil.MakePyTorchJob("pt", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeMaster, 1).Obj())).To(Succeed())
		jobMetric := func(name, framework string, extra ...string) func() (float64, error) {
			labels := append([]string{"job_namespace", ns, "framework", framework}, extra...)
			return func() (float64, error) { return scrape(addr, name, labels...) }
		}
		Eventually(jobMetric("training_operator_jobs_created_total", "tensorflow")).Should(Equal(1.0))
		Eventually(jobMetric("training_operator_jobs_created_total", "pytorch")).Should(Equal(1.0))
		Eventually(jobMetric("troupe_jobs", "pytorch", "state", "GangPending")).Should(Equal(1.0))

		Eventually(podCount(ns, "tf")).Should(Equal(1))
		pods, err := testutil.JobPods(ctx, suite.Client, ns, "tf")
		Expect(err).NotTo(HaveOccurred())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodRunning)).To(Succeed())
		Eventually(jobMetric("troupe_jobs", "tensorflow", "state", "Running")).Should(Equal(1.0))
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())
		Eventually(jobMetric("training_operator_jobs_successful_total", "tensorflow")).Should(Equal(1.0))
		Eventually(jobMetric("troupe_jobs", "tensorflow", "state", "Succeeded")).Should(Equal(1.0))

		Expect(suite.Client.Delete(ctx, tf)).To(Succeed())
		Eventually(jobMetric("training_operator_jobs_deleted_total", "tensorflow")).Should(Equal(1.0))
		Eventually(jobMetric("troupe_jobs", "tensorflow", "state", "Succeeded")).Should(BeZero())
		Consistently(jobMetric("training_operator_jobs_created_total", "tensorflow"), "2s").Should(Equal(1.0), "counted once, however many passes")
		Expect(jobMetric("training_operator_jobs_failed_total", "tensorflow")()).To(BeZero())
	})
})

// freeAddress is a loopback address with a port nothing listens on now.
func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}

// scrape reads one sample from a Prometheus endpoint: the metric's value
// for the label pairs given, 0 when no series matches.
func scrape(addr, name string, labels ...string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	f, ok := families[name]
	if !ok {
		return 0, nil
	}
	for _, m := range f.GetMetric() {
		if matches(m.GetLabel(), labels) {
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), nil
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), nil
			}
		}
	}
	return 0, nil
}

// matches reports whether the labels hold every name-value pair given.
func matches(labels []*dto.LabelPair, pairs []string) bool {
	have := map[string]string{}
	for _, l := range labels {
		have[l.GetName()] = l.GetValue()
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if have[pairs[i]] != pairs[i+1] {
			return false
		}
	}
	return true
}
