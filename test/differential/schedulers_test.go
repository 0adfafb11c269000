package differential

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	schedulerapp "github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const troupeSchedulerName = schedulerapp.DefaultSchedulerName

// Polling for decisions: a case waits for several, one after another, so
// a short poll keeps the suite quick.
const (
	poll            = 20 * time.Millisecond
	decisionTimeout = 30 * time.Second
)

// schedulers are the two schedulers under comparison, running for the
// whole suite against its API server.
type schedulers struct {
	kube      *peers.Process
	kubeLog   string
	troupeLog string
	// syncNS holds the sentinel pods of the sync barrier; syncs counts
	// the barriers, which name their objects after it.
	syncNS string
	syncs  int
}

// startSchedulers starts kube-scheduler as a process (default profile,
// leader election off) and troupe-scheduler in this process, as
// cmd/scheduler runs it, with their logs in the suite's temporary folder.
// Both stop when the enclosing container ends.
func startSchedulers(ctx context.Context) *schedulers {
	dir := GinkgoT().TempDir()
	s := &schedulers{
		kubeLog:   filepath.Join(dir, "kube-scheduler.log"),
		troupeLog: filepath.Join(dir, "troupe-scheduler.log"),
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	Expect(peers.WriteKubeconfig(suite.Env.Environment, kubeconfig)).To(Succeed())
	bin, err := peers.KubeSchedulerBinary()
	Expect(err).NotTo(HaveOccurred())
	s.kube, err = peers.StartKubeScheduler(ctx, peers.KubeSchedulerOptions{Options: peers.Options{
		Binary: bin, Kubeconfig: kubeconfig, LogFile: s.kubeLog, QPS: 200, Burst: 400,
		// At 2 it logs every bind, which a failed case shows.
		Verbosity: 2,
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.kube.Stop)

	// troupe-scheduler logs through controller-runtime's logger, and
	// client-go through klog: both into its log file, not the test output.
	f, err := os.Create(s.troupeLog)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	// Development mode logs V(1): the scheduler's line per cycle.
	logger := zap.New(zap.WriteTo(f), zap.ConsoleEncoder(), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	// A short cycle period, and an idle one, so that a refusal is
	// confirmed by a later cycle within a fraction of a second.
	opts, err := schedulerapp.ParseFlags([]string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--min-cycle-period=10ms", "--max-idle-period=200ms",
		"--kube-api-qps=200", "--kube-api-burst=400",
	}, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		done <- schedulerapp.Run(runCtx, suite.Env.Config, opts)
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done, 30*time.Second).Should(Receive(BeNil()), "troupe-scheduler did not stop cleanly")
	})

	ns, err := testutil.CreateNamespace(ctx, suite.Client, "diff-sync")
	Expect(err).NotTo(HaveOccurred())
	s.syncNS = ns.Name
	return s
}

// logMark is where each scheduler's log stood when a case began.
type logMark struct{ kube, troupe int64 }

func (s *schedulers) mark() logMark {
	return logMark{kube: fileSize(s.kubeLog), troupe: fileSize(s.troupeLog)}
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// logsSince is what the schedulers logged since m, the last lines of each.
func (s *schedulers) logsSince(m logMark) string {
	var b strings.Builder
	for _, l := range []struct {
		name, path string
		from       int64
	}{{"kube-scheduler", s.kubeLog, m.kube}, {"troupe-scheduler", s.troupeLog, m.troupe}} {
		fmt.Fprintf(&b, "%s log (%s), since the case began:\n", l.name, l.path)
		b.WriteString(indent(tail(readFrom(l.path, l.from), 40), "    "))
	}
	return b.String()
}

func readFrom(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)\n", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read: %v)\n", err)
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)\n", err)
	}
	if len(raw) == 0 {
		return "(nothing)\n"
	}
	return string(raw)
}

