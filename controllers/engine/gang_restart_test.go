package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// podLog records, in the API server's order, every pod of one job that
// appeared or went: the proof that two generations never overlap.
type podLog struct {
	mu     sync.Mutex
	events []podEvent
}

type podEvent struct {
	added      bool
	name       string
	generation string
}

func watchJobPods(ctx context.Context, ns, job string) *podLog {
	wc, err := client.NewWithWatch(suite.Env.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingLabels{kubeflowv1.JobNameLabel: job})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	l := &podLog{}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Deleted) {
				continue
			}
			l.mu.Lock()
			l.events = append(l.events, podEvent{added: ev.Type == watch.Added, name: pod.Name, generation: pod.Labels[kubeflowv1.GangGenerationLabel]})
			l.mu.Unlock()
		}
	}()
	return l
}

// expectNoOverlap checks that every pod of an older generation was gone
// before the first pod of a newer one appeared, and that no name was
// created twice within a generation.
func (l *podLog) expectNoOverlap() {
	l.mu.Lock()
	defer l.mu.Unlock()
	live := map[string]string{}
	created := map[string]bool{}
	for _, ev := range l.events {
		if !ev.added {
			delete(live, ev.name)
			continue
		}
		for name, gen := range live {
			ExpectWithOffset(1, gen).To(Equal(ev.generation), "pod %s (generation %s) appeared while %s (generation %s) was still there", ev.name, ev.generation, name, gen)
		}
		key := ev.generation + "/" + ev.name
		ExpectWithOffset(1, created[key]).To(BeFalse(), "pod %s of generation %s created twice", ev.name, ev.generation)
		created[key] = true
		live[ev.name] = ev.generation
	}
}

// gangRestart is a whole-gang restart policy without backoff, so that the
// scenarios run quickly; the backoff has a scenario of its own.
func gangRestart(mods ...func(*kubeflowv1.GangPolicy)) kubeflowv1.GangPolicy {
	gp := kubeflowv1.GangPolicy{
		RestartPolicy: kubeflowv1.GangRestartPolicyGang,
		Backoff:       &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](0), MaxSeconds: ptr.To[int32](0)},
	}
	for _, m := range mods {
		m(&gp)
	}
	return gp
}

