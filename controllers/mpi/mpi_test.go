package mpi_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/mpi"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// Upstream's tensorflow-benchmarks example with two GPU workers of two slots
// each and a CPU-only launcher. Its container is not called "mpi", so the
// first container is the main one.
const benchmarksManifest = `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: tensorflow-benchmarks
spec:
  slotsPerWorker: 2
  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - image: mpioperator/tensorflow-benchmarks:latest
            name: tensorflow-benchmarks
            command:
            - mpirun
            - --allow-run-as-root
            - -np
            - "4"
            - -bind-to
            - none
            - -map-by
            - slot
            - -x
            - NCCL_DEBUG=INFO
            - -x
            - LD_LIBRARY_PATH
            - -x
            - PATH
            - -mca
            - pml
            - ob1
            - -mca
            - btl
            - ^openib
            - python
            - scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
            - --model=resnet101
            - --batch_size=64
            - --variable_update=horovod
            resources:
              limits:
                cpu: "1"
                memory: 2Gi
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - image: mpioperator/tensorflow-benchmarks:latest
            name: tensorflow-benchmarks
            resources:
              limits:
                nvidia.com/gpu: 1
`

const kubexecScript = `#!/bin/sh
set -x
POD_NAME=$1
shift
/opt/kube/kubectl exec ${POD_NAME} --container tensorflow-benchmarks -- /bin/sh -c "$*"`

