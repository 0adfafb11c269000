package tfjob_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/tfjob"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// An upstream example manifest, unchanged but for the name: a
// parameter-server job with lower-case replica keys as some users write them.
const psWorkerManifest = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: dist-mnist
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
    worker:
      replicas: 3
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
`

const chiefWorkerEvalManifest = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: estimator
spec:
  runPolicy:
    cleanPodPolicy: Running
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf-estimator:1
            ports:
            - name: tfjob-port
              containerPort: 3333
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf-estimator:1
    Evaluator:
      replicas: 1
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf-estimator:1
`

var _ = Describe("TFJob", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	getJob := func(name string) *kubeflowv1.TFJob {
		job := &kubeflowv1.TFJob{}
		ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
		return job
	}
	podsOf := func(g Gomega, name string, n int) []corev1.Pod {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).To(HaveLen(n))
		return pods
	}
	setAll := func(name string, n int, phase corev1.PodPhase) {
		for _, p := range podsOf(Default, name, n) {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &p, phase)).To(Succeed())
		}
	}

	It("runs a PS/Worker manifest: pods, services, TF_CONFIG, Running, then Succeeded when worker 0 succeeds", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, psWorkerManifest)
		Expect(err).NotTo(HaveOccurred())

		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = podsOf(g, "dist-mnist", 5)
		}).Should(Succeed())
		Expect(testutil.PodNames(pods)).To(Equal([]string{
			"dist-mnist-ps-0", "dist-mnist-ps-1", "dist-mnist-worker-0", "dist-mnist-worker-1", "dist-mnist-worker-2",
		}))
		Eventually(func(g Gomega) {
			svcs, err := testutil.JobServices(ctx, suite.Client, ns, "dist-mnist")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(svcs).To(HaveLen(5))
			for _, s := range svcs {
				g.Expect(s.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
				g.Expect(s.Spec.Ports).To(ConsistOf(HaveField("Port", int32(2222))))
			}
		}).Should(Succeed())

		w1 := pods[3]
		Expect(w1.Labels).To(Equal(map[string]string{
			kubeflowv1.OperatorNameLabel: tfjob.ControllerName,
			kubeflowv1.JobNameLabel:      "dist-mnist",
			kubeflowv1.ReplicaTypeLabel:  "worker",
			kubeflowv1.ReplicaIndexLabel: "1",
		}))
		Expect(pods[2].Labels).To(HaveKeyWithValue(kubeflowv1.JobRoleLabel, "master"), "worker 0 is the master without a chief")
		Expect(w1.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		Expect(w1.OwnerReferences).To(ConsistOf(And(
			HaveField("Kind", "TFJob"), HaveField("Name", "dist-mnist"), HaveField("Controller", Equal(ptr(true))))))
		Expect(w1.Spec.Containers[0].Ports).To(ConsistOf(corev1.ContainerPort{Name: "tfjob-port", ContainerPort: 2222, Protocol: corev1.ProtocolTCP}))

		raw, ok := testutil.EnvValue(&w1, "tensorflow", "TF_CONFIG")
		Expect(ok).To(BeTrue())
		var cfg tfjob.TFConfig
		Expect(json.Unmarshal([]byte(raw), &cfg)).To(Succeed())
		Expect(cfg.Task).To(Equal(tfjob.TaskSpec{Type: "worker", Index: 1}))
		Expect(cfg.Environment).To(Equal("cloud"))
		Expect(cfg.Cluster).To(Equal(map[string]any{
			"ps": []any{"dist-mnist-ps-0." + ns + ".svc:2222", "dist-mnist-ps-1." + ns + ".svc:2222"},
			"worker": []any{
				"dist-mnist-worker-0." + ns + ".svc:2222", "dist-mnist-worker-1." + ns + ".svc:2222", "dist-mnist-worker-2." + ns + ".svc:2222",
			},
		}))

		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("dist-mnist").Status, "Created")).To(BeTrue())
		}).Should(Succeed())
		setAll("dist-mnist", 5, corev1.PodRunning)
		Eventually(func(g Gomega) {
			job := getJob("dist-mnist")
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeTrue())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.TFJobReplicaTypeWorker, HaveField("Active", int32(3))))
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.TFJobReplicaTypePS, HaveField("Active", int32(2))))
			g.Expect(job.Status.StartTime).NotTo(BeNil())
		}).Should(Succeed())

		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[2], corev1.PodSucceeded)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob("dist-mnist")
			g.Expect(testutil.ConditionTrue(&job.Status, "Succeeded")).To(BeTrue())
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeFalse())
			g.Expect(job.Status.CompletionTime).NotTo(BeNil())
		}).Should(Succeed())
		// cleanPodPolicy defaults to None, as upstream: nothing is deleted.
		Consistently(func(g Gomega) {
			podsOf(g, "dist-mnist", 5)
		}, 2*time.Second).Should(Succeed())
	})

	It("runs a Chief/Worker/Evaluator manifest: the evaluator is outside the cluster spec, the chief decides success", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, chiefWorkerEvalManifest)
		Expect(err).NotTo(HaveOccurred())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "estimator", 4) }).Should(Succeed())
		Expect(testutil.PodNames(pods)).To(Equal([]string{"estimator-chief-0", "estimator-evaluator-0", "estimator-worker-0", "estimator-worker-1"}))
		chief, eval := pods[0], pods[1]
		Expect(chief.Labels).To(HaveKeyWithValue(kubeflowv1.JobRoleLabel, "master"))
		Expect(pods[2].Labels).NotTo(HaveKey(kubeflowv1.JobRoleLabel))
		Expect(chief.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever), "TFJob's default restart policy is Never")

		raw, _ := testutil.EnvValue(&eval, "tensorflow", "TF_CONFIG")
		var cfg tfjob.TFConfig
		Expect(json.Unmarshal([]byte(raw), &cfg)).To(Succeed())
		Expect(cfg.Task).To(Equal(tfjob.TaskSpec{Type: "evaluator", Index: 0}))
		Expect(cfg.Cluster).To(HaveKeyWithValue("chief", []any{"estimator-chief-0." + ns + ".svc:3333"}), "the user's tfjob-port wins")
		Expect(cfg.Cluster).NotTo(HaveKey("evaluator"))

		setAll("estimator", 4, corev1.PodRunning)
		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("estimator").Status, "Running")).To(BeTrue())
		}).Should(Succeed())
		// Workers finishing do not finish the job while the chief runs.
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[2], corev1.PodSucceeded)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("estimator").Status, "Succeeded")).To(BeFalse())
		}, 2*time.Second).Should(Succeed())

		Expect(testutil.SetPodPhase(ctx, suite.Client, &chief, corev1.PodSucceeded)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("estimator").Status, "Succeeded")).To(BeTrue())
			// cleanPodPolicy Running: the pods still running are deleted,
			// the finished ones stay.
			pods, err := testutil.JobPods(ctx, suite.Client, ns, "estimator")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(testutil.PodNames(pods)).To(ConsistOf("estimator-chief-0", "estimator-worker-0"))
		}).Should(Succeed())
	})

	It("waits for every worker with successPolicy AllWorkers", func() {
		job := testutil.MakeTFJob("all-workers", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 2).
			SuccessPolicy(kubeflowv1.SuccessPolicyAllWorkers).Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "all-workers", 2) }).Should(Succeed())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[0], corev1.PodSucceeded)).To(Succeed())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[1], corev1.PodRunning)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("all-workers").Status, "Running")).To(BeTrue())
		}).Should(Succeed())
		Expect(testutil.ConditionTrue(&getJob("all-workers").Status, "Succeeded")).To(BeFalse())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[1], corev1.PodSucceeded)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob("all-workers").Status, "Succeeded")).To(BeTrue())
		}).Should(Succeed())
	})

	It("gives a single-replica job no TF_CONFIG", func() {
		Expect(suite.Client.Create(ctx, testutil.MakeTFJob("local", ns).Replica(kubeflowv1.TFJobReplicaTypeWorker, 1).Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			pods := podsOf(g, "local", 1)
			_, ok := testutil.EnvValue(&pods[0], "tensorflow", "TF_CONFIG")
			g.Expect(ok).To(BeFalse())
		}).Should(Succeed())
	})
})

func ptr[T any](v T) *T { return &v }
