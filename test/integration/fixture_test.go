package integration

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// poolKey labels a spec's nodes with its namespace and kind ("cpu" or
// "gpu"); the spec's jobs select them alone.
const poolKey = "troupe.test/pool"

// fixture is one spec's namespace, nodes and PyTorchJobs: a CPU-only
// master and GPU workers, each on its own pool of the spec's nodes.
type fixture struct {
	ctx context.Context
	ns  string
}

// newFixture makes the spec's namespace and plays the kubelet's part in
// pod deletion there. envtest runs no kubelet: a bound pod that is
// deleted stays Terminating until something confirms its end. Confirming
// it lets deleted members go and their controller recreate them.
func newFixture(ctx context.Context, prefix string) *fixture {
	f := &fixture{ctx: ctx, ns: suite.NewNamespace(ctx, prefix)}
	stop := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			var pods corev1.PodList
			if err := suite.Client.List(ctx, &pods, client.InNamespace(f.ns)); err != nil {
				continue
			}
			for i := range pods.Items {
				if p := &pods.Items[i]; p.DeletionTimestamp != nil {
					_ = client.IgnoreNotFound(suite.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))
				}
			}
		}
	}()
	DeferCleanup(func() { close(stop) })
	DeferCleanup(f.printEventsIfFailed)
	return f
}

// printEventsIfFailed writes the namespace's events to the spec's output
// when the spec failed: the scheduler's and operator's account of what
// they did (preemptions, restarts, holds) is what explains a failure that
// a rerun does not repeat. Events after the failure are left out: the
// spec's cleanup (its jobs and pods deleted) makes its own.
func (f *fixture) printEventsIfFailed() {
	report := CurrentSpecReport()
	if !report.Failed() {
		return
	}
	failedAt := report.Failure.TimelineLocation.Time
	var list eventsv1.EventList
	if err := suite.Client.List(f.ctx, &list, client.InNamespace(f.ns)); err != nil {
		GinkgoWriter.Printf("events of %s: %v\n", f.ns, err)
		return
	}
	// Events written through core/v1 have no eventTime; they sort by
	// their creation, to the second.
	at := func(e eventsv1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	slices.SortStableFunc(list.Items, func(a, b eventsv1.Event) int { return at(a).Compare(at(b)) })
	GinkgoWriter.Printf("events of %s:\n", f.ns)
	for _, e := range list.Items {
		if !failedAt.IsZero() && at(e).After(failedAt) {
			break
		}
		GinkgoWriter.Printf("  %s %s %s/%s %s: %s\n", at(e).UTC().Format("15:04:05.000"), e.ReportingController,
			e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
	}
}

// fixtures gives every spec of its container a fixture of its own
// (namespace prefix), with the operator on the troupe backend running
// for the container.
func fixtures(prefix string) *fixture {
	ctx := context.Background()
	BeforeAll(func() {
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
	})
	f := &fixture{}
	BeforeEach(func() { *f = *newFixture(ctx, prefix) })
	return f
}

// node creates a Ready node of this spec's pool ("cpu" or "gpu") with
// more labels, if any; the spec's end deletes it.
func (f *fixture) node(name, kind string, gpus int, labels ...string) *corev1.Node {
	b := testutil.MakeNode(f.ns+"-"+name).Capacity("16", "64Gi").Label(poolKey, f.ns+"-"+kind)
	if gpus > 0 {
		b.GPU(gpus)
	}
	for i := 0; i+1 < len(labels); i += 2 {
		b.Label(labels[i], labels[i+1])
	}
	n := b.Obj()
	ExpectWithOffset(1, testutil.CreateReadyNode(f.ctx, suite.Client, n)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(f.ctx, n))).To(Succeed()) })
	return n
}

