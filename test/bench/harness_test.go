package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/internal/cmdutil"
	"github.com/troupe-ml/troupe/internal/testutil"
	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/nullbinder"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/report"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// TestMain lets the test binary stand in for the bench binary: the null
// placer re-executes it with the null-binder subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == NullBinderCommand {
		os.Exit(nullbinder.Main(ctrl.SetupSignalHandler(), os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestHarness(t *testing.T) {
	ctrl.SetLogger(GinkgoLogr)
	testutil.RunSuite(t, "Benchmark harness")
}

// smokeOptions are the harness's settings for the null binder at a tiny
// scale, on the control plane `make test` builds.
func smokeOptions(dir string) *Options {
	o := NewOptions()
	o.ControlPlaneDir = os.Getenv("KUBEBUILDER_ASSETS")
	var crds []string
	for _, c := range cmdutil.SplitList(o.CRDs) {
		crds = append(crds, filepath.Join(testutil.RepoRoot(), c))
	}
	o.CRDs = strings.Join(crds, ",")
	o.WorkDir = dir
	o.Placers = PlacerNull
	// One number of binds in flight: a sweep is the same runs again.
	o.NullBindWorkers = "16"
	o.Scale = 0.02
	o.Hold = 500 * time.Millisecond
	o.Settle = 10 * time.Second
	o.RunTimeout = time.Minute
	o.Check = true
	return o
}

var _ = Describe("a run", func() {
	It("measures every gang of S3, charges the placer only its own writes, and stops its control plane", func(ctx context.Context) {
		opts := smokeOptions(GinkgoT().TempDir())
		// The null binder binds everything at once: the gangs must end
		// about as soon as they are up for the harness to delete some.
		opts.Hold = time.Millisecond
		Expect(opts.Validate()).To(Succeed())
		exe, err := os.Executable()
		Expect(err).NotTo(HaveOccurred())
		var s3 = opts.ScenarioList()[2]
		Expect(s3.Name).To(Equal("S3"))

		r := (&run{opts: opts, scenario: s3, placer: placer.Null{Exe: exe, Subcommand: NullBinderCommand, BindWorkers: 16},
			dir: filepath.Join(opts.WorkDir, "S3-null"), log: GinkgoWriter}).do(ctx)

		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Throughput.Pods).To(Equal(s3.Pods()), "every pod bound once, by the audit log")
		// Timed from the audit log; the watch saw the same binds, a little later.
		Expect(r.Watched.Makespan).To(BeNumerically("~", r.Throughput.Makespan, time.Second))
		Expect(r.Throughput.Gangs).To(Equal(s3.Gangs))
		Expect(r.Partial).To(BeEmpty())
		Expect(r.PartialDuring).To(BeEmpty())
		Expect(r.NeverUp).To(BeEmpty())
		Expect(r.PeakRSS).To(BeNumerically(">", 1<<20), "the null binder's peak memory")
		// The harness deleted gangs (pods and PodGroups) during the run;
		// only the binds are the null binder's.
		Expect(r.Quality.Masters).To(BeNumerically("<", s3.Gangs), "some gangs were deleted")
		Expect(r.Writes).To(Equal(measure.Writes{"POST pods/binding": float64(s3.Pods())}))
		Expect(r.PlacerCPU).To(BeNumerically(">", 0))
		Expect(r.APIServerCPU).To(BeNumerically(">", 0))
		Expect(r.EtcdCPU).To(BeNumerically(">", 0))
		Expect(measure.ChildrenNamed("kube-apiserver", "etcd")).To(BeEmpty(), "the run's control plane is stopped")
	}, SpecTimeout(2*time.Minute))

	It("creates a stream's gangs during the run, deletes each after its hold, and reads every gang's wait and racks", func(ctx context.Context) {
		opts := smokeOptions(GinkgoT().TempDir())
		opts.Scenarios = "TS"
		Expect(opts.Validate()).To(Succeed())
		exe, err := os.Executable()
		Expect(err).NotTo(HaveOccurred())
		ts := opts.ScenarioList()[0]
		Expect(ts.Streamed()).To(BeTrue())

		r := (&run{opts: opts, scenario: ts, placer: placer.Null{Exe: exe, Subcommand: NullBinderCommand, BindWorkers: 16},
			dir: filepath.Join(opts.WorkDir, "TS-null"), log: GinkgoWriter}).do(ctx)

		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Throughput.Gangs).To(Equal(ts.Gangs))
		Expect(r.Stream).NotTo(BeNil())
		Expect(r.Stream.Arrived).To(Equal(ts.Gangs))
		Expect(r.Stream.Bound).To(Equal(ts.Gangs))
		Expect(r.Stream.Waits).To(HaveLen(ts.Gangs))
		// Nothing is bound before it arrives.
		Expect(r.Throughput.FirstBind).To(BeNumerically(">=", ts.FirstArrival))
		Expect(r.Throughput.Makespan).To(BeNumerically(">=", ts.ArrivalAt(ts.Gangs-1)))
		// Every gang's racks, those deleted during the run too.
		Expect(r.Quality.Racks.Gangs).To(Equal(ts.Gangs))
		Expect(r.Quality.Masters).To(BeNumerically("<", ts.Gangs), "some gangs were deleted")
		// The harness created the gangs and deleted some during the run;
		// of the writes to pods and PodGroups only the binds are the null
		// binder's. (The run is longer than the API server's renewal of
		// its own lease, every 10 s, which may fall in it.)
		gangWrites := measure.Writes{}
		for k, v := range r.Writes {
			if resource := strings.Fields(k)[1]; strings.HasPrefix(resource, "pods") || strings.HasPrefix(resource, "podgroups") {
				gangWrites[k] = v
			}
		}
		Expect(gangWrites).To(Equal(measure.Writes{"POST pods/binding": float64(ts.Pods())}))
	}, SpecTimeout(2*time.Minute))

	It("deletes a gang's pods one by one, by name, and its PodGroup, leaving the other gangs", func(ctx context.Context) {
		opts := smokeOptions(GinkgoT().TempDir())
		Expect(opts.Validate()).To(Succeed())
		s3 := opts.ScenarioList()[2]
		dialect := placer.Troupe{}.Dialect()
		c, err := startCluster(opts.ControlPlaneDir, cmdutil.SplitList(opts.CRDs), GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.stop)
		Expect(createNamespace(ctx, c)).To(Succeed())
		gangs := []scenario.Gang{s3.Gang(0, namespace, dialect), s3.Gang(1, namespace, dialect)}
		Expect(len(gangs[0].Pods)).To(BeNumerically(">", 1))
		Expect(writeGangs(ctx, c.client, dialect, gangs)).To(Succeed())
		factory := informers.NewSharedInformerFactoryWithOptions(c.clientset, 0, informers.WithNamespace(namespace))
		pods := factory.Core().V1().Pods().Informer()
		Expect(indexPodsByGang(pods)).To(Succeed())
		factory.Start(ctx.Done())
		DeferCleanup(factory.Shutdown)
		Eventually(func() []string { return pods.GetStore().ListKeys() }).To(HaveLen(len(gangs[0].Pods) + len(gangs[1].Pods)))
		before, err := c.metrics(ctx)
		Expect(err).NotTo(HaveOccurred())

		d := newDeleter(ctx, c, 0, pods.GetIndexer(), dialect.PodGroupType)
		d.delete(gangs[0].Name)

		left := &corev1.PodList{}
		Expect(c.client.List(ctx, left, client.InNamespace(namespace))).To(Succeed())
		Expect(left.Items).To(HaveLen(len(gangs[1].Pods)))
		for _, p := range left.Items {
			Expect(scenario.GangOf(&p)).To(Equal(gangs[1].Name))
		}
		Expect(c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: gangs[0].Name}, dialect.PodGroupType())).To(Satisfy(apierrors.IsNotFound))
		Expect(c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: gangs[1].Name}, dialect.PodGroupType())).To(Succeed())
		// One request per pod: a collection delete is one request too,
		// and has the API server list every pod of the namespace.
		after, err := c.metrics(ctx)
		Expect(err).NotTo(HaveOccurred())
		want := measure.Writes{"DELETE pods": float64(len(gangs[0].Pods)), "DELETE podgroups": 1}
		Expect(measure.WritesFrom(after).Minus(measure.WritesFrom(before))).To(Equal(want))
		Expect(d.writes()).To(Equal(want), "the deleter counts what the API server served")
	}, SpecTimeout(2*time.Minute))

	It("writes the results into the generated section of a document, keeping its prose", func(ctx context.Context) {
		opts := smokeOptions(GinkgoT().TempDir())
		opts.Scenarios = "S1,Q"
		opts.Out = filepath.Join(GinkgoT().TempDir(), "benchmarks.md")
		opts.Command = "make bench-smoke"
		Expect(os.WriteFile(opts.Out, []byte("# Benchmarks\n\nHand-written analysis.\n"), 0o644)).To(Succeed())
		var stdout strings.Builder

		Expect(Run(ctx, opts, &stdout, GinkgoWriter)).To(Succeed())

		raw, err := os.ReadFile(opts.Out)
		Expect(err).NotTo(HaveOccurred())
		doc := string(raw)
		Expect(doc).To(HavePrefix("# Benchmarks\n\nHand-written analysis.\n\n" + report.BeginMarker))
		Expect(doc).To(ContainSubstring("```sh\nmake bench-smoke\n```"))
		Expect(doc).To(ContainSubstring("### S1: many small gangs"))
		Expect(doc).To(ContainSubstring("### Placement quality (Q)"))
		Expect(doc).To(MatchRegexp(`\| S1 \| null-16 \| 1\.00 \| (yes|no) \| [0-9.]+[µm]?s \| POST pods/binding 40 \|`))
		Expect(doc).To(ContainSubstring("Ceiling: null-16, makespan "))
		Expect(doc).To(ContainSubstring("Client rate limit, the same for every placer and the ceiling: none"))
		Expect(doc).To(ContainSubstring("Machine: "))
		Expect(stdout.String()).To(ContainSubstring("### S1: many small gangs"))
	}, SpecTimeout(2*time.Minute))

	It("with --repeat, runs each scenario that many times and shows each figure's median beside the range", func(ctx context.Context) {
		opts := smokeOptions(GinkgoT().TempDir())
		opts.Scenarios = "S1"
		opts.Repeat = 2
		var stdout strings.Builder

		Expect(Run(ctx, opts, &stdout, GinkgoWriter)).To(Succeed())

		Expect(filepath.Join(opts.WorkDir, "S1-null-16-1")).To(BeADirectory())
		Expect(filepath.Join(opts.WorkDir, "S1-null-16-2")).To(BeADirectory())
		Expect(stdout.String()).To(ContainSubstring("ran each scenario 2 times"))
		Expect(stdout.String()).To(MatchRegexp(`\| null-16 \| [0-9.]+m?s( \([0-9.]+m?s–[0-9.]+m?s\))? \| 1\.00 \|.* \| 0 of 2 \|`))
		Expect(strings.Count(stdout.String(), "| null-16 |")).To(Equal(2), "one row in the scenario's table, one in the writes table")
	}, SpecTimeout(2*time.Minute))
})
