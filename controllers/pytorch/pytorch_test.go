package pytorch_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Upstream's examples/pytorch/simple.yaml with two workers, and the restart
// policy left to PyTorch's default.
const masterWorkerManifest = `
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: pytorch-simple
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
`

// Upstream's examples/pytorch/elastic/echo/echo.yaml, unchanged.
const elasticManifest = `
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: elastic-example-echo
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: 1
    maxReplicas: 2
    maxRestarts: 100
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/kubeflow/training-v1/pytorch-elastic-example-echo:latest
              imagePullPolicy: IfNotPresent
              env:
              - name: LOGLEVEL
                value: DEBUG
              command:
                - python
                - -m
                - torch.distributed.run
                - --rdzv_backend=c10d
                - ./echo.py
`

// A Master/Worker job whose replicas let the operator decide restarts from
// the exit code.
const exitCodeManifest = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: exit-code
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1
`

var _ = Describe("PyTorchJob", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	getJob := func(g Gomega, name string) *kubeflowv1.PyTorchJob {
		job := &kubeflowv1.PyTorchJob{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
		return job
	}
	podsOf := func(g Gomega, name string, n int) []corev1.Pod {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		g.ExpectWithOffset(1, pods).To(HaveLen(n))
		return pods
	}
	setPhase := func(phase corev1.PodPhase, pods ...corev1.Pod) {
		for i := range pods {
			ExpectWithOffset(1, testutil.SetPodPhase(ctx, suite.Client, &pods[i], phase)).To(Succeed())
		}
	}
	envOf := func(pod *corev1.Pod, name string) string {
		v, ok := testutil.EnvValue(pod, "pytorch", name)
		ExpectWithOffset(1, ok).To(BeTrue(), "%s has no %s", pod.Name, name)
		return v
	}
	expectCondition := func(name string, ctype kubeflowv1.JobConditionType) {
		EventuallyWithOffset(1, func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob(g, name).Status, ctype)).To(BeTrue())
		}).Should(Succeed())
	}

	It("runs a Master/Worker manifest: pods, services, env, Running, then Succeeded when the master succeeds", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, masterWorkerManifest)
		Expect(err).NotTo(HaveOccurred())

		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "pytorch-simple", 3) }).Should(Succeed())
		Expect(testutil.PodNames(pods)).To(Equal([]string{"pytorch-simple-master-0", "pytorch-simple-worker-0", "pytorch-simple-worker-1"}))
		Eventually(func(g Gomega) {
			svcs, err := testutil.JobServices(ctx, suite.Client, ns, "pytorch-simple")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(svcs).To(HaveLen(3))
			for _, s := range svcs {
				g.Expect(s.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
				g.Expect(s.Spec.Ports).To(ConsistOf(And(HaveField("Name", "pytorchjob-port"), HaveField("Port", int32(23456)))))
			}
		}).Should(Succeed())

		By("one event of each kind names every pod and service the pass created")
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			notes := map[string][]string{}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "pytorch-simple" {
					notes[e.Reason] = append(notes[e.Reason], e.Message)
				}
			}
			names := "pytorch-simple-master-0, pytorch-simple-worker-0, pytorch-simple-worker-1"
			g.Expect(notes["SuccessfulCreatePod"]).To(Equal([]string{"Created 3 pods: " + names}))
			g.Expect(notes["SuccessfulCreateService"]).To(Equal([]string{"Created 3 services: " + names}))
		}).Should(Succeed())

		masterPod, w1 := pods[0], pods[2]
		Expect(w1.Labels).To(Equal(map[string]string{
			kubeflowv1.OperatorNameLabel: pytorch.ControllerName,
			kubeflowv1.JobNameLabel:      "pytorch-simple",
			kubeflowv1.ReplicaTypeLabel:  "worker",
			kubeflowv1.ReplicaIndexLabel: "1",
		}))
		Expect(masterPod.Labels).To(HaveKeyWithValue(kubeflowv1.JobRoleLabel, "master"))
		Expect(masterPod.Labels).To(HaveKeyWithValue(kubeflowv1.ReplicaTypeLabel, "master"))
		Expect(pods[1].Labels).NotTo(HaveKey(kubeflowv1.JobRoleLabel), "worker 0 is no master beside a master")
		for _, p := range pods {
			Expect(p.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyOnFailure), "PyTorch's default restart policy is OnFailure")
		}
		Expect(w1.OwnerReferences).To(ConsistOf(And(
			HaveField("Kind", "PyTorchJob"), HaveField("Name", "pytorch-simple"), HaveField("Controller", Equal(ptr.To(true))))))
		Expect(w1.Spec.Containers[0].Ports).To(ConsistOf(corev1.ContainerPort{Name: "pytorchjob-port", ContainerPort: 23456, Protocol: corev1.ProtocolTCP}))

		for _, name := range []string{"MASTER_ADDR", "PET_MASTER_ADDR"} {
			Expect(envOf(&w1, name)).To(Equal("pytorch-simple-master-0"), name)
		}
		for _, name := range []string{"MASTER_PORT", "PET_MASTER_PORT"} {
			Expect(envOf(&w1, name)).To(Equal("23456"), name)
		}
		Expect(envOf(&w1, "WORLD_SIZE")).To(Equal("3"))
		Expect(envOf(&w1, "RANK")).To(Equal("2"))
		Expect(envOf(&w1, "PET_NODE_RANK")).To(Equal("2"))
		Expect(envOf(&w1, "PET_NNODES")).To(Equal("3"))
		Expect(envOf(&w1, "PET_NPROC_PER_NODE")).To(Equal("auto"))
		Expect(envOf(&w1, "PYTHONUNBUFFERED")).To(Equal("1"))
		Expect(envOf(&masterPod, "RANK")).To(Equal("0"))
		Expect(envOf(&masterPod, "MASTER_ADDR")).To(Equal("pytorch-simple-master-0"))
		_, elastic := testutil.EnvValue(&w1, "pytorch", "PET_RDZV_ENDPOINT")
		Expect(elastic).To(BeFalse(), "a job without elasticPolicy gets no rendezvous")

		setPhase(corev1.PodRunning, pods...)
		Eventually(func(g Gomega) {
			job := getJob(g, "pytorch-simple")
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeTrue())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.PyTorchJobReplicaTypeMaster, HaveField("Active", int32(1))))
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.PyTorchJobReplicaTypeWorker, HaveField("Active", int32(2))))
			g.Expect(job.Status.StartTime).NotTo(BeNil())
		}).Should(Succeed())

		// Workers finishing do not finish the job while the master runs.
		setPhase(corev1.PodSucceeded, pods[1], pods[2])
		Eventually(func(g Gomega) {
			job := getJob(g, "pytorch-simple")
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.PyTorchJobReplicaTypeWorker, HaveField("Succeeded", int32(2))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob(g, "pytorch-simple").Status, "Succeeded")).To(BeFalse())
		}, 2*time.Second).Should(Succeed())

		setPhase(corev1.PodSucceeded, masterPod)
		Eventually(func(g Gomega) {
			job := getJob(g, "pytorch-simple")
			g.Expect(testutil.ConditionTrue(&job.Status, "Succeeded")).To(BeTrue())
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeFalse())
			g.Expect(job.Status.CompletionTime).NotTo(BeNil())
		}).Should(Succeed())
	})

	It("runs an elastic manifest: rendezvous env, no static ranks, Succeeded once any worker succeeds", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, elasticManifest)
		Expect(err).NotTo(HaveOccurred())

		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "elastic-example-echo", 2) }).Should(Succeed())
		Expect(testutil.PodNames(pods)).To(Equal([]string{"elastic-example-echo-worker-0", "elastic-example-echo-worker-1"}))
		w0, w1 := pods[0], pods[1]
		Expect(w0.Labels).To(HaveKeyWithValue(kubeflowv1.JobRoleLabel, "master"), "upstream labels worker 0 master without a Master")
		Expect(w1.Labels).NotTo(HaveKey(kubeflowv1.JobRoleLabel))
		Expect(w1.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyOnFailure))

		Expect(envOf(&w1, "PET_RDZV_ENDPOINT")).To(Equal("elastic-example-echo-worker-0:23456"))
		Expect(envOf(&w1, "PET_RDZV_BACKEND")).To(Equal("c10d"))
		Expect(envOf(&w1, "PET_NNODES")).To(Equal("1:2"))
		Expect(envOf(&w1, "PET_MAX_RESTARTS")).To(Equal("100"))
		Expect(envOf(&w1, "PET_NPROC_PER_NODE")).To(Equal("auto"))
		Expect(envOf(&w1, "PYTHONUNBUFFERED")).To(Equal("1"))
		Expect(envOf(&w1, "LOGLEVEL")).To(Equal("DEBUG"), "the user's own variables stay")
		for _, name := range []string{"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_NODE_RANK", "PET_RDZV_ID", "PET_STANDALONE"} {
			_, ok := testutil.EnvValue(&w1, "pytorch", name)
			Expect(ok).To(BeFalse(), "%s is set without a master or without its elasticPolicy field", name)
		}

		setPhase(corev1.PodRunning, pods...)
		expectCondition("elastic-example-echo", "Running")

		// Upstream's elastic rule: one worker done means the group is done,
		// even while another still runs.
		setPhase(corev1.PodSucceeded, w0)
		Eventually(func(g Gomega) {
			job := getJob(g, "elastic-example-echo")
			g.Expect(testutil.ConditionTrue(&job.Status, "Succeeded")).To(BeTrue())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.PyTorchJobReplicaTypeWorker, HaveField("Active", int32(1))))
		}).Should(Succeed())
	})

	It("waits for every worker of a job with neither master nor elasticPolicy", func() {
		job := testutil.MakePyTorchJob("workers", ns).Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "workers", 2) }).Should(Succeed())
		_, ok := testutil.EnvValue(&pods[1], "pytorch", "MASTER_ADDR")
		Expect(ok).To(BeFalse())
		Expect(envOf(&pods[1], "PET_NNODES")).To(Equal("2"))

		setPhase(corev1.PodRunning, pods[1])
		setPhase(corev1.PodSucceeded, pods[0])
		Eventually(func(g Gomega) {
			job := getJob(g, "workers")
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeTrue())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.PyTorchJobReplicaTypeWorker, HaveField("Succeeded", int32(1))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob(g, "workers").Status, "Succeeded")).To(BeFalse())
		}, 2*time.Second).Should(Succeed())

		setPhase(corev1.PodSucceeded, pods[1])
		expectCondition("workers", "Succeeded")
	})

	It("fails the job when a worker exits with a permanent code under restartPolicy ExitCode", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, exitCodeManifest)
		Expect(err).NotTo(HaveOccurred())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "exit-code", 3) }).Should(Succeed())
		Expect(pods[1].Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever), "the operator, not the kubelet, restarts under ExitCode")

		failed := pods[1]
		Expect(testutil.FailPod(ctx, suite.Client, &failed, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob(g, "exit-code")
			c := testutil.Condition(&job.Status, "Failed")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("PyTorchJobFailed"))
			g.Expect(c.Message).To(ContainSubstring("exit-code-worker-0"))
			g.Expect(c.Message).To(ContainSubstring("permanent code 1"))
			g.Expect(job.Status.CompletionTime).NotTo(BeNil())
		}).Should(Succeed())
		// The failed pod stays as it is: nothing replaces it.
		Consistently(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(&failed), p)).To(Succeed())
			g.Expect(p.UID).To(Equal(failed.UID))
			g.Expect(p.Status.Phase).To(Equal(corev1.PodFailed))
		}, 2*time.Second).Should(Succeed())
		Expect(testutil.ConditionTrue(&getJob(Default, "exit-code").Status, "Restarting")).To(BeFalse())
	})

	It("replaces a worker that exits with a retryable code under restartPolicy ExitCode, and shows Restarting", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, exitCodeManifest)
		Expect(err).NotTo(HaveOccurred())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "exit-code", 3) }).Should(Succeed())

		// 137 is SIGKILL, the OOM killer's or a preemption's: retried. The
		// master stays pending, so nothing reports Running over Restarting
		// before it is observed.
		killed := pods[2]
		Expect(testutil.FailPod(ctx, suite.Client, &killed, 137)).To(Succeed())
		var replacement corev1.Pod
		Eventually(func(g Gomega) {
			job := getJob(g, "exit-code")
			g.Expect(testutil.ConditionTrue(&job.Status, "Restarting")).To(BeTrue())
			g.Expect(testutil.ConditionTrue(&job.Status, "Failed")).To(BeFalse())
			g.Expect(job.Status.RecreatedPods).To(Equal(int32(1)))
			pods := podsOf(g, "exit-code", 3)
			replacement = pods[2]
			g.Expect(replacement.Name).To(Equal("exit-code-worker-1"))
			g.Expect(replacement.UID).NotTo(Equal(killed.UID))
			g.Expect(replacement.DeletionTimestamp).To(BeNil())
			g.Expect(replacement.Status.Phase).NotTo(Equal(corev1.PodFailed))
		}).Should(Succeed())
		Expect(envOf(&replacement, "RANK")).To(Equal("2"), "the replacement keeps its rank")

		// Once the master runs again the job is Running, no longer Restarting.
		setPhase(corev1.PodRunning, pods[0], pods[1], replacement)
		Eventually(func(g Gomega) {
			job := getJob(g, "exit-code")
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeTrue())
			g.Expect(testutil.ConditionTrue(&job.Status, "Restarting")).To(BeFalse())
		}).Should(Succeed())
	})

	It("restarts examples/pytorchjob-gang-restart.yaml as a whole gang, ranks and all", func() {
		manifest, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", "pytorchjob-gang-restart.yaml"))
		Expect(err).NotTo(HaveOccurred())
		_, err = testutil.ApplyManifest(ctx, suite.Client, ns, string(manifest))
		Expect(err).NotTo(HaveOccurred(), "the example users copy is valid")
		var first []corev1.Pod
		Eventually(func(g Gomega) { first = podsOf(g, "pytorch-gang", 3) }).Should(Succeed())
		setPhase(corev1.PodRunning, first...)
		Eventually(func(g Gomega) {
			g.Expect(getJob(g, "pytorch-gang").Status.Gang).To(HaveField("StartTime", Not(BeNil())))
		}).Should(Succeed())

		Expect(testutil.FailPod(ctx, suite.Client, &first[2], 137)).To(Succeed())
		var second []corev1.Pod
		Eventually(func(g Gomega) {
			job := getJob(g, "pytorch-gang")
			g.Expect(job.Status.Gang.Restarts).To(Equal(int32(1)))
			second = podsOf(g, "pytorch-gang", 3)
			for i, p := range second {
				g.Expect(p.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "1"))
				g.Expect(p.UID).NotTo(Equal(first[i].UID))
			}
		}, 30*time.Second).Should(Succeed(), "the example's 5 s backoff, then the whole gang anew")
		for i, p := range second {
			Expect(envOf(&p, "RANK")).To(Equal(envOf(&first[i], "RANK")), "pod %s keeps its rank", p.Name)
			Expect(p.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		}
		Expect(getJob(Default, "pytorch-gang").Status.Gang.LastRestart).To(And(
			HaveField("Trigger", kubeflowv1.GangRestartOnMemberFailed),
			HaveField("Member", "pytorch-gang-worker-1"),
			HaveField("ExitCode", HaveValue(Equal(int32(137))))))
	})

	Context("examples/pytorchjob-elastic-gang.yaml (2 to 4 workers, gangPolicy Gang)", func() {
		const name = "pytorch-elastic"
		// runningElastic applies the example, runs its four workers and
		// waits until the operator has seen the gang start.
		runningElastic := func() []corev1.Pod {
			manifest, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", "pytorchjob-elastic-gang.yaml"))
			Expect(err).NotTo(HaveOccurred())
			_, err = testutil.ApplyManifest(ctx, suite.Client, ns, string(manifest))
			Expect(err).NotTo(HaveOccurred(), "the example users copy is valid")
			var pods []corev1.Pod
			Eventually(func(g Gomega) { pods = podsOf(g, name, 4) }).Should(Succeed())
			setPhase(corev1.PodRunning, pods...)
			Eventually(func(g Gomega) {
				g.Expect(getJob(g, name).Status.Gang).To(HaveField("StartTime", Not(BeNil())))
			}).Should(Succeed())
			return pods
		}
		// replaced waits until pod's member is a new pod of the same
		// generation, and returns the job then.
		replaced := func(pod corev1.Pod) *kubeflowv1.PyTorchJob {
			var job *kubeflowv1.PyTorchJob
			Eventually(func(g Gomega) {
				now := &corev1.Pod{}
				g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(&pod), now)).To(Succeed())
				g.Expect(now.UID).NotTo(Equal(pod.UID))
				g.Expect(now.Labels).To(HaveKeyWithValue(kubeflowv1.GangGenerationLabel, "0"))
				job = getJob(g, name)
			}).Should(Succeed())
			return job
		}
		elasticEvents := func(g Gomega) []string {
			var events corev1.EventList
			g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, e := range events.Items {
				if e.Reason == "ElasticMemberReplaced" && e.InvolvedObject.Name == name {
					out = append(out, e.Message)
				}
			}
			return out
		}

		It("replaces members above the minimum alone, and restarts the gang once it falls below", func() {
			first := runningElastic()

			// Worker 3 fails: 3 of 4 kept, minimum 2. A finalizer keeps it
			// Terminating once deleted, as a kubelet that has not confirmed
			// would: it is counted once, not again on every pass.
			held := first[3].DeepCopy()
			held.Finalizers = append(held.Finalizers, "test.troupe.dev/hold")
			Expect(suite.Client.Update(ctx, held)).To(Succeed())
			Expect(testutil.FailPod(ctx, suite.Client, held, 137)).To(Succeed())
			Eventually(func(g Gomega) {
				p := &corev1.Pod{}
				g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(held), p)).To(Succeed())
				g.Expect(p.DeletionTimestamp).NotTo(BeNil())
			}).Should(Succeed())
			Consistently(func(g Gomega) {
				g.Expect(getJob(g, name).Status.RecreatedPods).To(Equal(int32(1)))
			}, 2*time.Second).Should(Succeed())
			Eventually(func(g Gomega) {
				p := &corev1.Pod{}
				g.Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(held), p)).To(Succeed())
				p.Finalizers = nil
				g.Expect(suite.Client.Update(ctx, p)).To(Succeed())
			}).Should(Succeed())
			job := replaced(first[3])
			Expect(job.Status.Gang.Generation).To(BeZero(), "no gang restart above the minimum")
			Expect(job.Status.Gang.Restarts).To(BeZero())
			Expect(job.Status.RecreatedPods).To(Equal(int32(1)), "the member is replaced alone")
			Eventually(elasticEvents).Should(ContainElement(ContainSubstring("keeps 3 members of minMember 2, so pod pytorch-elastic-worker-3 is replaced alone")))

			// Worker 2 fails while the new worker 3 is not placed yet:
			// workers 0 and 1 are kept, the minimum still holds.
			Expect(testutil.FailPod(ctx, suite.Client, &first[2], 137)).To(Succeed())
			job = replaced(first[2])
			Expect(job.Status.Gang.Generation).To(BeZero())
			Expect(job.Status.RecreatedPods).To(Equal(int32(2)))

			// Worker 1 fails: one worker left, below the minimum.
			Expect(testutil.FailPod(ctx, suite.Client, &first[1], 137)).To(Succeed())
			Eventually(func(g Gomega) {
				job = getJob(g, name)
				g.Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
			}).Should(Succeed())
			Expect(job.Status.Gang.Restarts).To(Equal(int32(1)))
			Expect(job.Status.Gang.LastRestart).To(And(
				HaveField("Trigger", kubeflowv1.GangRestartOnMemberFailed),
				HaveField("Member", "pytorch-elastic-worker-1")))
		})

		It("force-deletes a worker above the minimum whose node is gone, and replaces it alone", func() {
			node := testutil.MakeNode("gone-"+ns).Capacity("8", "32Gi").Obj()
			Expect(testutil.CreateReadyNode(ctx, suite.Client, node)).To(Succeed())
			first := runningElastic()
			Expect(testutil.BindPod(ctx, suite.Client, &first[3], node.Name)).To(Succeed())
			Expect(suite.Client.Delete(ctx, node)).To(Succeed())

			job := replaced(first[3])
			Expect(job.Status.Gang.Generation).To(BeZero(), "no gang restart above the minimum")
			Expect(job.Status.Gang.Disruptions).To(BeZero())
			Eventually(elasticEvents).Should(ContainElement(ContainSubstring("pod pytorch-elastic-worker-3 is replaced alone")))
			Eventually(func(g Gomega) {
				var events corev1.EventList
				g.Expect(suite.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
				g.Expect(events.Items).To(ContainElement(And(
					HaveField("Reason", "ForceDeletedPod"),
					HaveField("Message", ContainSubstring("its node gone-"+ns+" is lost")))))
			}).Should(Succeed())
		})

		It("restarts the gang when worker 0, the rendezvous host, fails, even with the minimum kept", func() {
			first := runningElastic()
			Expect(testutil.FailPod(ctx, suite.Client, &first[0], 137)).To(Succeed())
			Eventually(func(g Gomega) {
				job := getJob(g, name)
				g.Expect(job.Status.Gang.Generation).To(Equal(int32(1)))
				g.Expect(job.Status.Gang.LastRestart).To(HaveField("Member", "pytorch-elastic-worker-0"))
			}).Should(Succeed())
			Consistently(elasticEvents, time.Second).Should(BeEmpty())
		})
	})
})