func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n+1 {
		lines = append([]string{fmt.Sprintf("(... %d lines before)\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}

// sync is a barrier: it returns once both schedulers have seen every
// object created before it. Each scheduler gets a sentinel pod that only
// target can take (and that tolerates everything on it) and must bind it;
// an informer delivers one kind's events in order, so a scheduler that
// has bound the sentinel has seen every node up to target's last write
// and every pod created before the sentinel. Without it, a scheduler that
// saw the test pod before a new node would refuse it for a reason that is
// not a rule. The sentinels are gone again when sync returns.
func (s *schedulers) sync(ctx context.Context, target string, timeout time.Duration) {
	sentinel := func(name, scheduler string) *corev1.Pod {
		b := testutil.MakePod(name, s.syncNS).SchedulerName(scheduler).
			RequiredNodeAffinity(testutil.NodeNameTerm(corev1.NodeSelectorOpIn, target)).
			Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
		if scheduler == troupeSchedulerName {
			b.Group(name)
		}
		return b.Obj()
	}
	// Fresh names each time: a scheduler may still hold the last
	// barrier's objects for a moment.
	s.syncs++
	kubeName, troupeName := fmt.Sprintf("sync-kube-%d", s.syncs), fmt.Sprintf("sync-troupe-%d", s.syncs)
	pg := testutil.MakePodGroup(troupeName, s.syncNS).Obj()
	pods := []*corev1.Pod{sentinel(kubeName, peers.KubeSchedulerName), sentinel(troupeName, troupeSchedulerName)}
	Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	for _, p := range pods {
		Expect(suite.Client.Create(ctx, p)).To(Succeed())
	}
	Eventually(func(g Gomega) {
		for _, p := range pods {
			got := &corev1.Pod{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			g.Expect(got.Spec.NodeName).To(Equal(target), "sentinel %s (schedulerName %s) is not bound to %s", p.Name, p.Spec.SchedulerName, target)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "sync barrier: a scheduler did not bind its sentinel; see the scheduler logs")
	for _, p := range pods {
		deletePod(ctx, p)
	}
	Expect(suite.Client.Delete(ctx, pg)).To(Succeed())
}

// deletePod deletes a pod at once (there is no kubelet to confirm a
// graceful end) and waits until it is gone.
func deletePod(ctx context.Context, p *corev1.Pod) {
	ExpectWithOffset(1, client.IgnoreNotFound(suite.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
	EventuallyWithOffset(1, func() bool {
		err := suite.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}).WithPolling(poll).Should(BeTrue(), "pod %s/%s is still there", p.Namespace, p.Name)
}

// decision is what a scheduler did with a pod.
type decision struct {
	placed  bool
	node    string
	message string      // why it refused: kube-scheduler's condition, or the PodGroup's
	pod     *corev1.Pod // as stored when the decision was seen
	// asked is the pod as the scheduler was asked to place it: as stored
	// at creation. Binding may change it (admission copies the node's
	// topology labels onto a bound pod), so it is what gets judged.
	asked *corev1.Pod
}

// judged is the pod as asked, on the node it was placed on.
func (d decision) judged() *corev1.Pod {
	p := d.asked.DeepCopy()
	p.Spec.NodeName = d.node
	return p
}

func (d decision) String() string {
	if d.placed {
		return "placed on " + d.node
	}
	return "refused"
}

// kubeDecision creates pod for kube-scheduler and waits until it is bound
// or marked PodScheduled=False with reason Unschedulable.
func kubeDecision(ctx context.Context, pod *corev1.Pod) decision {
	pod = pod.DeepCopy()
	pod.Spec.SchedulerName = peers.KubeSchedulerName
	Expect(suite.Client.Create(ctx, pod)).To(Succeed())
	var d decision
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		d = decision{pod: got, asked: pod}
		if got.Spec.NodeName != "" {
			d.placed, d.node = true, got.Spec.NodeName
			return
		}
		c := podCondition(got, corev1.PodScheduled)
		g.Expect(c).NotTo(BeNil(), "kube-scheduler has not tried the pod yet")
		g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(corev1.PodReasonUnschedulable))
		d.message = c.Message
	}).WithTimeout(decisionTimeout).WithPolling(poll).Should(Succeed(), "kube-scheduler made no decision about %s", pod.Name)
	return d
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// troupeDecision creates pods for troupe-scheduler in one PodGroup of
// minMember len(pods) and waits until it binds them all, or the PodGroup
// says Unschedulable after a cycle that saw them (not merely that pods
// are missing: the PodGroup may be seen before its pods). A refusal is
// confirmed by one more cycle, after which nothing may be bound.
func troupeDecision(ctx context.Context, group string, pods ...*corev1.Pod) []decision {
	ns := pods[0].Namespace
	cycles := counter("troupe_scheduler_cycles_total")
	Expect(suite.Client.Create(ctx, testutil.MakePodGroup(group, ns).MinMember(int32(len(pods))).Obj())).To(Succeed())
	var created []*corev1.Pod
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.SchedulerName = troupeSchedulerName
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] = group
		Expect(suite.Client.Create(ctx, p)).To(Succeed())
		created = append(created, p)
	}
	get := func(g Gomega) ([]decision, bool) {
		out := make([]decision, len(created))
		all := true
		for i, p := range created {
			got := &corev1.Pod{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			out[i] = decision{pod: got, asked: p, placed: got.Spec.NodeName != "", node: got.Spec.NodeName}
			all = all && out[i].placed
		}
		return out, all
	}
	var ds []decision
	refusedAt := 0.0
	Eventually(func(g Gomega) {
		var all bool
		ds, all = get(g)
		if all {
			return
		}
		g.Expect(counter("troupe_scheduler_cycles_total")).To(BeNumerically(">", cycles), "no cycle since the pods were created")
		pg := &schedulingv1alpha1.PodGroup{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, pg)).To(Succeed())
		c := findCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
		g.Expect(c).NotTo(BeNil(), "troupe-scheduler has not decided yet")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "troupe-scheduler has not decided yet")
		g.Expect(c.Reason).NotTo(BeElementOf(schedulingv1alpha1.PodGroupReasonNotEnoughPods, schedulingv1alpha1.PodGroupReasonNotEnoughPodsOfTask),
			"troupe-scheduler has not seen every pod of the group yet")
		for i := range ds {
			ds[i].message = c.Reason + ": " + c.Message
		}
		refusedAt = counter("troupe_scheduler_cycles_total")
	}).WithTimeout(decisionTimeout).WithPolling(poll).Should(Succeed(), "troupe-scheduler made no decision about group %s", group)
	if refusedAt > 0 {
		Eventually(func() float64 { return counter("troupe_scheduler_cycles_total") }).
			WithTimeout(decisionTimeout).WithPolling(poll).Should(BeNumerically(">", refusedAt), "no troupe-scheduler cycle after the refusal")
		msg := ds[0].message
		ds, _ = get(Default)
		for i := range ds {
			ds[i].message = msg
		}
	}
	return ds
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// counter reads a counter of troupe-scheduler's (controller-runtime's
// registry, in this process), summed over its labels.
func counter(name string) float64 {
	n, err := testutil.CounterValue(name, nil)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// deleteNodes deletes nodes and waits until they are gone.
func deleteNodes(ctx context.Context, nodes []*corev1.Node) {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, client.IgnoreNotFound(suite.Client.Delete(ctx, n)))
	}
	Expect(errors.Join(errs...)).To(Succeed())
	Eventually(func(g Gomega) {
		for _, n := range nodes {
			err := suite.Client.Get(ctx, client.ObjectKeyFromObject(n), &corev1.Node{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "node %s is still there", n.Name)
		}
	}).WithPolling(poll).Should(Succeed())
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, prefix) + "\n"
}
