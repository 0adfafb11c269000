package cache_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	apitesting "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// The cache against a real API server: what the informers deliver, and
// how assumptions stand in for binds the informers have not shown yet.
var _ = Describe("Cache", func() {
	var (
		ctx context.Context
		c   *cache.Cache
		ns  string
	)

	// newCache starts a cache on its own informers and waits for it to
	// sync.
	newCache := func() *cache.Cache {
		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(schedulingv1alpha1.AddToScheme(scheme)).To(Succeed())
		informers, err := ctrlcache.New(suite.Env.Config, ctrlcache.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		c, err := cache.New(ctx, informers, cache.Options{SchedulerName: "troupe-scheduler"})
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			Expect(informers.Start(ctx)).To(Succeed())
		}()
		Expect(c.WaitForSync(ctx)).To(BeTrue())
		return c
	}

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.Background())
		DeferCleanup(cancel)
		c = newCache()
		ns = suite.NewNamespace(ctx, "cache")
	})

	// drainChanged takes the signals of earlier events, until none came
	// for 200 ms.
	drainChanged := func() {
		for {
			select {
			case <-c.Changed():
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	snapshot := func(g Gomega) *cache.State {
		st, err := c.Snapshot(ctx)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return st
	}
	node := func(name string) string {
		n := testutil.MakeNode(ns+"-"+name).Capacity("8", "32Gi").Obj()
		Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, n)).To(Succeed()) })
		return n.Name
	}
	create := func(objs ...client.Object) {
		for _, o := range objs {
			ExpectWithOffset(1, suite.Client.Create(ctx, o)).To(Succeed())
		}
	}
	// gangOfThree creates PodGroup pg and its pods p, q and r (deleted
	// after the spec), and returns them as the cache's snapshot has them.
	gangOfThree := func() map[string]*corev1.Pod {
		create(
			testutil.MakePodGroup("pg", ns).Obj(),
			testutil.MakeGangPod("p", ns).Group("pg").Obj(),
			testutil.MakeGangPod("q", ns).Group("pg").Obj(),
			testutil.MakeGangPod("r", ns).Group("pg").Obj(),
		)
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})
		pods := map[string]*corev1.Pod{}
		EventuallyWithOffset(1, func(g Gomega) {
			job := snapshot(g).Snapshot.Jobs[api.NewJobID(ns, "pg")]
			g.Expect(job).NotTo(BeNil())
			g.Expect(job.Tasks).To(HaveLen(3))
			for _, t := range job.Tasks {
				pods[t.Pod.Name] = t.Pod
			}
		}).Should(Succeed())
		return pods
	}
	// bindPod binds pod name of the namespace to node through the API.
	bindPod := func(name, node string) {
		ExpectWithOffset(2, suite.Client.SubResource("binding").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}},
		)).To(Succeed())
	}

	It("holds every pod: this scheduler's gang pods as tasks, everyone's bound and terminating pods on their nodes", func() {
		n := node("a")
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 700}
		create(pc)
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, pc)).To(Succeed()) })
		create(
			testutil.MakePodGroup("pg", ns).MinMember(2).MinTaskMember("Worker", 2).PriorityClass(pc.Name).Obj(),
			testutil.MakeGangPod("ours", ns).Group("pg").Role("Worker").Request(corev1.ResourceCPU, "1").Obj(),
			testutil.MakeGangPod("theirs-in-group", ns).Group("pg").SchedulerName("volcano").Obj(),
			testutil.MakeGangPod("theirs-bound", ns).SchedulerName("other").NodeName(n).Request(corev1.ResourceCPU, "2").Obj(),
			testutil.MakeGangPod("theirs-leaving", ns).SchedulerName("other").NodeName(n).Request(corev1.ResourceCPU, "3").Obj(),
		)
		q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: schedulingv1alpha1.QueueSpec{Weight: 3}}
		create(q)
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, q)).To(Succeed()) })
		leaving := &corev1.Pod{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "theirs-leaving"}, leaving)).To(Succeed())
		// Bound and no kubelet: the deletion waits, the pod terminates.
		Expect(suite.Client.Delete(ctx, leaving)).To(Succeed())
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})

		Eventually(func(g Gomega) {
			st := snapshot(g)
			job := st.Snapshot.Jobs[api.NewJobID(ns, "pg")]
			g.Expect(job).NotTo(BeNil())
			g.Expect(job.Priority).To(Equal(int32(700)))
			g.Expect(job.MinTaskMember).To(Equal(map[string]int32{"Worker": 2}))
			g.Expect(job.Queue).To(Equal(api.DefaultQueue), "the API server defaults spec.queue")
			g.Expect(job.Tasks).To(HaveLen(1), "another scheduler's pod is never a task")
			for _, t := range job.Tasks {
				g.Expect(t.Name).To(Equal("ours"))
				g.Expect(t.Status).To(Equal(api.Pending))
			}
			ni := st.Snapshot.Nodes[n]
			g.Expect(ni).NotTo(BeNil())
			g.Expect(ni.Used.MilliCPU).To(Equal(int64(5000)), "2 CPUs bound plus 3 CPUs terminating")
			g.Expect(ni.Tasks).To(HaveLen(2))
			g.Expect(st.Queues).To(HaveKey(api.QueueID(ns)))
			g.Expect(st.Snapshot.Queues[api.QueueID(ns)].Weight).To(Equal(int32(3)))
		}).Should(Succeed())
	})

	// The pod informer's handler derives each pod's task as it delivers the
	// pod (api.TaskPrimer): the first cycle of a cache started over
	// existing pods derives none of them. (That WaitForSync waits for the
	// handler is TestWaitForSyncWaitsForThePodHandler's: here the handler
	// is done long before the informers report synced.)
	It("derives the tasks of the pods it lists at start, so that its first cycle derives none", func() {
		n := node("a")
		create(
			testutil.MakePodGroup("pg", ns).MinMember(2).Obj(),
			testutil.MakeGangPod("p", ns).Group("pg").Obj(),
			testutil.MakeGangPod("q", ns).Group("pg").Obj(),
			testutil.MakeGangPod("theirs-bound", ns).SchedulerName("other").NodeName(n).Request(corev1.ResourceCPU, "2").Obj(),
		)
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})
		// The first cache must have them all, so the second lists them.
		Eventually(func(g Gomega) {
			st := snapshot(g)
			g.Expect(st.Snapshot.Jobs[api.NewJobID(ns, "pg")].Tasks).To(HaveLen(2))
			g.Expect(st.Snapshot.Nodes[n].Used.MilliCPU).To(Equal(int64(2000)))
		}).Should(Succeed())

		started := newCache()
		primed, inCycles := started.TasksDerived()
		Expect(primed).To(BeNumerically(">=", 3), "every pod listed at start was primed")
		Expect(inCycles).To(BeZero())
		st, err := started.Snapshot(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Snapshot.Jobs[api.NewJobID(ns, "pg")].Tasks).To(HaveLen(2))
		Expect(st.Snapshot.Nodes[n].Used.MilliCPU).To(Equal(int64(2000)))
		_, inCycles = started.TasksDerived()
		Expect(inCycles).To(BeZero(), "the first snapshot derived tasks the handler should have")
	})

	// The snapshot takes the informer's own node objects, so an unchanged
	// node is the same object from one cycle to the next: that is how the
	// builder's node memo knows it need not parse it again.
	It("takes an unchanged node as the same object, and a changed one anew", func() {
		n := node("a")
		obj := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: n}, obj)).To(Succeed())
		var first *corev1.Node
		// Making a node ready takes more than one write: wait for the
		// last, or the next event would rightly be a new object.
		Eventually(func(g Gomega) {
			ni := snapshot(g).Snapshot.Nodes[n]
			g.Expect(ni).NotTo(BeNil())
			g.Expect(ni.Node.ResourceVersion).To(Equal(obj.ResourceVersion))
			g.Expect(ni.Allocatable.MilliCPU).To(Equal(int64(8000)))
			first = ni.Node
		}).Should(Succeed())
		Expect(snapshot(Default).Snapshot.Nodes[n].Node).To(BeIdenticalTo(first))

		obj.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("16")
		Expect(suite.Client.Status().Update(ctx, obj)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(snapshot(g).Snapshot.Nodes[n].Allocatable.MilliCPU).To(Equal(int64(16000)))
		}).Should(Succeed())
	})

	// So are PodGroups: the builder carries a gang's conversion while its
	// PodGroup is the same object.
	It("takes an unchanged PodGroup as the same object, and a changed one anew", func() {
		pg := testutil.MakePodGroup("pg", ns).MinMember(1).Obj()
		create(pg)
		id := api.NewJobID(ns, "pg")
		var first *schedulingv1alpha1.PodGroup
		Eventually(func(g Gomega) {
			first = snapshot(g).PodGroups[id]
			g.Expect(first).NotTo(BeNil())
		}).Should(Succeed())
		Expect(snapshot(Default).PodGroups[id]).To(BeIdenticalTo(first))

		resized := pg.DeepCopy()
		resized.Spec.MinMember = 2
		Expect(suite.Client.Patch(ctx, resized, client.MergeFrom(pg))).To(Succeed())
		Eventually(func(g Gomega) {
			st := snapshot(g)
			g.Expect(st.PodGroups[id]).NotTo(BeIdenticalTo(first))
			g.Expect(st.Snapshot.Jobs[id].MinMember).To(Equal(int32(2)))
		}).Should(Succeed())
	})

	// Cycles release their state, so the next one reuses its nodes, and
	// take the nodes from the last snapshot while the node informer is
	// quiet: every node event must still show in the next snapshot.
	It("follows nodes added, changed and deleted while each cycle releases its state", func() {
		a := node("a")
		see := func(check func(g Gomega, s *api.Snapshot)) {
			EventuallyWithOffset(1, func(g Gomega) {
				st := snapshot(g)
				defer c.Release(st)
				check(g, st.Snapshot)
			}).Should(Succeed())
		}
		see(func(g Gomega, s *api.Snapshot) { g.Expect(s.Nodes).To(HaveKey(a)) })

		b := testutil.MakeNode(ns+"-b").Capacity("4", "8Gi").Obj()
		Expect(testutil.CreateReadyNode(ctx, suite.Client, b)).To(Succeed())
		see(func(g Gomega, s *api.Snapshot) {
			g.Expect(s.Nodes).To(HaveKey(b.Name))
			g.Expect(s.Nodes[b.Name].Idle.MilliCPU).To(Equal(int64(4000)))
		})

		obj := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: a}, obj)).To(Succeed())
		obj.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("16")
		Expect(suite.Client.Status().Update(ctx, obj)).To(Succeed())
		see(func(g Gomega, s *api.Snapshot) { g.Expect(s.Nodes[a].Idle.MilliCPU).To(Equal(int64(16000))) })

		Expect(suite.Client.Delete(ctx, b)).To(Succeed())
		see(func(g Gomega, s *api.Snapshot) {
			g.Expect(s.Nodes).NotTo(HaveKey(b.Name))
			g.Expect(s.Nodes[a].Idle.MilliCPU).To(Equal(int64(16000)))
			for i, n := range s.NodeList {
				g.Expect(n.Index).To(Equal(i))
			}
		})
	})

	It("shows an assumed pod on its node until the informer shows it bound, and pending again once forgotten", func() {
		a, b := node("a"), node("b")
		create(
			testutil.MakePodGroup("pg", ns).Obj(),
			testutil.MakeGangPod("p", ns).Group("pg").Request(corev1.ResourceCPU, "1").Obj(),
		)
		DeferCleanup(func() {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
		})
		task := func(g Gomega) (*api.TaskInfo, *cache.State) {
			st := snapshot(g)
			job := st.Snapshot.Jobs[api.NewJobID(ns, "pg")]
			g.ExpectWithOffset(1, job).NotTo(BeNil())
			g.ExpectWithOffset(1, job.Tasks).To(HaveLen(1))
			for _, t := range job.Tasks {
				return t, st
			}
			return nil, nil
		}
		var uid types.UID
		Eventually(func(g Gomega) {
			t, _ := task(g)
			g.Expect(t.Status).To(Equal(api.Pending))
			uid = types.UID(t.UID)
		}).Should(Succeed())

		c.Assume(uid, a)
		t, st := task(Default)
		Expect(t.Status).To(Equal(api.Bound))
		Expect(t.NodeName).To(Equal(a))
		Expect(st.Snapshot.Nodes[a].Used.MilliCPU).To(Equal(int64(1000)), "an assumed pod takes its room")
		Expect(c.Assumed()).To(Equal(1))
		again, _ := task(Default)
		Expect(again.Pod).To(BeIdenticalTo(t.Pod), "every cycle shows the same copy of the assumed pod, for the builder's memo")

		c.Forget(uid)
		t, st = task(Default)
		Expect(t.Status).To(Equal(api.Pending))
		Expect(st.Snapshot.Nodes[a].Used.MilliCPU).To(BeZero())

		By("the API server binds it elsewhere: its word wins, and the assumption is dropped")
		c.Assume(uid, a)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		Expect(suite.Client.SubResource("binding").Create(ctx, pod, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: b},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			t, st := task(g)
			g.Expect(t.NodeName).To(Equal(b))
			g.Expect(st.Snapshot.Nodes[a].Used.MilliCPU).To(BeZero())
			g.Expect(st.Snapshot.Nodes[b].Used.MilliCPU).To(Equal(int64(1000)))
		}).Should(Succeed())
		Expect(c.Assumed()).To(BeZero())
	})

	It("waits until the informer shows pods bound or gone, and no longer than its timeout", func() {
		a := node("a")
		pods := gangOfThree()
		bind := func(name string) { bindPod(name, a) }

		By("a pod never bound: the wait ends at its timeout, the pod unseen")
		Expect(c.AwaitBound(ctx, []*corev1.Pod{pods["p"]}, 200*time.Millisecond)).To(Equal(1))

		By("two pods, bound one after the other: the wait ends when the second shows bound")
		unseen := make(chan int, 1)
		go func() { unseen <- c.AwaitBound(ctx, []*corev1.Pod{pods["p"], pods["q"]}, time.Minute) }()
		bind("q")
		Consistently(unseen).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "p is not bound yet")
		bind("p")
		Eventually(unseen).WithTimeout(30 * time.Second).Should(Receive(Equal(0)))

		By("a pod deleted counts as seen: it will never show bound")
		Expect(suite.Client.Delete(ctx, pods["r"], client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() int { return c.AwaitBound(ctx, []*corev1.Pod{pods["r"]}, 100*time.Millisecond) }).Should(BeZero())
	})

	It("waits until the informers hold an object created after they synced, and no longer than its timeout", func() {
		missing := testutil.MakePodGroup("never", ns).Obj()
		Expect(c.AwaitObject(ctx, missing, 200*time.Millisecond)).To(BeFalse())

		found := make(chan bool, 1)
		go func() { found <- c.AwaitObject(ctx, testutil.MakePodGroup("later", ns).Obj(), time.Minute) }()
		Consistently(found).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		create(testutil.MakePodGroup("later", ns).Obj())
		Eventually(found).WithTimeout(30 * time.Second).Should(Receive(BeTrue()))
	})

	// The storage objects are looked up in the informers' stores, and a
	// snapshot keeps what it first read of each: a claim created while a
	// cycle runs shows in the next cycle, never half-way through one.
	It("looks up the claims, volumes, StorageClasses and CSINodes the informers hold, each read once per snapshot", func() {
		n := node("a")
		pv := apitesting.MakePV(ns+"-pv").Local(n, "/mnt/disk").ClaimRef(ns, "data").Obj()
		sc := apitesting.MakeStorageClass(ns+"-local", storagev1.VolumeBindingWaitForFirstConsumer)
		csiNode := apitesting.MakeCSINode(n).Driver("disk.example.com", 8).Obj()
		create(pv, sc, csiNode, apitesting.MakePVC(ns, "data").Class(sc.Name).BoundTo(pv.Name).Obj())
		DeferCleanup(func() {
			for _, o := range []client.Object{pv, sc, csiNode} {
				Expect(suite.Client.Delete(ctx, o)).To(Succeed())
			}
		})
		Eventually(func(g Gomega) {
			s := snapshot(g).Snapshot
			claim := s.PersistentVolumeClaim(ns, "data")
			g.Expect(claim).NotTo(BeNil())
			g.Expect(claim.Spec.VolumeName).To(Equal(pv.Name))
			vol := s.PersistentVolume(pv.Name)
			g.Expect(vol).NotTo(BeNil())
			g.Expect(vol.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values).To(Equal([]string{n}))
			class := s.StorageClass(sc.Name)
			g.Expect(class).NotTo(BeNil())
			g.Expect(*class.VolumeBindingMode).To(Equal(storagev1.VolumeBindingWaitForFirstConsumer))
			g.Expect(s.CSINode(n)).NotTo(BeNil())
			g.Expect(*s.CSINode(n).Spec.Drivers[0].Allocatable.Count).To(Equal(int32(8)))
		}).Should(Succeed())

		during := snapshot(Default).Snapshot
		Expect(during.PersistentVolumeClaim(ns, "late")).To(BeNil())
		create(apitesting.MakePVC(ns, "late").Obj())
		Eventually(func(g Gomega) {
			g.Expect(snapshot(g).Snapshot.PersistentVolumeClaim(ns, "late")).NotTo(BeNil())
		}).Should(Succeed())
		Expect(during.PersistentVolumeClaim(ns, "late")).To(BeNil(), "a snapshot changed its answer after its first read")
	})

	// A burst of binds would otherwise wake the loop once per bind for
	// what its snapshots already count.
	It("signals no change for the informer showing a bind it assumed to that node, and one for any other bind", func() {
		a, b := node("a"), node("b")
		pods := gangOfThree()
		bind := func(name, node string) {
			bindPod(name, node)
			ExpectWithOffset(1, c.AwaitBound(ctx, []*corev1.Pod{pods[name]}, 30*time.Second)).To(BeZero(), "the informer never showed %s bound", name)
		}
		drainChanged()
		c.Assume(pods["p"].UID, a)
		bind("p", a)
		Consistently(c.Changed()).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "the echo of an assumed bind woke the loop")

		By("a bind to another node than the one assumed")
		c.Assume(pods["q"].UID, a)
		bind("q", b)
		Eventually(c.Changed()).Should(Receive())

		By("a bind nothing assumed")
		drainChanged()
		bind("r", a)
		Eventually(c.Changed()).Should(Receive())
	})

	It("signals no change for a PodGroup's status written, and one for its spec", func() {
		pg := testutil.MakePodGroup("pg", ns).MinMember(1).Obj()
		create(pg)
		Eventually(func(g Gomega) { g.Expect(snapshot(g).PodGroups).To(HaveKey(api.NewJobID(ns, "pg"))) }).Should(Succeed())
		drainChanged()
		written := pg.DeepCopy()
		written.Status.Phase = schedulingv1alpha1.PodGroupInqueue
		Expect(suite.Client.Status().Patch(ctx, written, client.MergeFrom(pg))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(snapshot(g).PodGroups[api.NewJobID(ns, "pg")].Status.Phase).To(Equal(schedulingv1alpha1.PodGroupInqueue))
		}).Should(Succeed())
		Consistently(c.Changed()).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "the echo of a status write woke the loop")

		resized := written.DeepCopy()
		resized.Spec.MinMember = 2
		Expect(suite.Client.Patch(ctx, resized, client.MergeFrom(written))).To(Succeed())
		Eventually(c.Changed()).Should(Receive())
	})

	It("signals changes to watched objects", func() {
		for len(c.Changed()) > 0 {
			<-c.Changed()
		}
		q := &schedulingv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		create(q)
		DeferCleanup(func() { Expect(suite.Client.Delete(ctx, q)).To(Succeed()) })
		Eventually(c.Changed()).Should(Receive())
	})
})