var _ = Describe("MPIJob", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	getJob := func(g Gomega, name string) *kubeflowv1.MPIJob {
		job := &kubeflowv1.MPIJob{}
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
		return job
	}
	get := func(g Gomega, name string, obj client.Object) {
		g.ExpectWithOffset(1, suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	}
	podsOf := func(g Gomega, name string, n int) []corev1.Pod {
		pods, err := testutil.JobPods(ctx, suite.Client, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).To(HaveLen(n))
		return pods
	}
	// controlledBy matches the owner references of an object the job
	// controls, so that deleting the job collects it.
	controlledBy := func(job *kubeflowv1.MPIJob) types.GomegaMatcher {
		return ConsistOf(And(
			HaveField("APIVersion", "kubeflow.org/v1"), HaveField("Kind", "MPIJob"),
			HaveField("Name", job.Name), HaveField("UID", job.UID),
			HaveField("Controller", HaveValue(BeTrue())),
		))
	}
	configVolume := func(pod *corev1.Pod) *corev1.ConfigMapVolumeSource {
		for _, v := range pod.Spec.Volumes {
			if v.Name == "mpi-job-config" {
				return v.ConfigMap
			}
		}
		return nil
	}
	mountsConfig := ContainElement(And(HaveField("Name", "mpi-job-config"), HaveField("MountPath", "/etc/mpi")))
	// canExec asks the API server's RBAC authorizer whether a service
	// account may open a shell in a pod.
	canExec := func(g Gomega, sa, pod string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec", Name: pod,
			},
		}}
		g.ExpectWithOffset(1, suite.Client.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}

	It("runs the tensorflow-benchmarks manifest: hostfile, launcher RBAC, pod wiring, Running, Succeeded", func() {
		_, err := testutil.ApplyManifest(ctx, suite.Client, ns, benchmarksManifest)
		Expect(err).NotTo(HaveOccurred())
		const name = "tensorflow-benchmarks"
		job := getJob(Default, name)
		workers := []string{name + "-worker-0", name + "-worker-1"}

		By("the ConfigMap: one hostfile line per worker, kubexec.sh into the workers' main container")
		cm := &corev1.ConfigMap{}
		Eventually(func(g Gomega) { get(g, name+"-config", cm) }).Should(Succeed())
		Expect(cm.Data).To(Equal(map[string]string{
			"hostfile":          "tensorflow-benchmarks-worker-0 slots=2\ntensorflow-benchmarks-worker-1 slots=2\n",
			"kubexec.sh":        kubexecScript,
			"discover_hosts.sh": "#!/bin/sh\n",
		}))
		Expect(cm.OwnerReferences).To(controlledBy(job))

		By("the launcher's ServiceAccount, Role and RoleBinding")
		sa, role, rb := &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}
		Eventually(func(g Gomega) {
			get(g, name+"-launcher", sa)
			get(g, name+"-launcher", role)
			get(g, name+"-launcher", rb)
		}).Should(Succeed())
		for _, obj := range []client.Object{sa, role, rb} {
			Expect(obj.GetOwnerReferences()).To(controlledBy(job), "%T", obj)
		}
		Expect(role.Rules).To(ConsistOf(
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}, ResourceNames: workers},
		))
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: name + "-launcher", Namespace: ns}}))
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name + "-launcher"}))

		By("RBAC: the launcher may exec into its workers and into nothing else")
		Eventually(func(g Gomega) {
			for _, w := range workers {
				g.Expect(canExec(g, name+"-launcher", w)).To(BeTrue(), "exec into %s", w)
			}
		}).Should(Succeed())
		Expect(canExec(Default, name+"-launcher", name+"-launcher")).To(BeFalse())
		Expect(canExec(Default, name+"-launcher", "some-other-pod")).To(BeFalse())
		Expect(canExec(Default, "default", workers[0])).To(BeFalse(), "only the launcher's identity is granted")

		By("the pods: no services, the launcher wired for mpirun, the workers idle until exec'd into")
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, name, 3) }).Should(Succeed())
		Expect(testutil.PodNames(pods)).To(Equal([]string{name + "-launcher", workers[0], workers[1]}))
		svcs, err := testutil.JobServices(ctx, suite.Client, ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(svcs).To(BeEmpty(), "MPI v1 reaches workers by kubectl exec, not by service")
		for _, p := range pods {
			Expect(p.OwnerReferences).To(controlledBy(job), p.Name)
			Expect(p.Spec.Containers[0].VolumeMounts).To(mountsConfig, p.Name)
		}

		launcher := pods[0]
		Expect(launcher.Labels).To(And(
			HaveKeyWithValue(kubeflowv1.OperatorNameLabel, mpi.ControllerName),
			HaveKeyWithValue(kubeflowv1.ReplicaTypeLabel, "launcher"),
			HaveKeyWithValue(kubeflowv1.JobRoleLabel, "master"),
		))
		Expect(launcher.Spec.ServiceAccountName).To(Equal(name + "-launcher"))
		Expect(launcher.Spec.Containers[0].Command).To(HaveExactElements("mpirun", "--allow-run-as-root", "-np", "4", "-bind-to", "none",
			"-map-by", "slot", "-x", "NCCL_DEBUG=INFO", "-x", "LD_LIBRARY_PATH", "-x", "PATH", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
			"python", "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py", "--model=resnet101", "--batch_size=64", "--variable_update=horovod"))
		for k, v := range map[string]string{
			"OMPI_MCA_plm_rsh_agent":         "/etc/mpi/kubexec.sh",
			"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
			"I_MPI_HYDRA_BOOTSTRAP":          "rsh",
			"I_MPI_HYDRA_BOOTSTRAP_EXEC":     "/etc/mpi/kubexec.sh",
			"NVIDIA_VISIBLE_DEVICES":         "",
			"NVIDIA_DRIVER_CAPABILITIES":     "",
		} {
			got, ok := testutil.EnvValue(&launcher, name, k)
			Expect(ok).To(BeTrue(), "launcher env %s", k)
			Expect(got).To(Equal(v), "launcher env %s", k)
		}
		Expect(launcher.Spec.Containers[0].VolumeMounts).To(ContainElement(And(HaveField("Name", "mpi-job-kubectl"), HaveField("MountPath", "/opt/kube"))))
		Expect(launcher.Spec.InitContainers).To(ConsistOf(And(
			HaveField("Name", "kubectl-delivery"), HaveField("Image", mpi.DefaultKubectlDeliveryImage))))
		lv := configVolume(&launcher)
		Expect(lv).NotTo(BeNil())
		Expect(lv.Name).To(Equal(name + "-config"))
		Expect(lv.Items).To(Equal([]corev1.KeyToPath{
			{Key: "kubexec.sh", Path: "kubexec.sh", Mode: ptr[int32](0o555)},
			{Key: "hostfile", Path: "hostfile", Mode: ptr[int32](0o444)},
			{Key: "discover_hosts.sh", Path: "discover_hosts.sh", Mode: ptr[int32](0o555)},
		}))

		for _, w := range pods[1:] {
			Expect(w.Labels).NotTo(HaveKey(kubeflowv1.JobRoleLabel))
			Expect(w.Spec.ServiceAccountName).To(BeEmpty())
			Expect(w.Spec.Containers[0].Command).To(Equal([]string{"sleep"}))
			Expect(w.Spec.Containers[0].Args).To(Equal([]string{"365d"}))
			_, ok := testutil.EnvValue(&w, name, "NVIDIA_VISIBLE_DEVICES")
			Expect(ok).To(BeFalse(), "a GPU worker must see its GPUs")
			wv := configVolume(&w)
			Expect(wv).NotTo(BeNil())
			Expect(wv.Name).To(Equal(name + "-config"))
			Expect(wv.Items).To(Equal([]corev1.KeyToPath{{Key: "kubexec.sh", Path: "kubexec.sh", Mode: ptr[int32](0o555)}}))
		}

		By("discover_hosts.sh follows the running workers")
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[1], corev1.PodRunning)).To(Succeed())
		Eventually(func(g Gomega) {
			get(g, name+"-config", cm)
			g.Expect(cm.Data).To(HaveKeyWithValue("discover_hosts.sh", "#!/bin/sh\necho tensorflow-benchmarks-worker-0:2\n"))
		}).Should(Succeed())

		By("Running once the launcher runs, as upstream, though worker 1 is still pending")
		Expect(testutil.SetPodPhase(ctx, suite.Client, &launcher, corev1.PodRunning)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob(g, name)
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeTrue())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.MPIJobReplicaTypeLauncher, HaveField("Active", int32(1))))
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.MPIJobReplicaTypeWorker, HaveField("Active", int32(1))))
		}).Should(Succeed())
		Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[2], corev1.PodRunning)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob(g, name)
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.MPIJobReplicaTypeWorker, HaveField("Active", int32(2))))
			get(g, name+"-config", cm)
			g.Expect(cm.Data).To(HaveKeyWithValue("discover_hosts.sh",
				"#!/bin/sh\necho tensorflow-benchmarks-worker-0:2\necho tensorflow-benchmarks-worker-1:2\n"))
		}).Should(Succeed())

		By("Succeeded when the launcher succeeds; cleanPodPolicy Running stops the idle workers")
		Expect(testutil.SetPodPhase(ctx, suite.Client, &launcher, corev1.PodSucceeded)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob(g, name)
			g.Expect(testutil.ConditionTrue(&job.Status, "Succeeded")).To(BeTrue())
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeFalse())
			g.Expect(testutil.PodNames(podsOf(g, name, 1))).To(Equal([]string{name + "-launcher"}))
		}).Should(Succeed())
	})

	It("fails the job when the launcher fails under restartPolicy Never", func() {
		job := testutil.MakeMPIJob("pi", ns).
			ReplicaSpec(kubeflowv1.MPIJobReplicaTypeLauncher, testutil.MakeReplica(1, "mpi").RestartPolicy("Never").Obj()).
			Workers(2).Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())
		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "pi", 3) }).Should(Succeed())
		for i := range pods {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(testutil.ConditionTrue(&getJob(g, "pi").Status, "Running")).To(BeTrue())
		}).Should(Succeed())

		Expect(testutil.FailPod(ctx, suite.Client, &pods[0], 1)).To(Succeed())
		Eventually(func(g Gomega) {
			job := getJob(g, "pi")
			failed := testutil.Condition(&job.Status, "Failed")
			g.Expect(failed).NotTo(BeNil())
			g.Expect(failed.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(failed.Reason).To(Equal("MPIJobFailed"))
			g.Expect(testutil.ConditionTrue(&job.Status, "Succeeded")).To(BeFalse())
			g.Expect(testutil.ConditionTrue(&job.Status, "Running")).To(BeFalse())
			g.Expect(job.Status.ReplicaStatuses).To(HaveKeyWithValue(kubeflowv1.MPIJobReplicaTypeLauncher, HaveField("Failed", int32(1))))
		}).Should(Succeed())
	})

	It("puts back dependents that drifted or were deleted, and follows a scale-up", func() {
		Expect(suite.Client.Create(ctx, testutil.MakeMPIJob("pi", ns).Launcher().Workers(2).SlotsPerWorker(4).Obj())).To(Succeed())
		cm, role := &corev1.ConfigMap{}, &rbacv1.Role{}
		Eventually(func(g Gomega) {
			get(g, "pi-config", cm)
			get(g, "pi-launcher", role)
			get(g, "pi-launcher", &rbacv1.RoleBinding{})
		}).Should(Succeed())
		const hostfile = "pi-worker-0 slots=4\npi-worker-1 slots=4\n"
		Expect(cm.Data).To(HaveKeyWithValue("hostfile", hostfile))

		By("a hand-edited hostfile and a widened Role are restored")
		Expect(update(ctx, cm, func() { cm.Data["hostfile"] = "intruder slots=64\n" })).To(Succeed())
		Expect(update(ctx, role, func() { role.Rules[1].ResourceNames = nil })).To(Succeed())
		Eventually(func(g Gomega) {
			get(g, "pi-config", cm)
			g.Expect(cm.Data).To(HaveKeyWithValue("hostfile", hostfile))
			get(g, "pi-launcher", role)
			g.Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", []string{"pi-worker-0", "pi-worker-1"})))
		}).Should(Succeed())

		By("a deleted RoleBinding is recreated")
		rb := &rbacv1.RoleBinding{}
		get(Default, "pi-launcher", rb)
		Expect(suite.Client.Delete(ctx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			fresh := &rbacv1.RoleBinding{}
			get(g, "pi-launcher", fresh)
			g.Expect(fresh.UID).NotTo(Equal(rb.UID))
		}).Should(Succeed())

		By("scaling the workers updates the hostfile and the Role")
		job := &kubeflowv1.MPIJob{}
		get(Default, "pi", job)
		Expect(update(ctx, job, func() { *job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Replicas = 3 })).To(Succeed())
		Eventually(func(g Gomega) {
			get(g, "pi-config", cm)
			g.Expect(cm.Data).To(HaveKeyWithValue("hostfile", hostfile+"pi-worker-2 slots=4\n"))
			get(g, "pi-launcher", role)
			g.Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", []string{"pi-worker-0", "pi-worker-1", "pi-worker-2"})))
			podsOf(g, "pi", 4)
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(canExec(g, "pi-launcher", "pi-worker-2")).To(BeTrue()) }).Should(Succeed())
	})

	It("binds the user's ServiceAccount without taking it over, and lists a GPU launcher as a host", func() {
		userSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: ns}}
		Expect(suite.Client.Create(ctx, userSA)).To(Succeed())
		job := testutil.MakeMPIJob("gpu", ns).
			ReplicaSpec(kubeflowv1.MPIJobReplicaTypeLauncher, testutil.MakeReplica(1, "mpi").Limit("nvidia.com/gpu", "1").Obj()).
			LauncherServiceAccount("trainer").
			Workers(1).Obj()
		Expect(suite.Client.Create(ctx, job)).To(Succeed())

		rb, cm := &rbacv1.RoleBinding{}, &corev1.ConfigMap{}
		Eventually(func(g Gomega) {
			get(g, "gpu-launcher", rb)
			get(g, "gpu-config", cm)
		}).Should(Succeed())
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainer", Namespace: ns}}))
		Expect(cm.Data).To(HaveKeyWithValue("hostfile", "gpu-launcher slots=1\ngpu-worker-0 slots=1\n"))
		// The ServiceAccount comes before the RoleBinding in every pass.
		err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gpu-launcher"}, &corev1.ServiceAccount{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no launcher ServiceAccount of our own: %v", err)
		get(Default, "trainer", userSA)
		Expect(userSA.OwnerReferences).To(BeEmpty(), "the user's ServiceAccount outlives the job")

		var pods []corev1.Pod
		Eventually(func(g Gomega) { pods = podsOf(g, "gpu", 2) }).Should(Succeed())
		launcher := pods[0]
		Expect(launcher.Name).To(Equal("gpu-launcher"))
		Expect(launcher.Spec.ServiceAccountName).To(Equal("trainer"))
		_, ok := testutil.EnvValue(&launcher, "mpi", "NVIDIA_VISIBLE_DEVICES")
		Expect(ok).To(BeFalse(), "a launcher with a GPU must see it")
		Eventually(func(g Gomega) { g.Expect(canExec(g, "trainer", "gpu-worker-0")).To(BeTrue()) }).Should(Succeed())
	})

	It("refuses a same-named ConfigMap it does not control and starts no pods", func() {
		foreign := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "pi-config", Namespace: ns},
			Data:       map[string]string{"hostfile": "elsewhere slots=8\n"},
		}
		Expect(suite.Client.Create(ctx, foreign)).To(Succeed())
		Expect(suite.Client.Create(ctx, testutil.MakeMPIJob("pi", ns).Launcher().Workers(1).Obj())).To(Succeed())

		// The ServiceAccount comes first and proves the job was reconciled.
		Eventually(func(g Gomega) { get(g, "pi-launcher", &corev1.ServiceAccount{}) }).Should(Succeed())
		Consistently(func(g Gomega) {
			podsOf(g, "pi", 0)
			cm := &corev1.ConfigMap{}
			get(g, "pi-config", cm)
			g.Expect(cm.Data).To(Equal(foreign.Data))
			g.Expect(cm.OwnerReferences).To(BeEmpty())
		}, 2*time.Second).Should(Succeed())
	})
})

// update applies mutate to the latest version of obj, retrying on conflicts
// with the operator's own writes.
func update(ctx context.Context, obj client.Object, mutate func()) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return suite.Client.Update(ctx, obj)
	})
}

func ptr[T any](v T) *T { return &v }
