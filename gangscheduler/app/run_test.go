package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	apitesting "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/testutil"
)

var _ = Describe("troupe-scheduler", Serial, func() {
	var (
		ctx context.Context
		ns  string
		// schedulerConfig impersonates a ServiceAccount bound to the
		// generated ClusterRole.
		schedulerConfig *rest.Config
	)

	BeforeEach(func() {
		ctx = context.Background()
		ns = suite.NewNamespace(ctx, "sched")
		var err error
		schedulerConfig, err = testutil.ImpersonateServiceAccount(ctx, suite.Client, suite.Env.Config,
			filepath.Join(testutil.RepoRoot(), "config", "rbac", "scheduler", "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		// Without a kubelet a bound pod's deletion waits forever; grace 0
		// removes the spec's pods at once, so none is left for the next
		// spec's scheduler to place.
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
			Expect(suite.Client.DeleteAllOf(ctx, &schedulingv1alpha1.PodGroup{}, client.InNamespace(ns))).To(Succeed())
			Eventually(func(g Gomega) {
				var pods corev1.PodList
				g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
				g.Expect(pods.Items).To(BeEmpty())
			}).Should(Succeed())
		})
	})

	// start runs the scheduler as cmd/scheduler does (app.Run with parsed
	// flags), as the ServiceAccount, until the spec ends or the returned
	// stop is called.
	start := func(args []string, tuning ...func(*ctrl.Options)) (stop func()) {
		opts, err := app.ParseFlags(append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...), GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- app.Run(runCtx, schedulerConfig, opts, tuning...) }()
		var once sync.Once
		stop = func() {
			once.Do(func() {
				cancel()
				Eventually(done).Should(Receive(BeNil()), "the scheduler did not stop cleanly")
			})
		}
		DeferCleanup(stop)
		return stop
	}
	// nodes creates Ready nodes for this spec and deletes them after it.
	nodes := func(nodes ...*corev1.Node) {
		for _, n := range nodes {
			Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, n))).To(Succeed())
			})
		}
	}
	// nodeName gives the spec's nodes unique names: nodes are
	// cluster-wide, and a deleted node's name may still be in use by
	// the time the next spec starts.
	nodeName := func(name string) string { return ns + "-" + name }
	create := func(objs ...client.Object) {
		for _, o := range objs {
			ExpectWithOffset(1, suite.Client.Create(ctx, o)).To(Succeed())
		}
	}
	getPod := func(g Gomega, name string) *corev1.Pod {
		pod := &corev1.Pod{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
		return pod
	}
	getPodGroup := func(g Gomega, name string) *schedulingv1alpha1.PodGroup {
		pg := &schedulingv1alpha1.PodGroup{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg)).To(Succeed())
		return pg
	}
	// placement returns pod name -> node name for the pods of the spec.
	placement := func(g Gomega) map[string]string {
		var pods corev1.PodList
		g.ExpectWithOffset(1, suite.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		out := map[string]string{}
		for _, p := range pods.Items {
			out[p.Name] = p.Spec.NodeName
		}
		return out
	}
	// events returns the events of the namespace about an object.
	events := func(g Gomega, kind, name, reason string) []eventsv1.Event {
		var list eventsv1.EventList
		g.ExpectWithOffset(1, suite.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
	// waitCycles waits until n more cycles have completed: what those
	// cycles did not do, the scheduler does not do for this state.
	waitCycles := func(n float64) {
		from := counter("troupe_scheduler_cycles_total", nil)
		EventuallyWithOffset(1, func() float64 { return counter("troupe_scheduler_cycles_total", nil) }).Should(BeNumerically(">=", from+n))
	}
	gangPods := func(group, role string, n int, mutate func(*testutil.GangPodBuilder)) []client.Object {
		var out []client.Object
		for i := range n {
			b := testutil.MakeGangPod(strings.ToLower(role)+"-"+string(rune('0'+i)), ns).Group(group).Role(role)
			if mutate != nil {
				mutate(b)
			}
			out = append(out, b.Obj())
		}
		return out
	}

	It("binds a whole gang, reports it on the PodGroup, its pods and the metrics, and follows its pods to Finished", func() {
		nodes(
			testutil.MakeNode(nodeName("a")).Capacity("4", "16Gi").Obj(),
			testutil.MakeNode(nodeName("b")).Capacity("4", "16Gi").Obj(),
		)
		create(testutil.MakePodGroup("pg", ns).MinMember(3).Obj())
		create(gangPods("pg", "Worker", 3, func(b *testutil.GangPodBuilder) {
			b.Request(corev1.ResourceCPU, "2").Request(corev1.ResourceMemory, "1Gi")
		})...)
		bindsBefore := counter("troupe_scheduler_binds_total", map[string]string{"result": "success"})
		leaseID := "troupe-scheduler-" + ns
		started := float64(time.Now().UnixNano()) / 1e9
		start([]string{"--leader-elect", "--leader-election-namespace=default", "--leader-election-id=" + leaseID})

		var bound map[string]string
		Eventually(func(g Gomega) {
			bound = placement(g)
			g.Expect(bound).To(HaveLen(3))
			for pod, node := range bound {
				g.Expect(node).To(BeElementOf(nodeName("a"), nodeName("b")), pod)
			}
		}).Should(Succeed())
		Expect(countValues(bound)).To(HaveEach(BeNumerically("<=", 2)), "4 CPUs hold two pods of 2 CPUs")

		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
			g.Expect(pg.Status.Admitted).To(Equal(int32(3)))
			g.Expect(pg.Status.Running).To(BeZero(), "no kubelet: bound pods are still Pending")
			s := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupScheduled)
			g.Expect(s).NotTo(BeNil())
			g.Expect(s.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(s.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonGangBound))
			g.Expect(meta.IsStatusConditionFalse(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)).To(BeTrue())
			g.Expect(pg.Status.ScheduleStartTime).NotTo(BeNil())
			g.Expect(pg.Status.ScheduleEndTime).NotTo(BeNil())
			g.Expect(pg.Status.ScheduleEndTime.Before(pg.Status.ScheduleStartTime)).To(BeFalse())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			for pod, node := range bound {
				evs := events(g, "Pod", pod, "Scheduled")
				g.Expect(evs).To(HaveLen(1), pod)
				g.Expect(evs[0].Note).To(Equal("Successfully assigned " + ns + "/" + pod + " to " + node))
				g.Expect(evs[0].ReportingController).To(Equal("troupe-scheduler"))
			}
			g.Expect(events(g, "PodGroup", "pg", "Scheduled")).To(HaveLen(1))
		}).Should(Succeed())
		Expect(counter("troupe_scheduler_binds_total", map[string]string{"result": "success"})).To(BeNumerically(">=", bindsBefore+3))
		Expect(gauge("troupe_scheduler_caches_synced_timestamp_seconds", nil)).To(BeNumerically(">=", started),
			"this replica's caches synced after it started (an earlier test's value is older)")

		lease := &coordinationv1.Lease{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: leaseID}, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())

		By("the kubelet's part: the pods run, then succeed")
		for pod := range bound {
			p := getPod(Default, pod)
			Expect(testutil.SetPodPhase(ctx, suite.Client, p, corev1.PodRunning)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			g.Expect(pg.Status.Running).To(Equal(int32(3)))
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		}).Should(Succeed())
		for pod := range bound {
			p := getPod(Default, pod)
			Expect(testutil.SetPodPhase(ctx, suite.Client, p, corev1.PodSucceeded)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupFinished))
			g.Expect(pg.Status.Succeeded).To(Equal(int32(3)))
			g.Expect(pg.Status.Running).To(BeZero())
		}).Should(Succeed())
	})

	It("with --pod-scheduled-events=false, reports a bound gang on its PodGroup alone", func() {
		nodes(testutil.MakeNode(nodeName("a")).Capacity("4", "16Gi").Obj())
		create(testutil.MakePodGroup("pg", ns).MinMember(2).Obj())
		create(gangPods("pg", "Worker", 2, func(b *testutil.GangPodBuilder) { b.Request(corev1.ResourceCPU, "1") })...)
		start([]string{"--pod-scheduled-events=false"})

		Eventually(func(g Gomega) {
			g.Expect(placement(g)).To(HaveEach(Equal(nodeName("a"))))
			g.Expect(events(g, "PodGroup", "pg", "Scheduled")).To(HaveLen(1))
		}).Should(Succeed())
		// The PodGroup's event is recorded after the binds; a pod's would
		// have come before it.
		Consistently(func(g Gomega) {
			for pod := range placement(g) {
				g.Expect(events(g, "Pod", pod, "Scheduled")).To(BeEmpty(), pod)
			}
		}, "1s").Should(Succeed())
	})

	It("binds none of a gang that does not fit, says which role lacks what, and binds it once a node is added", func() {
		nodes(
			testutil.MakeNode(nodeName("cpu")).Capacity("16", "64Gi").Obj(),
			testutil.MakeNode(nodeName("gpu-a")).Capacity("16", "64Gi").GPU(4).Obj(),
		)
		create(testutil.MakePodGroup("pg", ns).MinMember(3).Obj())
		create(gangPods("pg", "Worker", 3, func(b *testutil.GangPodBuilder) { b.GPU(2) })...)
		start(nil)

		var message string
		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonNotEnoughResources))
			message = c.Message
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupPending))
			g.Expect(pg.Status.Admitted).To(BeZero())
			g.Expect(pg.Status.ScheduleStartTime).NotTo(BeNil())
			g.Expect(pg.Status.ScheduleEndTime).To(BeNil())
		}).Should(Succeed())
		Expect(message).To(Equal("Worker: 2 of 3 pending pods fit; then 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."))

		waitCycles(3)
		Expect(placement(Default)).To(HaveEach(BeEmpty()), "a gang that cannot be placed whole binds none of its pods")
		Eventually(func(g Gomega) {
			for i := range 3 {
				evs := events(g, "Pod", "worker-"+string(rune('0'+i)), "FailedScheduling")
				g.Expect(evs).NotTo(BeEmpty())
				g.Expect(evs[0].Type).To(Equal(corev1.EventTypeWarning))
				g.Expect(evs[0].Note).To(ContainSubstring("Worker: 2 of 3 pending pods fit"))
				g.Expect(evs[0].Note).To(ContainSubstring("Insufficient nvidia.com/gpu"))
			}
			g.Expect(events(g, "PodGroup", "pg", "Unschedulable")).NotTo(BeEmpty())
		}).Should(Succeed())

		By("a second GPU node makes room for the whole gang")
		nodes(testutil.MakeNode(nodeName("gpu-b")).Capacity("16", "64Gi").GPU(4).Obj())
		Eventually(func(g Gomega) {
			g.Expect(placement(g)).To(HaveEach(BeElementOf(nodeName("gpu-a"), nodeName("gpu-b"))))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
			g.Expect(meta.IsStatusConditionFalse(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)).To(BeTrue())
		}).Should(Succeed())
	})

	It("keeps a waiting gang's reason and message for --unschedulable-refresh-period, and says at once when it binds", func() {
		nodes(testutil.MakeNode(nodeName("gpu-a")).Capacity("16", "64Gi").GPU(4).Obj())
		create(testutil.MakePodGroup("pg", ns).MinMember(3).Obj())
		create(gangPods("pg", "Worker", 3, func(b *testutil.GangPodBuilder) { b.GPU(2) })...)
		start([]string{"--unschedulable-refresh-period=1h"})

		const first = "Worker: 2 of 3 pending pods fit; then 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
		unschedulable := func(g Gomega) *metav1.Condition {
			c := meta.FindStatusCondition(getPodGroup(g, "pg").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.ExpectWithOffset(1, c).NotTo(BeNil())
			return c
		}
		Eventually(func(g Gomega) {
			g.Expect(unschedulable(g).Message).To(Equal(first))
			g.Expect(events(g, "PodGroup", "pg", "Unschedulable")).To(HaveLen(1))
		}).Should(Succeed())

		By("a CPU node changes the fit summary, not the gang's lot: the condition and its event stay as they were")
		nodes(testutil.MakeNode(nodeName("cpu")).Capacity("16", "64Gi").Obj())
		waitCycles(5)
		c := unschedulable(Default)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Message).To(Equal(first), "a new message within the refresh period is not written")
		Expect(events(Default, "PodGroup", "pg", "Unschedulable")).To(HaveLen(1))

		By("a second GPU node binds the gang: Unschedulable turns False at once")
		nodes(testutil.MakeNode(nodeName("gpu-b")).Capacity("16", "64Gi").GPU(4).Obj())
		Eventually(func(g Gomega) {
			c := unschedulable(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonGangBound))
		}).Should(Succeed())
	})

	It("holds the nodes a waiting gang lacks from a younger gang, which binds nothing there, until the waiting gang binds", func() {
		gpuA, gpuB := nodeName("gpu-a"), nodeName("gpu-b")
		nodes(testutil.MakeNode(gpuA).Capacity("16", "64Gi").GPU(4).Obj(), testutil.MakeNode(gpuB).Capacity("16", "64Gi").GPU(4).Obj())
		create(testutil.MakeGangPod("theirs", ns).SchedulerName("other-scheduler").NodeName(gpuA).GPU(2).Obj())
		create(testutil.MakePodGroup("big", ns).MinMember(2).Obj())
		create(gangPods("big", "Worker", 2, func(b *testutil.GangPodBuilder) { b.GPU(4) })...)
		config := filepath.Join(GinkgoT().TempDir(), "scheduler.yaml")
		// enqueue admits the waiting gang although it does not fit the
		// nodes as they are: that it may hold is reason enough.
		Expect(os.WriteFile(config, []byte(`actions: [enqueue, allocate, backfill]
plugins:
- name: priority
- name: gang
- name: predicates
- name: nodeorder
- name: reservation
  arguments: {after: 0s}
`), 0o600)).To(Succeed())
		start([]string{"--config=" + config})

		unschedulable := func(g Gomega, group string) string {
			c := meta.FindStatusCondition(getPodGroup(g, group).Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.ExpectWithOffset(1, c).NotTo(BeNil())
			g.ExpectWithOffset(1, c.Status).To(Equal(metav1.ConditionTrue))
			return c.Message
		}
		Eventually(func(g Gomega) {
			msg := unschedulable(g, "big")
			g.Expect(msg).To(ContainSubstring("it holds 2 nodes (%s, %s) from younger or lower-priority gangs until it fits", gpuA, gpuB))
			g.Expect(msg).To(HavePrefix("Worker: 1 of 2 pending pods fit"), "the diagnosis counts what the gang holds as room for it")
			g.Expect(gauge("troupe_scheduler_held_nodes", nil)).To(Equal(2.0))
			g.Expect(gauge("troupe_scheduler_holding_gangs", nil)).To(Equal(1.0))
		}).Should(Succeed())

		By("a younger gang that fits either node binds on neither")
		create(testutil.MakePodGroup("small", ns).MinMember(1).Obj())
		create(testutil.MakeGangPod("small-0", ns).Group("small").Role("Worker").GPU(2).Obj())
		Eventually(func(g Gomega) {
			g.Expect(unschedulable(g, "small")).To(ContainSubstring("2 node(s) held for a gang that waits longer"))
		}).Should(Succeed())
		waitCycles(3)
		Expect(placement(Default)).To(HaveKeyWithValue("small-0", ""))

		By("the other scheduler's pod ends: the waiting gang binds on both nodes")
		Expect(suite.Client.Delete(ctx, getPod(Default, "theirs"), client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect([]string{got["worker-0"], got["worker-1"]}).To(ConsistOf(gpuA, gpuB))
		}).Should(Succeed())
		Expect(placement(Default)).To(HaveKeyWithValue("small-0", ""), "the cluster is full: the younger gang waits")
		By("the younger gang, the one that waits now, holds the one node it lacks")
		Eventually(func(g Gomega) {
			g.Expect(unschedulable(g, "small")).To(ContainSubstring("it holds 1 node ("))
			g.Expect(gauge("troupe_scheduler_held_nodes", nil)).To(Equal(1.0))
		}).Should(Succeed())
	})

	It("marks a gang not placed within scheduleTimeoutSeconds, and keeps trying", func() {
		nodes(testutil.MakeNode(nodeName("a")).Capacity("2", "8Gi").Obj())
		create(testutil.MakePodGroup("pg", ns).MinMember(2).ScheduleTimeout(1).Obj())
		create(gangPods("pg", "Worker", 2, func(b *testutil.GangPodBuilder) { b.Request(corev1.ResourceCPU, "2") })...)
		start(nil)

		Eventually(func(g Gomega) {
			pg := getPodGroup(g, "pg")
			c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(schedulingv1alpha1.PodGroupReasonScheduleTimeout))
			g.Expect(c.Message).To(HavePrefix("not scheduled within scheduleTimeoutSeconds (1s); still trying. NotEnoughResources: Worker: 1 of 2 pending pods fit"))
			g.Expect(events(g, "PodGroup", "pg", schedulingv1alpha1.PodGroupReasonScheduleTimeout)).To(HaveLen(1))
		}).Should(Succeed())

		By("room appears: the gang is still tried, and bound")
		nodes(testutil.MakeNode(nodeName("b")).Capacity("2", "8Gi").Obj())
		Eventually(func(g Gomega) {
			g.Expect(placement(g)).To(HaveEach(Not(BeEmpty())))
			g.Expect(getPodGroup(g, "pg").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		}).Should(Succeed())
	})

	It("places a CPU-only master and GPU workers on a mixed cluster, and reports the queue", func() {
		nodes(
			testutil.MakeNode(nodeName("cpu")).Capacity("8", "32Gi").Label("pool", "cpu").Obj(),
			testutil.MakeNode(nodeName("gpu-a")).Capacity("32", "128Gi").GPU(8).Label("pool", "gpu").Obj(),
			testutil.MakeNode(nodeName("gpu-b")).Capacity("32", "128Gi").GPU(8).Label("pool", "gpu").Obj(),
		)
		queue := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		create(queue)
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, queue)).To(Succeed()) })
		create(testutil.MakePodGroup("pg", ns).MinMember(5).MinTaskMember("Master", 1).MinTaskMember("Worker", 4).Queue(ns).Obj())
		create(gangPods("pg", "Master", 1, func(b *testutil.GangPodBuilder) {
			b.Request(corev1.ResourceCPU, "1").NodeSelector("pool", "cpu")
		})...)
		create(gangPods("pg", "Worker", 4, func(b *testutil.GangPodBuilder) {
			b.Request(corev1.ResourceCPU, "4").GPU(2)
		})...)
		start(nil)

		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect(got).To(HaveKeyWithValue("master-0", nodeName("cpu")))
			for i := range 4 {
				g.Expect(got).To(HaveKeyWithValue("worker-"+string(rune('0'+i)), BeElementOf(nodeName("gpu-a"), nodeName("gpu-b"))))
			}
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getPodGroup(g, "pg").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
			q := &schedulingv1alpha1.Queue{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Name: ns}, q)).To(Succeed())
			g.Expect(q.Status.State).To(Equal(schedulingv1alpha1.QueueStateOpen))
			g.Expect(q.Status.Running).To(Equal(int32(1)))
			g.Expect(q.Status.Pending + q.Status.Inqueue).To(BeZero())
			g.Expect(q.Status.Allocated).To(HaveKeyWithValue(testutil.GPU, resourceEqual("8")))
			g.Expect(q.Status.Allocated).To(HaveKeyWithValue(corev1.ResourceCPU, resourceEqual("17")))
		}).Should(Succeed())
	})

	// envtest runs no PV controller: the test binds the claim as it would,
	// the volume's claimRef and the claim's volumeName, with the
	// annotation kube-scheduler takes for a completed binding.
	It("places a member whose claim is bound to a local volume on the volume's node", func() {
		nodes(
			testutil.MakeNode(nodeName("a")).Capacity("16", "64Gi").GPU(4).Obj(),
			testutil.MakeNode(nodeName("b")).Capacity("16", "64Gi").GPU(4).Obj(),
		)
		pv := apitesting.MakePV(nodeName("disk")).Local(nodeName("b"), "/mnt/disk0").ClaimRef(ns, "data").Obj()
		create(pv, apitesting.MakePVC(ns, "data").BoundTo(pv.Name).Obj())
		DeferCleanup(func() {
			Expect(suite.Client.Delete(ctx, pv)).To(Succeed())
			// Without the PV controller nothing lifts the pv-protection finalizer.
			Expect(client.IgnoreNotFound(suite.Client.Patch(ctx, pv, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
		})
		create(testutil.MakePodGroup("pg", ns).MinMember(2).Obj())
		// Without the volume both would go to node a: GPU pods are packed,
		// and ties go to the first name. With it, worker-0 goes to b, and
		// worker-1 is packed beside it.
		create(
			testutil.MakeGangPod("worker-0", ns).Group("pg").Role("Worker").GPU(1).Claim("data", "data").Obj(),
			testutil.MakeGangPod("worker-1", ns).Group("pg").Role("Worker").GPU(1).Obj(),
		)
		start(nil)

		Eventually(func(g Gomega) {
			g.Expect(placement(g)).To(Equal(map[string]string{"worker-0": nodeName("b"), "worker-1": nodeName("b")}))
		}).Should(Succeed())
	})

	It("orders gangs by the value of their PriorityClass", func() {
		high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 1000}
		create(high)
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, high)).To(Succeed()) })
		nodes(testutil.MakeNode(nodeName("a")).Capacity("4", "16Gi").Obj())
		// Both gangs exist before the scheduler starts, so that its first
		// cycle weighs them against each other; the older one loses.
		create(testutil.MakePodGroup("low", ns).MinMember(2).Obj())
		create(testutil.MakeGangPod("low-0", ns).Group("low").Request(corev1.ResourceCPU, "2").Obj(),
			testutil.MakeGangPod("low-1", ns).Group("low").Request(corev1.ResourceCPU, "2").Obj())
		create(testutil.MakePodGroup("high", ns).MinMember(2).PriorityClass(high.Name).Obj())
		create(testutil.MakeGangPod("high-0", ns).Group("high").Request(corev1.ResourceCPU, "2").Obj(),
			testutil.MakeGangPod("high-1", ns).Group("high").Request(corev1.ResourceCPU, "2").Obj())
		start(nil)

		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect(got).To(HaveKeyWithValue("high-0", nodeName("a")))
			g.Expect(got).To(HaveKeyWithValue("high-1", nodeName("a")))
			g.Expect(meta.IsStatusConditionTrue(getPodGroup(g, "low").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)).To(BeTrue())
		}).Should(Succeed())
		Expect(placement(Default)).To(And(HaveKeyWithValue("low-0", ""), HaveKeyWithValue("low-1", "")))
	})

	It("preempts a whole lower-priority gang for a starving higher-priority one, which binds once the victims are gone", func() {
		low := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-low"}, Value: 10}
		high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 1000}
		create(low, high)
		DeferCleanup(func() {
			Expect(suite.Client.Delete(ctx, low)).To(Succeed())
			Expect(suite.Client.Delete(ctx, high)).To(Succeed())
		})
		gpuNodes := []string{nodeName("gpu-a"), nodeName("gpu-b")}
		nodes(
			testutil.MakeNode(gpuNodes[0]).Capacity("16", "64Gi").GPU(4).Obj(),
			testutil.MakeNode(gpuNodes[1]).Capacity("16", "64Gi").GPU(4).Obj(),
		)
		gang := func(name, class string) {
			// minResources as the operator writes it: 2 pods of 1 CPU and 4 GPUs.
			pg := testutil.MakePodGroup(name, ns).MinMember(2).PriorityClass(class).Obj()
			pg.Spec.MinResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), testutil.GPU: resource.MustParse("8")}
			create(pg)
			for i := range 2 {
				create(testutil.MakeGangPod(name+"-"+string(rune('0'+i)), ns).Group(name).Request(corev1.ResourceCPU, "1").GPU(4).Obj())
			}
		}
		config := filepath.Join(GinkgoT().TempDir(), "scheduler.yaml")
		Expect(os.WriteFile(config, []byte("actions: [enqueue, preempt, allocate, backfill]\n"), 0o600)).To(Succeed())
		preemptionsBefore := counter("troupe_scheduler_preemptions_total", nil)

		By("a low-priority gang fills the GPU nodes and runs")
		gang("low", low.Name)
		start([]string{"--config=" + config})
		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect(got).To(HaveKeyWithValue("low-0", BeElementOf(gpuNodes)))
			g.Expect(got).To(HaveKeyWithValue("low-1", BeElementOf(gpuNodes)))
		}).Should(Succeed())
		for _, name := range []string{"low-0", "low-1"} {
			Expect(testutil.SetPodPhase(ctx, suite.Client, getPod(Default, name), corev1.PodRunning)).To(Succeed())
		}

		By("a high-priority gang arrives: the whole low gang is deleted")
		gang("high", high.Name)
		Eventually(func(g Gomega) {
			for _, name := range []string{"low-0", "low-1"} {
				g.Expect(getPod(g, name).DeletionTimestamp).NotTo(BeNil(), name)
				evs := events(g, "Pod", name, "Preempted")
				g.Expect(evs).NotTo(BeEmpty(), name)
				g.Expect(evs[0].Type).To(Equal(corev1.EventTypeWarning))
				g.Expect(evs[0].Note).To(Equal("Preempted by gang " + ns + "/high"))
			}
			evs := events(g, "PodGroup", "low", "Preempted")
			g.Expect(evs).NotTo(BeEmpty())
			g.Expect(evs[0].Note).To(Equal("Preempted by gang " + ns + "/high: 2 of its pods deleted"))
		}).Should(Succeed())

		// No kubelet: the deleted pods wait for their grace period, holding
		// their GPUs. The preemptor must not bind onto them meanwhile, and
		// the same gang is not preempted again (events of one object are
		// merged into a series, so the metric counts that, not the events).
		waitCycles(3)
		got := placement(Default)
		Expect(got).To(And(HaveKeyWithValue("high-0", ""), HaveKeyWithValue("high-1", "")), "bound while the victims still hold the GPUs")
		Expect(counter("troupe_scheduler_preemptions_total", nil)).To(Equal(preemptionsBefore+1), "one victim gang, preempted once")

		By("the kubelet's part: the victims terminate, and their job's controller recreates them at once; the high gang binds whole")
		for _, name := range []string{"low-0", "low-1"} {
			Expect(suite.Client.Delete(ctx, getPod(Default, name), client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect(got).NotTo(HaveKey("low-0"))
			g.Expect(got).NotTo(HaveKey("low-1"))
		}).Should(Succeed())
		for i := range 2 {
			create(testutil.MakeGangPod("low-"+string(rune('0'+i)), ns).Group("low").Request(corev1.ResourceCPU, "1").GPU(4).Obj())
		}
		Eventually(func(g Gomega) {
			got := placement(g)
			// The preempted gang gave its admission back: it does not take
			// the freed GPUs (or its queue's share) from the preemptor.
			g.Expect(got).To(And(HaveKeyWithValue("low-0", ""), HaveKeyWithValue("low-1", "")))
			g.Expect(getPodGroup(g, "low").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupPending))
			g.Expect(got).To(HaveKeyWithValue("high-0", BeElementOf(gpuNodes)))
			g.Expect(got).To(HaveKeyWithValue("high-1", BeElementOf(gpuNodes)))
			g.Expect(got["high-0"]).NotTo(Equal(got["high-1"]), "4 GPUs per node hold one pod of 4")
			g.Expect(getPodGroup(g, "high").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		}).Should(Succeed())
	})

	Context("while a preemptor waits for room", func() {
		var high *schedulingv1.PriorityClass
		var gpuNode, config string
		member := func(name, group string, gpus int) client.Object {
			return testutil.MakeGangPod(name, ns).Group(group).Request(corev1.ResourceCPU, "1").GPU(gpus).Obj()
		}
		// admittedBeforeItsPod creates a gang of one pod asking gpus GPUs,
		// its PodGroup first: with no pods and no minResources, it is
		// admitted on nothing (as a controller that waits for Inqueue
		// before creating its pods would have it), then its pod comes.
		// elasticRuns starts the scheduler with an elastic gang of n
		// members of 1 GPU, minMember 2, and waits until all run on the
		// GPU node.
		elasticRuns := func(n int) {
			By(fmt.Sprintf("an elastic gang of %d, minMember 2, takes %d of the node's 4 GPUs", n, n))
			create(testutil.MakePodGroup("elastic", ns).MinMember(2).Obj())
			var names []string
			for i := range n {
				name := fmt.Sprintf("elastic-%d", i)
				names = append(names, name)
				create(member(name, "elastic", 1))
			}
			start([]string{"--config=" + config})
			Eventually(func(g Gomega) {
				for _, p := range names {
					g.Expect(placement(g)).To(HaveKeyWithValue(p, gpuNode))
				}
			}).Should(Succeed())
		}
		admittedBeforeItsPod := func(group string, gpus int) {
			create(testutil.MakePodGroup(group, ns).MinMember(1).Obj())
			Eventually(func(g Gomega) {
				g.Expect(getPodGroup(g, group).Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))
			}).Should(Succeed())
			create(member(group+"-0", group, gpus))
		}
		BeforeEach(func() {
			high = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 1000}
			create(high)
			DeferCleanup(func() { Expect(suite.Client.Delete(ctx, high)).To(Succeed()) })
			gpuNode = nodeName("gpu")
			nodes(testutil.MakeNode(gpuNode).Capacity("16", "64Gi").GPU(4).Obj())
			config = filepath.Join(GinkgoT().TempDir(), "scheduler.yaml")
			// The reservation plugin lets a gang that has waited hold whole
			// nodes, which would keep the room too once high has waited 5 s;
			// it waits an hour here, so that what keeps it is preempt's own
			// reservation, from the first cycle.
			Expect(os.WriteFile(config, []byte(`actions: [enqueue, preempt, allocate, backfill]
plugins:
- name: priority
- name: gang
- name: predicates
- name: interpodaffinity
- name: nodeorder
- name: proportion
- name: reservation
  arguments: {after: 1h}
`), 0o600)).To(Succeed())
		})

		It("keeps a preemptor's room while a victim still terminates: a lower-priority gang does not take what the victim gone left", func() {
			preemptionsBefore := counter("troupe_scheduler_preemptions_total", nil)

			elasticRuns(4)

			By("a gang of 2 of higher priority: the 2 members above the minimum are preempted")
			// Pods first: a PodGroup seen without pods and without
			// minResources would be admitted on them, and an admitted high
			// would keep the room by the queue's admission budget instead.
			create(member("high-0", "high", 1), member("high-1", "high", 1))
			create(testutil.MakePodGroup("high", ns).MinMember(2).PriorityClass(high.Name).Obj())
			Eventually(func(g Gomega) {
				g.Expect(getPod(g, "elastic-2").DeletionTimestamp).NotTo(BeNil())
				g.Expect(getPod(g, "elastic-3").DeletionTimestamp).NotTo(BeNil())
			}).Should(Succeed())
			By("high's members are nominated to the node, as kube-scheduler nominates a preemptor")
			Eventually(func(g Gomega) {
				for _, name := range []string{"high-0", "high-1"} {
					g.Expect(getPod(g, name).Status.NominatedNodeName).To(Equal(gpuNode), name)
				}
			}).Should(Succeed())

			By("one victim is gone, the other still terminates; a gang of 1 GPU and no priority arrives")
			Expect(suite.Client.Delete(ctx, getPod(Default, "elastic-2"), client.GracePeriodSeconds(0))).To(Succeed())
			Eventually(func(g Gomega) { g.Expect(placement(g)).NotTo(HaveKey("elastic-2")) }).Should(Succeed())
			admittedBeforeItsPod("other", 1)
			// Without the reservation, the GPU elastic-2 left is idle and
			// other takes it; high then finds one GPU once elastic-3 is gone,
			// and preempts again.
			waitCycles(3)
			Expect(placement(Default)).To(And(HaveKeyWithValue("other-0", ""), HaveKeyWithValue("high-0", ""), HaveKeyWithValue("high-1", "")),
				"the room freed for high went to another gang, or high bound before its victims were gone")
			// Nor does other keep its admission: an admitted other would count
			// against the queue's budget and keep high from being admitted
			// once elastic-3 is gone, and then take the room.
			Eventually(func(g Gomega) {
				pg := getPodGroup(g, "other")
				g.Expect(pg.Status.Phase).To(Equal(schedulingv1alpha1.PodGroupPending))
				c := meta.FindStatusCondition(pg.Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Message).To(ContainSubstring("the room it would take is kept for " + ns + "/high"))
			}).Should(Succeed())

			By("the last victim goes: high binds whole, and nothing more was preempted")
			Expect(suite.Client.Delete(ctx, getPod(Default, "elastic-3"), client.GracePeriodSeconds(0))).To(Succeed())
			Eventually(func(g Gomega) {
				got := placement(g)
				g.Expect(got).To(And(HaveKeyWithValue("high-0", gpuNode), HaveKeyWithValue("high-1", gpuNode)))
			}).Should(Succeed())
			// The API server clears a bound pod's nomination
			// (ClearingNominatedNodeNameAfterBinding, on since 1.35).
			Expect(getPod(Default, "high-0").Status.NominatedNodeName).To(BeEmpty())
			waitCycles(2)
			got := placement(Default)
			Expect(got).To(And(HaveKeyWithValue("elastic-0", gpuNode), HaveKeyWithValue("elastic-1", gpuNode), HaveKeyWithValue("other-0", "")))
			Expect(counter("troupe_scheduler_preemptions_total", nil)).To(Equal(preemptionsBefore+1), "one victim gang, preempted once")
		})

		It("keeps a pod the preemptor's anti-affinity selects off its node while a victim still terminates", func() {
			preemptionsBefore := counter("troupe_scheduler_preemptions_total", nil)

			elasticRuns(4)

			By("a gang of 2 GPUs of higher priority that keeps app=web pods off its node: 2 members are preempted")
			noWeb := testutil.PodTerm(corev1.LabelHostname, map[string]string{"app": "web"}).Obj()
			for _, name := range []string{"high-0", "high-1"} {
				create(testutil.MakeGangPod(name, ns).Group("high").Request(corev1.ResourceCPU, "1").GPU(1).PodAntiAffinity(noWeb).Obj())
			}
			create(testutil.MakePodGroup("high", ns).MinMember(2).PriorityClass(high.Name).Obj())
			Eventually(func(g Gomega) {
				g.Expect(getPod(g, "elastic-2").DeletionTimestamp).NotTo(BeNil())
				g.Expect(getPod(g, "elastic-3").DeletionTimestamp).NotTo(BeNil())
			}).Should(Succeed())

			By("while the victims terminate, an app=web pod that needs no GPU arrives: the node's CPUs would hold it")
			create(testutil.MakeGangPod("web-0", ns).Group("web").Request(corev1.ResourceCPU, "1").Label("app", "web").Obj())
			create(testutil.MakePodGroup("web", ns).MinMember(1).Obj())
			// Without the members counted on the node, web binds there;
			// high then does not fit beside it once its victims are gone,
			// and preempts web.
			waitCycles(3)
			Expect(placement(Default)).To(HaveKeyWithValue("web-0", ""), "an app=web pod landed where high's room is kept")
			Eventually(func(g Gomega) {
				c := meta.FindStatusCondition(getPodGroup(g, "web").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Message).To(ContainSubstring("the room it would take is kept for " + ns + "/high"))
			}).Should(Succeed())

			By("the victims go: high binds whole, web still waits, and nothing more was preempted")
			for _, name := range []string{"elastic-2", "elastic-3"} {
				Expect(suite.Client.Delete(ctx, getPod(Default, name), client.GracePeriodSeconds(0))).To(Succeed())
			}
			Eventually(func(g Gomega) {
				g.Expect(placement(g)).To(And(HaveKeyWithValue("high-0", gpuNode), HaveKeyWithValue("high-1", gpuNode)))
			}).Should(Succeed())
			waitCycles(2)
			Expect(placement(Default)).To(HaveKeyWithValue("web-0", ""))
			Expect(getPod(Default, "web-0").DeletionTimestamp).To(BeNil())
			Expect(counter("troupe_scheduler_preemptions_total", nil)).To(Equal(preemptionsBefore+1), "one victim gang, preempted once")
		})

		It("admits a preemptor its queue's budget keeps out once its victim is gone: a lower-priority gang admitted earlier and not placed gives the budget back", func() {
			preemptionsBefore := counter("troupe_scheduler_preemptions_total", nil)

			elasticRuns(3)

			By("a gang of 2 GPUs of higher priority: the member above the minimum is preempted")
			create(member("high-0", "high", 1), member("high-1", "high", 1))
			create(testutil.MakePodGroup("high", ns).MinMember(2).PriorityClass(high.Name).Obj())
			Eventually(func(g Gomega) { g.Expect(getPod(g, "elastic-2").DeletionTimestamp).NotTo(BeNil()) }).Should(Succeed())

			By("a gang admitted before its pods exist asks 2 GPUs: it does not fit while the victim terminates, and keeps its admission")
			admittedBeforeItsPod("other", 2)
			waitCycles(3)
			Expect(getPodGroup(Default, "other").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))

			// Now high fits, but other's admission holds the queue's
			// budget (4 GPUs: elastic's 2, other's 2 and high's 2 are too
			// many), so enqueue does not admit high. Unless other, of lower
			// priority and not placed, gives its admission back to high,
			// other takes the 2 GPUs, and high preempts again.
			By("the victim goes: other gives its admission back, and high is admitted and binds")
			Expect(suite.Client.Delete(ctx, getPod(Default, "elastic-2"), client.GracePeriodSeconds(0))).To(Succeed())
			Eventually(func(g Gomega) {
				got := placement(g)
				g.Expect(got).To(And(HaveKeyWithValue("high-0", gpuNode), HaveKeyWithValue("high-1", gpuNode)))
				g.Expect(getPodGroup(g, "high").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
			}).Should(Succeed())
			waitCycles(2)
			Expect(placement(Default)).To(HaveKeyWithValue("other-0", ""))
			Expect(getPodGroup(Default, "other").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupPending))
			for _, name := range []string{"elastic-0", "elastic-1"} {
				Expect(getPod(Default, name).DeletionTimestamp).To(BeNil(), name)
			}
			Expect(counter("troupe_scheduler_preemptions_total", nil)).To(Equal(preemptionsBefore+1), "one victim gang, preempted once")
		})
	})

	It("leaves other schedulers' pods alone but counts them, terminating ones too, against their nodes", func() {
		node := nodeName("a")
		nodes(testutil.MakeNode(node).Capacity("4", "16Gi").Obj())
		create(
			// Placed by someone else: 3 of the node's 4 CPUs.
			testutil.MakeGangPod("theirs", ns).SchedulerName("other-scheduler").NodeName(node).Request(corev1.ResourceCPU, "3").Obj(),
			// Another scheduler's pod in our gang: its scheduler places it.
			testutil.MakeGangPod("theirs-pending", ns).SchedulerName("other-scheduler").Group("pg").Obj(),
		)
		create(testutil.MakePodGroup("pg", ns).MinMember(2).Obj())
		create(gangPods("pg", "Worker", 2, func(b *testutil.GangPodBuilder) { b.Request(corev1.ResourceCPU, "1") })...)
		start(nil)

		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getPodGroup(g, "pg").Status.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("Insufficient cpu"))
		}).Should(Succeed())
		Expect(placement(Default)).To(And(HaveKeyWithValue("worker-0", ""), HaveKeyWithValue("worker-1", "")))

		By("a terminating pod still holds its node")
		theirs := getPod(Default, "theirs")
		Expect(suite.Client.Delete(ctx, theirs)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getPod(g, "theirs").DeletionTimestamp).NotTo(BeNil()) }).Should(Succeed())
		// A later gang that needs nothing but a pod slot proves that a
		// cycle has seen the deletion (one watch delivers pod events in
		// order); the earlier gang would have been placed in that cycle
		// or before had the terminating pod's CPUs been counted free.
		create(testutil.MakePodGroup("marker", ns).Obj(), testutil.MakeGangPod("marker", ns).Group("marker").Obj())
		Eventually(func(g Gomega) { g.Expect(getPod(g, "marker").Spec.NodeName).To(Equal(node)) }).Should(Succeed())
		Expect(placement(Default)).To(And(HaveKeyWithValue("worker-0", ""), HaveKeyWithValue("worker-1", "")))

		By("once it is gone, the gang fits")
		Expect(suite.Client.Delete(ctx, theirs, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			got := placement(g)
			g.Expect(got).To(HaveKeyWithValue("worker-0", node))
			g.Expect(got).To(HaveKeyWithValue("worker-1", node))
		}).Should(Succeed())
		waitCycles(2)
		p := getPod(Default, "theirs-pending")
		Expect(p.Spec.NodeName).To(BeEmpty(), "another scheduler's pod is never bound by this one")
		Expect(events(Default, "Pod", "theirs-pending", "Scheduled")).To(BeEmpty())
		Expect(events(Default, "Pod", "theirs-pending", "FailedScheduling")).To(BeEmpty())
	})

	// Not a real kill (the chaos soak, test/soak, SIGKILLs schedulers):
	// the first scheduler's writes fail from its 2nd bind on, as if its
	// process were gone, and it is then stopped.
	It("completes a gang whose first scheduler's writes fail mid-commit, binding every pod exactly once", func() {
		nodes(
			testutil.MakeNode(nodeName("a")).Capacity("8", "32Gi").Obj(),
			testutil.MakeNode(nodeName("b")).Capacity("8", "32Gi").Obj(),
		)
		create(testutil.MakePodGroup("pg", ns).MinMember(6).Obj())
		create(gangPods("pg", "Worker", 6, func(b *testutil.GangPodBuilder) { b.Request(corev1.ResourceCPU, "1") })...)

		// requests counts, per pod, the bind requests that reached the API
		// server, from either scheduler.
		var mu sync.Mutex
		requests := map[string]int{}
		reached := func(pod string) {
			mu.Lock()
			defer mu.Unlock()
			requests[pod]++
		}
		errKilled := errors.New("scheduler gone")
		var binds atomic.Int32
		dead := make(chan struct{})
		var dying sync.Once
		isDead := func() bool {
			select {
			case <-dead:
				return true
			default:
				return false
			}
		}
		// The first scheduler's client: its 2nd bind is its last write.
		// Every write after it fails, as if the process were gone.
		dyingClient := testutil.WithClientWrapper(func(c client.WithWatch) client.Client {
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
					if sub != "binding" {
						if isDead() {
							return errKilled
						}
						return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
					}
					if binds.Add(1) > 2 {
						return errKilled
					}
					reached(obj.GetName())
					err := c.SubResource(sub).Create(ctx, obj, subObj, opts...)
					if binds.Load() >= 2 {
						dying.Do(func() { close(dead) })
					}
					return err
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if isDead() {
						return errKilled
					}
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if isDead() {
						return errKilled
					}
					return c.Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if isDead() {
						return errKilled
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if isDead() {
						return errKilled
					}
					return c.Delete(ctx, obj, opts...)
				},
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if isDead() {
						return errKilled
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if isDead() {
						return errKilled
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
		})
		stopFirst := start(nil, dyingClient)
		Eventually(dead).Should(BeClosed())
		stopFirst()

		var first map[string]string
		Eventually(func(g Gomega) {
			first = map[string]string{}
			for pod, node := range placement(g) {
				if node != "" {
					first[pod] = node
				}
			}
			g.Expect(first).To(HaveLen(2))
		}).Should(Succeed())
		Expect(getPodGroup(Default, "pg").Status.Phase).NotTo(Equal(schedulingv1alpha1.PodGroupRunning),
			"the first scheduler died before it could write the gang's status")

		countingClient := testutil.WithClientWrapper(func(c client.WithWatch) client.Client {
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
					if sub == "binding" {
						reached(obj.GetName())
					}
					return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
				},
			})
		})
		start(nil, countingClient)
		Eventually(func(g Gomega) {
			g.Expect(placement(g)).To(HaveEach(Not(BeEmpty())))
			g.Expect(getPodGroup(g, "pg").Status.Phase).To(Equal(schedulingv1alpha1.PodGroupRunning))
		}).Should(Succeed())
		got := placement(Default)
		for pod, node := range first {
			Expect(got).To(HaveKeyWithValue(pod, node), "a pod bound before the crash keeps its node")
		}
		waitCycles(2)
		mu.Lock()
		defer mu.Unlock()
		Expect(requests).To(HaveLen(6))
		Expect(requests).To(HaveEach(1), "every pod's bind reached the API server exactly once")
	})

	// A job that finishes or is deleted takes its PodGroup along, often
	// while a cycle that saw it is still committing.
	It("takes a PodGroup or Queue deleted since the snapshot as nothing left to write", func() {
		c, err := client.New(schedulerConfig, client.Options{Scheme: suite.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		w := status.NewWriter(c, clientevents.NewFakeRecorder(10), status.WriterOptions{Workers: 2})
		wctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() { _ = w.Start(wctx) }()
		pg := testutil.MakePodGroup("gone", ns).MinMember(1).Obj()
		// Never created: their UIDs are made up, as the writer keys its
		// records by UID.
		pg.UID = "gone-podgroup"
		q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns + "-gone", UID: "gone-queue"}}
		gone := func() float64 {
			return counter("troupe_scheduler_status_writes_total", map[string]string{"kind": "PodGroup", "result": "gone"}) +
				counter("troupe_scheduler_status_writes_total", map[string]string{"kind": "Queue", "result": "gone"})
		}
		before := gone()
		w.Write(
			[]status.PodGroupWrite{{PodGroup: pg, Update: status.Update{Status: schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning}}}},
			[]status.QueueWrite{{Queue: q, New: schedulingv1alpha1.QueueStatus{Running: 1}}},
			nil)
		Expect(w.Flush(ctx)).To(Succeed())
		Expect(gone() - before).To(Equal(2.0))
		Expect(apierrors.IsNotFound(suite.Client.Get(ctx, client.ObjectKeyFromObject(pg), &schedulingv1alpha1.PodGroup{}))).To(BeTrue(), "a status write created no PodGroup")
	})

	It("refuses to start without the PodGroup CRD, naming the file to install", func() {
		bare := &envtest.Environment{}
		cfg, err := bare.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(bare.Stop)
		Expect(cfg).NotTo(BeNil())
		admin, err := bare.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig, err := admin.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())

		var stderr bytes.Buffer
		code := app.Main(ctx, []string{"--kubeconfig=" + path, "--metrics-bind-address=0", "--health-probe-bind-address=0"}, &stderr)
		Expect(code).To(Equal(1))
		Expect(stderr.String()).To(ContainSubstring("the PodGroup CRD (scheduling.troupe.dev/v1alpha1) is not installed: install config/crd/bases/scheduling.troupe.dev_podgroups.yaml"))
		queues := &schedulingv1alpha1.QueueList{}
		bareClient, err := client.New(cfg, client.Options{Scheme: suite.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(meta.IsNoMatchError(bareClient.List(ctx, queues))).To(BeTrue(), "the bare API server really lacks the CRDs")
	})
})

// counter reads a counter of controller-runtime's registry, where the
// scheduler registers its metrics; labels must match exactly those given.
func counter(name string, labels map[string]string) float64 {
	return metric(name, labels).GetCounter().GetValue()
}

func gauge(name string, labels map[string]string) float64 {
	return metric(name, labels).GetGauge().GetValue()
}

// metric is the registry's metric name with labels, nil if none.
func metric(name string, labels map[string]string) *dto.Metric {
	families, err := ctrlmetrics.Registry.Gather()
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if testutil.HasLabels(m, labels) {
				return m
			}
		}
	}
	return nil
}

// countValues counts how often each value occurs.
func countValues(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}

// resourceEqual matches a quantity equal to s, however it is spelt.
func resourceEqual(s string) OmegaMatcher {
	want := resource.MustParse(s)
	return WithTransform(func(q resource.Quantity) int { return q.Cmp(want) }, BeZero())
}