var _ = Describe("Whole-gang restarts", func() {
	var (
		ctx  context.Context
		ns   string
		op   *testutil.Operator
		jobs *tfJobs
	)
	startOperator := func(options ...testutil.OperatorOption) {
		var err error
		op, err = testutil.StartOperator(suite.Env.Config, []string{"tfjob"}, options...)
		Expect(err).NotTo(HaveOccurred())
	}
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
		jobs = &tfJobs{ctx: ctx, ns: ns}
		DeferCleanup(func() {
			if op != nil {
				Expect(op.Stop()).To(Succeed())
				op = nil
			}
		})
	})

	// generation waits for exactly n live pods, all of the generation.
	generation := func(name string, gen, n int) []corev1.Pod {
		var live []corev1.Pod
		EventuallyWithOffset(1, func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveEach(HaveField("Labels", HaveKeyWithValue(kubeflowv1.GangGenerationLabel, strconv.Itoa(gen)))))
			live = testutil.Live(pods)
			g.Expect(live).To(HaveLen(n))
		}).Should(Succeed())
		return live
	}
	// gangJob is a chief and three workers under a replica restart policy.
	gangJob := func(name string, policy kubeflowv1.RestartPolicy, gp kubeflowv1.GangPolicy) *testutil.TFJobBuilder {
		return testutil.MakeTFJob(name, ns).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeChief, testutil.MakeReplica(1, kubeflowv1.TFJobDefaultContainerName).RestartPolicy(policy).Obj()).
			ReplicaSpec(worker, testutil.MakeReplica(3, kubeflowv1.TFJobDefaultContainerName).RestartPolicy(policy).Obj()).
			GangPolicy(gp)
	}
	uids := func(pods []corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, string(p.UID))
		}
		return out
	}
	// running starts the job's first generation and waits until the
	// operator has seen the whole gang run (Running alone comes as soon
	// as the chief runs).
	running := func(name string) []corev1.Pod {
		pods := generation(name, 0, 4)
		jobs.runAll(pods)
		jobs.expectCondition(name, "Running", "TFJobRunning")
		EventuallyWithOffset(1, func(g Gomega) {
			g.Expect(jobs.get(g, name).Status.Gang).To(HaveField("StartTime", Not(BeNil())))
		}).Should(Succeed())
		return pods
	}

	It("replaces every member together when one fails with a retryable code, then runs again", func() {
		startOperator()
		log := watchJobPods(ctx, ns, "retry")
		Expect(suite.Client.Create(ctx, gangJob("retry", "ExitCode", gangRestart()).Obj())).To(Succeed())
		first := running("retry")
		for _, p := range first {
			Expect(p.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever), "the operator, not the kubelet, restarts a gang")
		}

		Expect(testutil.FailPod(ctx, suite.Client, &first[2], 137)).To(Succeed())
		job := jobs.expectCondition("retry", "Restarting", "MemberFailed")
		Expect(testutil.Condition(&job.Status, "Restarting").Message).To(ContainSubstring("retryable code 137"))
		Expect(job.Status.Gang.Restarts).To(Equal(int32(1)))
		Expect(job.Status.Gang.Disruptions).To(BeZero())
		Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
		last := job.Status.Gang.LastRestart
		Expect(last).NotTo(BeNil())
		Expect(last.Trigger).To(Equal(kubeflowv1.GangRestartOnMemberFailed))
		Expect(last.Member).To(Equal(first[2].Name))
		Expect(last.ExitCode).To(Equal(ptr.To[int32](137)))
		Expect(job.Status.RecreatedPods).To(BeZero(), "a gang restart is not a per-pod replacement")

		second := generation("retry", 1, 4)
		Expect(uids(second)).NotTo(ContainElements(uids(first)), "every member was replaced, the running ones too")
		Expect(testutil.PodNames(second)).To(ConsistOf(testutil.PodNames(first)), "the members keep their names")
		jobs.runAll(second)
		job = jobs.expectCondition("retry", "Running", "TFJobRunning")
		Expect(testutil.ConditionTrue(&job.Status, "Restarting")).To(BeFalse())
		Expect(job.Status.Gang.StartTime).NotTo(BeNil(), "the new generation started")
		log.expectNoOverlap()
	})

	It("fails the job on a permanent exit code, restarting nothing", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("permanent", "ExitCode", gangRestart()).Obj())).To(Succeed())
		pods := running("permanent")
		Expect(testutil.FailPod(ctx, suite.Client, &pods[1], 1)).To(Succeed())
		job := jobs.expectCondition("permanent", "Failed", "TFJobFailed")
		Expect(testutil.Condition(&job.Status, "Failed").Message).To(ContainSubstring("permanent code 1"))
		Expect(job.Status.Gang.Restarts).To(BeZero())
		Expect(job.Status.Gang.Generation).To(BeZero())
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "permanent")
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods {
				g.Expect(p.Labels[kubeflowv1.GangGenerationLabel]).To(Equal("0"))
			}
		}, 2*time.Second).Should(Succeed())
	})

	It("restarts an evicted gang without spending maxRestarts", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("evicted", "Never", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.MaxRestarts = ptr.To[int32](0)
		})).Obj())).To(Succeed())
		pods := running("evicted")
		Expect(testutil.EvictPod(ctx, suite.Client, &pods[3])).To(Succeed())
		job := jobs.expectCondition("evicted", "Restarting", "MemberEvicted")
		Expect(job.Status.Gang.Disruptions).To(Equal(int32(1)))
		Expect(job.Status.Gang.Restarts).To(BeZero(), "an eviction is not the job's failure")
		jobs.runAll(generation("evicted", 1, 4))
		jobs.expectCondition("evicted", "Running", "TFJobRunning")
	})

	// runningWithMemberOnNode starts the operator and a job whose node-lost
	// timeout is 0, binds its member index to a node of its own, and waits
	// until the gang runs; it returns the pods and that node.
	runningWithMemberOnNode := func(name string, index int) ([]corev1.Pod, *corev1.Node) {
		startOperator()
		node := testutil.MakeNode(name+"-"+ns).Capacity("8", "32Gi").Obj()
		ExpectWithOffset(1, testutil.CreateReadyNode(ctx, suite.Client, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), node))).To(Succeed()) })

		ExpectWithOffset(1, suite.Client.Create(ctx, gangJob(name, "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.NodeLostTimeoutSeconds = ptr.To[int32](0)
		})).Obj())).To(Succeed())
		pods := generation(name, 0, 4)
		ExpectWithOffset(1, testutil.BindPod(ctx, suite.Client, &pods[index], node.Name)).To(Succeed())
		jobs.runAll(pods)
		jobs.expectCondition(name, "Running", "TFJobRunning")
		return pods, node
	}

	// Found by the chaos soak (seed 265900617): a member's program failed,
	// then, before the operator looked (it was failing over), the member's
	// node was deleted; the operator counted a node loss, a disruption, for
	// what was the member's own failure.
	It("counts a member that failed on its own as a failure when its node is gone by the time it looks", func() {
		pods, node := runningWithMemberOnNode("failedgone", 1)
		member := pods[1]
		// Both happen while no operator runs, so that it sees them together.
		Expect(op.Stop()).To(Succeed())
		op = nil
		Expect(testutil.FailPod(ctx, suite.Client, &member, 137)).To(Succeed())
		Expect(suite.Client.Delete(ctx, node)).To(Succeed())
		startOperator()

		got := jobs.expectCondition("failedgone", "Restarting", "MemberFailed")
		Expect(got.Status.Gang.LastRestart.Member).To(Equal(member.Name))
		Expect(got.Status.Gang.Restarts).To(Equal(int32(1)))
		Expect(got.Status.Gang.Disruptions).To(BeZero(), "the member failed before its node went")
	})

	// The operator's caches of pods and of nodes are fed by separate
	// watches: it can see a member bound to a node it has not seen yet (a
	// node just added, say by an autoscaler, and used at once). That node
	// is not lost. Here the operator's cache holds only the nodes labelled
	// cached, so it never sees the member's node, as a cache behind the
	// API server would not for a moment.
	It("does not take a node its cache has not seen yet for a lost one", func() {
		startOperator(func(o *ctrl.Options) {
			o.Cache.ByObject = map[client.Object]cache.ByObject{
				&corev1.Node{}: {Label: labels.SelectorFromSet(labels.Set{"troupe.test/cached": "true"})},
			}
		})
		node := testutil.MakeNode("unseen-"+ns).Capacity("8", "32Gi").Obj()
		Expect(testutil.CreateReadyNode(ctx, suite.Client, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), node))).To(Succeed()) })
		Expect(suite.Client.Create(ctx, gangJob("unseen", "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.NodeLostTimeoutSeconds = ptr.To[int32](0)
		})).Obj())).To(Succeed())
		pods := generation("unseen", 0, 4)
		Expect(testutil.BindPod(ctx, suite.Client, &pods[1], node.Name)).To(Succeed())
		jobs.runAll(pods)
		jobs.expectCondition("unseen", "Running", "TFJobRunning")
		Consistently(func(g Gomega) {
			job := &kubeflowv1.TFJob{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unseen"}, job)).To(Succeed())
			g.Expect(job.Status.Gang).NotTo(BeNil())
			g.Expect(job.Status.Gang.Generation).To(BeZero(), "restarted: %+v", job.Status.Gang.LastRestart)
		}, 2*time.Second).Should(Succeed())
	})

	// Found by the chaos soak (seed 74015533): members deleted (preempted,
	// evicted) and gone before the operator looked at their job (kwok
	// confirms a deletion at once; the operator was failing over) left no
	// trace, and the operator created them again alone in their
	// generation, beside a gang that had lost them.
	It("restarts the gang for a member deleted while no operator runs, holding it until then", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("vanished", "Never", gangRestart()).Obj())).To(Succeed())
		pods := running("vanished")
		member := pods[2]
		Expect(member.Finalizers).To(ContainElement(kubeflowv1.GangMemberFinalizer))

		Expect(op.Stop()).To(Succeed())
		op = nil
		// An unbound pod deleted with no grace period would be gone at once.
		Expect(suite.Client.Delete(ctx, &member, client.GracePeriodSeconds(0))).To(Succeed())
		Consistently(func(g Gomega) {
			held := &corev1.Pod{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(&member), held)).To(Succeed())
			g.Expect(held.DeletionTimestamp).NotTo(BeNil())
		}, time.Second).Should(Succeed(), "held by its finalizer while no operator can judge it")
		startOperator()

		job := jobs.expectCondition("vanished", "Restarting", "MemberEvicted")
		Expect(job.Status.Gang.LastRestart.Member).To(Equal(member.Name))
		Expect(job.Status.Gang.Disruptions).To(Equal(int32(1)))
		Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
		second := generation("vanished", 1, 4)
		Expect(uids(second)).NotTo(ContainElement(string(member.UID)))
	})

	It("lets the members of a deleted job go, holding them while no operator runs", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("foreground", "Never", gangRestart()).Obj())).To(Succeed())
		Expect(suite.Client.Create(ctx, gangJob("background", "Never", gangRestart()).Obj())).To(Succeed())
		members := append(running("foreground"), running("background")...)
		Expect(op.Stop()).To(Succeed())
		op = nil

		// A foreground deletion keeps the job, being deleted, until its
		// pods are gone; a background one removes it at once. envtest
		// runs no garbage collector: the test deletes the pods as it would.
		foreground := jobs.get(Default, "foreground")
		Expect(suite.Client.Delete(ctx, foreground, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		DeferCleanup(func() {
			// The garbage collector's own finalizer, which it would remove.
			Expect(client.IgnoreNotFound(suite.Client.Patch(context.Background(), foreground,
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
		})
		Expect(suite.Client.Delete(ctx, jobs.get(Default, "background"))).To(Succeed())
		for i := range members {
			Expect(suite.Client.Delete(ctx, &members[i])).To(Succeed())
		}
		Consistently(func(g Gomega) {
			for _, name := range []string{"foreground", "background"} {
				pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pods).To(HaveLen(4))
				g.Expect(pods).To(HaveEach(HaveField("DeletionTimestamp", Not(BeNil()))))
			}
		}, time.Second).Should(Succeed())

		startOperator()
		Eventually(func(g Gomega) {
			for _, name := range []string{"foreground", "background"} {
				pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pods).To(BeEmpty(), "the members of %s are released", name)
			}
		}).Should(Succeed())
	})

	// Found by the chaos soak (seed 906235438): every member of a job
	// succeeded, then, before the operator looked (it was failing over),
	// one member's node was deleted; the operator restarted the gang for a
	// node loss instead of seeing the job succeed.
	It("lets a job whose members succeeded succeed when a member's node is gone by the time it looks", func() {
		pods, node := runningWithMemberOnNode("donegone", 1)
		Expect(op.Stop()).To(Succeed())
		op = nil
		for i := range pods {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodSucceeded)).To(Succeed())
		}
		Expect(suite.Client.Delete(ctx, node)).To(Succeed())
		startOperator()

		got := jobs.expectCondition("donegone", "Succeeded", "TFJobSucceeded")
		Expect(got.Status.Gang.Generation).To(BeZero(), "nothing was lost: the member had finished")
		Expect(got.Status.Gang.Disruptions).To(BeZero())
		Expect(got.Status.Gang.LastRestart).To(BeNil())
	})

	It("lets a job whose chief succeeded succeed when a worker broke beside it before the operator looked", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("chiefdone", "ExitCode", gangRestart()).Obj())).To(Succeed())
		pods := running("chiefdone")

		Expect(op.Stop()).To(Succeed())
		op = nil
		chief, worker := &pods[0], &pods[2]
		Expect(chief.Labels).To(HaveKeyWithValue(kubeflowv1.ReplicaTypeLabel, "chief"))
		Expect(testutil.SetPodPhase(ctx, suite.Client, chief, corev1.PodSucceeded)).To(Succeed())
		Expect(testutil.EvictPod(ctx, suite.Client, worker)).To(Succeed())
		startOperator()

		got := jobs.expectCondition("chiefdone", "Succeeded", "TFJobSucceeded")
		Expect(got.Status.Gang.Generation).To(BeZero(), "the chief's result exists: nothing to run again")
		Expect(got.Status.Gang.LastRestart).To(BeNil())
	})

	It("force-deletes a member stuck Terminating on a lost node after its grace period, and restarts the gang", func() {
		startOperator()
		node := testutil.MakeNode("lost-"+ns).Capacity("8", "32Gi").Obj()
		Expect(testutil.CreateReadyNode(ctx, suite.Client, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), node))).To(Succeed()) })

		job := gangJob("nodelost", "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.NodeLostTimeoutSeconds = ptr.To[int32](1)
		})).Obj()
		job.Spec.TFReplicaSpecs[worker].Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		pods := generation("nodelost", 0, 4)
		stuck := pods[1]
		Expect(stuck.Name).To(Equal("nodelost-worker-0"))
		Expect(testutil.BindPod(ctx, suite.Client, &stuck, node.Name)).To(Succeed())
		jobs.runAll(pods)
		jobs.expectCondition("nodelost", "Running", "TFJobRunning")

		// The node stops answering; the taint manager evicts its pod, which
		// then stays Terminating: no kubelet confirms its end.
		Expect(testutil.SetNodeReady(ctx, suite.Client, node, false, time.Now())).To(Succeed())
		Expect(suite.Client.Delete(ctx, &stuck)).To(Succeed())
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(&stuck), &stuck)).To(Succeed())
		Expect(stuck.DeletionTimestamp).NotTo(BeNil(), "a bound pod waits for its kubelet")

		got := jobs.expectCondition("nodelost", "Restarting", "NodeLost")
		Expect(got.Status.Gang.LastRestart.Member).To(Equal(stuck.Name))
		Expect(got.Status.Gang.Disruptions).To(Equal(int32(1)))
		second := generation("nodelost", 1, 4)
		Expect(uids(second)).NotTo(ContainElement(string(stuck.UID)))
		// Force-deleted, not before its own grace period ended.
		Expect(second[1].CreationTimestamp.Time).To(BeTemporally(">=", stuck.DeletionTimestamp.Truncate(time.Second)))
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.Reason == "ForceDeletedPod" && e.InvolvedObject.Name == "nodelost"
			})).To(BeTrue(), "a ForceDeletedPod event on the job")
		}).Should(Succeed())
	})

	It("restarts a gang that stays partial past partialGangTimeoutSeconds", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("partial", "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.PartialGangTimeoutSeconds = ptr.To[int32](2)
			// A deleted member is replaced alone, not with its gang.
			gp.RestartOn = []kubeflowv1.GangRestartTrigger{kubeflowv1.GangRestartOnMemberFailed, kubeflowv1.GangRestartOnGangBroken}
		})).Obj())).To(Succeed())
		pods := running("partial")
		// A member is deleted; its replacement, created alone, stays
		// Pending: no single pod shows that the gang is broken.
		deletedAt := time.Now()
		Expect(suite.Client.Delete(ctx, &pods[3], client.GracePeriodSeconds(0))).To(Succeed())
		job := jobs.expectCondition("partial", "Restarting", "GangBroken")
		gs := job.Status.Gang
		Expect(gs.LastRestart.Time.Time).To(BeTemporally(">=", deletedAt.Truncate(time.Second).Add(2*time.Second)),
			"not before the gang was partial for partialGangTimeoutSeconds")
		Expect(gs.Disruptions).To(Equal(int32(1)))
		Expect(gs.LastRestart.Message).To(ContainSubstring("3 of minMember 4 members have run for 2s"))
		jobs.runAll(generation("partial", 1, 4))
		jobs.expectCondition("partial", "Running", "TFJobRunning")
	})

	It("fails the job with MaxRestartsExceeded when the budget runs out, and stops its pods", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("budget", "OnFailure", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.MaxRestarts = ptr.To[int32](1)
		})).CleanPodPolicy("None").Obj())).To(Succeed())
		pods := running("budget")
		Expect(testutil.FailPod(ctx, suite.Client, &pods[0], 1)).To(Succeed(), "OnFailure: any failure is retryable")
		jobs.expectCondition("budget", "Restarting", "MemberFailed")
		pods = generation("budget", 1, 4)
		jobs.runAll(pods)
		jobs.expectCondition("budget", "Running", "TFJobRunning")

		Expect(testutil.FailPod(ctx, suite.Client, &pods[2], 1)).To(Succeed())
		job := jobs.expectCondition("budget", "Failed", "MaxRestartsExceeded")
		Expect(testutil.Condition(&job.Status, "Failed").Message).To(ContainSubstring("maxRestarts (1)"))
		Expect(job.Status.Gang.Restarts).To(Equal(int32(1)))
		Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "budget")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(1), "running members are stopped; cleanPodPolicy None keeps the failed one")
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodFailed))
		}).Should(Succeed())
	})

	It("waits the backoff between tearing down and creating the next gang", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("backoff", "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.Backoff = &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](2), MaxSeconds: ptr.To[int32](60)}
		})).Obj())).To(Succeed())
		pods := running("backoff")
		Expect(testutil.FailPod(ctx, suite.Client, &pods[1], 143)).To(Succeed())
		job := jobs.expectCondition("backoff", "Restarting", "MemberFailed")
		Expect(testutil.Condition(&job.Status, "Restarting").Message).To(ContainSubstring("the next gang starts in 2s"))
		restartedAt := job.Status.Gang.LastRestart.Time.Time
		for _, p := range generation("backoff", 1, 4) {
			Expect(p.CreationTimestamp.Sub(restartedAt)).To(BeNumerically(">=", 2*time.Second),
				"pod %s created before the backoff ended", p.Name)
		}
	})

	It("replaces only the failed member for an event not in restartOn", func() {
		startOperator()
		Expect(suite.Client.Create(ctx, gangJob("perpod", "ExitCode", gangRestart(func(gp *kubeflowv1.GangPolicy) {
			gp.RestartOn = []kubeflowv1.GangRestartTrigger{kubeflowv1.GangRestartOnMemberEvicted}
		})).Obj())).To(Succeed())
		pods := running("perpod")
		Expect(testutil.FailPod(ctx, suite.Client, &pods[2], 137)).To(Succeed())
		jobs.expectCondition("perpod", "Restarting", "TFJobRestarting")
		Eventually(func(g Gomega) {
			now := generation("perpod", 0, 4)
			g.Expect(now[2].UID).NotTo(Equal(pods[2].UID))
			g.Expect([]string{string(now[0].UID), string(now[1].UID), string(now[3].UID)}).To(Equal([]string{string(pods[0].UID), string(pods[1].UID), string(pods[3].UID)}))
		}).Should(Succeed())
		job := jobs.get(Default, "perpod")
		Expect(job.Status.RecreatedPods).To(Equal(int32(1)))
		Expect(job.Status.Gang.Generation).To(BeZero())
	})

	// Not a real kill (the chaos soak, test/soak, SIGKILLs operators):
	// the first operator's writes fail from a point on, as if its process
	// were gone, and it is then stopped.
	It("completes a restart once when the operator's writes fail between teardown and re-creation", func() {
		// The first operator's writes fail from its second pod deletion of
		// the teardown on: the restart is decided and stored, one old
		// member is gone, the others are still there. Its first deletion
		// reads the job from the API server, to prove the order: the
		// restart stored before any member is deleted.
		var deletes atomic.Int32
		crashed := make(chan struct{})
		var generationAtFirstDelete atomic.Int32
		generationAtFirstDelete.Store(-1)
		startOperator(testutil.WithClientWrapper(func(c client.WithWatch) client.Client {
			return interceptor.NewClient(c, interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if pod, ok := obj.(*corev1.Pod); ok && deletes.Load() == 0 {
						stored := &kubeflowv1.TFJob{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: "crash"}, stored); err == nil && stored.Status.Gang != nil {
							generationAtFirstDelete.Store(stored.Status.Gang.Generation)
						} else {
							generationAtFirstDelete.Store(0)
						}
					}
					if _, ok := obj.(*corev1.Pod); ok && deletes.Add(1) == 2 {
						close(crashed)
						return fmt.Errorf("operator crashed")
					}
					if deletes.Load() >= 2 {
						return fmt.Errorf("operator crashed")
					}
					return c.Delete(ctx, obj, opts...)
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if deletes.Load() >= 2 {
						return fmt.Errorf("operator crashed")
					}
					return c.Create(ctx, obj, opts...)
				},
			})
		}))
		log := watchJobPods(ctx, ns, "crash")
		Expect(suite.Client.Create(ctx, gangJob("crash", "ExitCode", gangRestart()).Obj())).To(Succeed())
		first := running("crash")
		Expect(testutil.FailPod(ctx, suite.Client, &first[0], 137)).To(Succeed())
		Eventually(crashed).Should(BeClosed())
		Expect(op.Stop()).To(Succeed())
		op = nil

		pods, err := testutil.JobPods(ctx, suite.Client, ns, "crash")
		Expect(err).NotTo(HaveOccurred())
		Expect(len(pods)).To(BeNumerically(">", 0), "the crash left old members behind")
		job := jobs.get(Default, "crash")
		Expect(job.Status.Gang.Generation).To(Equal(int32(1)), "the restart was stored")
		Expect(generationAtFirstDelete.Load()).To(Equal(int32(1)), "the restart was stored before the first member was deleted")

		startOperator()
		second := generation("crash", 1, 4)
		jobs.runAll(second)
		job = jobs.expectCondition("crash", "Running", "TFJobRunning")
		Expect(job.Status.Gang.Restarts).To(Equal(int32(1)), "the restart was counted once")
		Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
		Consistently(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "crash")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(testutil.PodNames(pods)).To(ConsistOf(testutil.PodNames(second)), "no duplicate members")
		}, 2*time.Second).Should(Succeed())
		log.expectNoOverlap()
	})

})