// job creates a PyTorchJob of a CPU-only master and workers of gpus GPUs
// each, on this spec's nodes; worker and mutate, if not nil, change the
// workers' replica and the job.
func (f *fixture) job(name string, workers int32, gpus string, worker func(*testutil.ReplicaBuilder), mutate ...func(*kubeflowv1.PyTorchJob)) *kubeflowv1.PyTorchJob {
	w := testutil.MakeReplica(workers, "pytorch").Request(corev1.ResourceCPU, "1").Limit(testutil.GPU, gpus).
		NodeSelector(poolKey, f.ns+"-gpu").TerminationGracePeriod(0)
	if worker != nil {
		worker(w)
	}
	j := testutil.MakePyTorchJob(name, f.ns).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, testutil.MakeReplica(1, "pytorch").
			Request(corev1.ResourceCPU, "1").NodeSelector(poolKey, f.ns+"-cpu").TerminationGracePeriod(0).Obj()).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, w.Obj()).
		Obj()
	for _, m := range mutate {
		m(j)
	}
	ExpectWithOffset(1, suite.Client.Create(f.ctx, j)).To(Succeed())
	DeferCleanup(deleteGangs, f.ctx, f.ns)
	return j
}

// deleteGangs deletes the jobs, pods and PodGroups of namespace ns. Left
// there, they would hold their share of the default queue for the next
// specs, and a pending gang would take the next spec's nodes: envtest
// runs no garbage collector.
func deleteGangs(ctx context.Context, ns string) {
	in := client.InNamespace(ns)
	Expect(suite.Client.DeleteAllOf(ctx, &kubeflowv1.PyTorchJob{}, in)).To(Succeed())
	Expect(suite.Client.DeleteAllOf(ctx, &kubeflowv1.TFJob{}, in)).To(Succeed())
	Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, in, client.GracePeriodSeconds(0))).To(Succeed())
	Expect(suite.Client.DeleteAllOf(ctx, &schedulingv1alpha1.PodGroup{}, in)).To(Succeed())
}

// live returns the job's pods not being deleted.
func (f *fixture) live(g Gomega, name string) []corev1.Pod {
	pods, err := testutil.JobPods(f.ctx, suite.Client, f.ns, name)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return testutil.Live(pods)
}

// bound maps the bound pods' names to their nodes.
func (f *fixture) bound(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

func (f *fixture) podGroup(g Gomega, name string) *schedulingv1alpha1.PodGroup {
	pg := &schedulingv1alpha1.PodGroup{}
	g.ExpectWithOffset(1, suite.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, pg)).To(Succeed())
	return pg
}

// whole waits until the job's members are all bound, the master on the
// CPU pool and the workers on workerNode (any GPU node if "").
func (f *fixture) whole(name string, members int, workerNode string) {
	EventuallyWithOffset(1, func(g Gomega) {
		pods := f.live(g, name)
		g.Expect(pods).To(HaveLen(members))
		got := f.bound(pods)
		g.Expect(got).To(HaveLen(members), "bound: %v", got)
		for _, p := range pods {
			if p.Labels[kubeflowv1.ReplicaTypeLabel] == "master" {
				g.Expect(p.Spec.NodeName).To(Equal(f.ns+"-cpu"), p.Name)
			} else if workerNode != "" {
				g.Expect(p.Spec.NodeName).To(Equal(workerNode), p.Name)
			}
		}
	}, 60*time.Second).Should(Succeed())
}

// nothingBound checks for a while that no member is bound: the gang
// waits whole.
func (f *fixture) nothingBound(name string, d time.Duration) {
	ConsistentlyWithOffset(1, func(g Gomega) {
		g.Expect(f.bound(f.live(g, name))).To(BeEmpty())
	}, d, 100*time.Millisecond).Should(Succeed())
}

func (f *fixture) podGroupEvents(g Gomega, name, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(suite.Client.List(f.ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "PodGroup" && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// reclaimed waits until the scheduler reports the job's partial gang
// reclaimed.
func (f *fixture) reclaimed(name string) {
	EventuallyWithOffset(1, func(g Gomega) {
		c := meta.FindStatusCondition(f.podGroup(g, name).Status.Conditions, schedulingv1alpha1.PodGroupPartial)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonReclaimed))
		g.Expect(c.Message).To(ContainSubstring("could not be completed"))
		g.Expect(f.podGroupEvents(g, name, "Reclaimed")).NotTo(BeEmpty())
	}, 60*time.Second).Should(Succeed())
}
