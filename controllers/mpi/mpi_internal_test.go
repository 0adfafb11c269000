package mpi

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
)

const (
	launcher = kubeflowv1.MPIJobReplicaTypeLauncher
	worker   = kubeflowv1.MPIJobReplicaTypeWorker
)

// jobOpt adjusts a test MPIJob; these tests cannot use internal/testutil,
// which imports this package through the operator's registry.
type jobOpt func(*kubeflowv1.MPIJob)

// newJob returns a defaulted MPIJob "pi" with a launcher and n workers, each
// with one "mpi" container.
func newJob(workers int32, opts ...jobOpt) *kubeflowv1.MPIJob {
	replica := func(n int32) *kubeflowv1.ReplicaSpec {
		return &kubeflowv1.ReplicaSpec{
			Replicas: ptr.To(n),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "mpi", Image: "mpi:1"}},
			}},
		}
	}
	job := &kubeflowv1.MPIJob{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "ns"},
		Spec: kubeflowv1.MPIJobSpec{MPIReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			launcher: replica(1),
			worker:   replica(workers),
		}},
	}
	for _, o := range opts {
		o(job)
	}
	job.Default()
	return job
}

func slots(n int32) jobOpt { return func(j *kubeflowv1.MPIJob) { j.Spec.SlotsPerWorker = ptr.To(n) } }

func limit(rtype kubeflowv1.ReplicaType, name corev1.ResourceName) jobOpt {
	return func(j *kubeflowv1.MPIJob) {
		j.Spec.MPIReplicaSpecs[rtype].Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{name: resource.MustParse("1")}
	}
}

func containers(rtype kubeflowv1.ReplicaType, names ...string) jobOpt {
	return func(j *kubeflowv1.MPIJob) {
		var cs []corev1.Container
		for _, n := range names {
			cs = append(cs, corev1.Container{Name: n, Image: n + ":1"})
		}
		j.Spec.MPIReplicaSpecs[rtype].Template.Spec.Containers = cs
	}
}

func mainContainer(name string) jobOpt {
	return func(j *kubeflowv1.MPIJob) { j.Spec.MainContainer = name }
}

func env(rtype kubeflowv1.ReplicaType, name, value string) jobOpt {
	return func(j *kubeflowv1.MPIJob) {
		c := &j.Spec.MPIReplicaSpecs[rtype].Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func TestHostfile(t *testing.T) {
	tests := map[string]struct {
		job  *kubeflowv1.MPIJob
		want string
	}{
		"one line per worker with slotsPerWorker": {
			job:  newJob(2, slots(2)),
			want: "pi-worker-0 slots=2\npi-worker-1 slots=2\n",
		},
		"slotsPerWorker defaults to 1": {
			job:  newJob(3),
			want: "pi-worker-0 slots=1\npi-worker-1 slots=1\npi-worker-2 slots=1\n",
		},
		"no workers, no hosts": {
			job:  newJob(0, slots(4)),
			want: "",
		},
		"a launcher with an NVIDIA GPU runs ranks too and comes first": {
			job:  newJob(1, slots(2), limit(launcher, "nvidia.com/gpu")),
			want: "pi-launcher slots=2\npi-worker-0 slots=2\n",
		},
		"any vendor's GPU counts": {
			job:  newJob(1, limit(launcher, "gpu.intel.com/i915")),
			want: "pi-launcher slots=1\npi-worker-0 slots=1\n",
		},
		"GPUs on the workers do not make the launcher a host": {
			job:  newJob(1, limit(worker, "nvidia.com/gpu")),
			want: "pi-worker-0 slots=1\n",
		},
		"other extended resources are not GPUs": {
			job:  newJob(1, limit(launcher, "example.com/fpga")),
			want: "pi-worker-0 slots=1\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(hostfile(tc.job)).To(Equal(tc.want), "hostfile")
		})
	}
}

func TestDiscoverHosts(t *testing.T) {
	tests := map[string]struct {
		job     *kubeflowv1.MPIJob
		running []string
		want    string
	}{
		"nothing running yet": {
			job:  newJob(2),
			want: "#!/bin/sh\n",
		},
		"only the running workers": {
			job:     newJob(3, slots(2)),
			running: []string{"pi-worker-0", "pi-worker-2"},
			want:    "#!/bin/sh\necho pi-worker-0:2\necho pi-worker-2:2\n",
		},
		"a GPU launcher is always available": {
			job:     newJob(2, limit(launcher, "nvidia.com/gpu")),
			running: []string{"pi-worker-1"},
			want:    "#!/bin/sh\necho pi-launcher:1\necho pi-worker-1:1\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(discoverHosts(tc.job, tc.running)).To(Equal(tc.want), "discover_hosts.sh")
		})
	}
}

func TestKubexec(t *testing.T) {
	script := func(container string) string {
		return "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} --container " + container + " -- /bin/sh -c \"$*\""
	}
	tests := map[string]struct {
		job  *kubeflowv1.MPIJob
		want string
	}{
		"the default main container": {
			job:  newJob(1),
			want: script("mpi"),
		},
		"an mpi container that is not first": {
			job:  newJob(1, containers(worker, "sidecar", "mpi")),
			want: script("mpi"),
		},
		"spec.mainContainer": {
			job:  newJob(1, mainContainer("trainer"), containers(worker, "sidecar", "trainer")),
			want: script("trainer"),
		},
		"no container of that name on the workers: the first, as the engine": {
			job:  newJob(1, containers(worker, "horovod")),
			want: script("horovod"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubexec(tc.job)).To(Equal(tc.want), "kubexec.sh")
		})
	}
}

func TestLauncherRules(t *testing.T) {
	readPods := rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	execInto := func(pods ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}, ResourceNames: pods}
	}
	tests := map[string]struct {
		job  *kubeflowv1.MPIJob
		want []rbacv1.PolicyRule
	}{
		"exec into exactly the workers": {
			job:  newJob(2),
			want: []rbacv1.PolicyRule{readPods, execInto("pi-worker-0", "pi-worker-1")},
		},
		"a GPU launcher runs its ranks locally and gets no exec into itself": {
			job:  newJob(3, limit(launcher, "nvidia.com/gpu")),
			want: []rbacv1.PolicyRule{readPods, execInto("pi-worker-0", "pi-worker-1", "pi-worker-2")},
		},
		"no workers: no exec rule, rather than one without resourceNames that matches every pod": {
			job:  newJob(0),
			want: []rbacv1.PolicyRule{readPods},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(launcherRules(tc.job)).To(Equal(tc.want), "rules")
		})
	}
}

func TestRoleBindingSubject(t *testing.T) {
	tests := map[string]struct {
		job       *kubeflowv1.MPIJob
		wantSA    string
		userOwned bool
	}{
		"the job's own launcher ServiceAccount": {job: newJob(1), wantSA: "pi-launcher"},
		"the user's ServiceAccount": {
			job: newJob(1, func(j *kubeflowv1.MPIJob) {
				j.Spec.MPIReplicaSpecs[launcher].Template.Spec.ServiceAccountName = "trainer"
			}),
			wantSA:    "trainer",
			userOwned: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			owner := metav1.NewControllerRef(tc.job, Framework{}.GroupVersionKind())
			rb := roleBinding(tc.job, owner).want.(*rbacv1.RoleBinding)
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: tc.wantSA, Namespace: "ns"}}
			g.Expect(rb.Subjects).To(Equal(want), "subjects")
			g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pi-launcher"}), "roleRef")
			sa := serviceAccount(tc.job, owner)
			if sa.want.GetName() != tc.wantSA || sa.userOwned != tc.userOwned {
				t.Errorf("ServiceAccount = %s (userOwned %v), want %s (userOwned %v)", sa.want.GetName(), sa.userOwned, tc.wantSA, tc.userOwned)
			}
		})
	}
}

// podFor builds the pod of one replica as the engine does before it calls
// ConfigurePod: a copy of the template.
func podFor(t *testing.T, job *kubeflowv1.MPIJob, rtype kubeflowv1.ReplicaType) *corev1.Pod {
	t.Helper()
	tmpl := job.Spec.MPIReplicaSpecs[rtype].Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	if err := (Framework{}).ConfigurePod(job, rtype, 0, pod); err != nil {
		t.Fatalf("ConfigurePod: %v", err)
	}
	return pod
}

func envOf(c *corev1.Container) map[string][]string {
	out := map[string][]string{}
	for _, e := range c.Env {
		out[e.Name] = append(out[e.Name], e.Value)
	}
	return out
}

func TestConfigureLauncher(t *testing.T) {
	base := map[string][]string{
		"OMPI_MCA_plm_rsh_agent":         {"/etc/mpi/kubexec.sh"},
		"OMPI_MCA_orte_default_hostfile": {"/etc/mpi/hostfile"},
		"I_MPI_HYDRA_BOOTSTRAP":          {"rsh"},
		"I_MPI_HYDRA_BOOTSTRAP_EXEC":     {"/etc/mpi/kubexec.sh"},
	}
	with := func(extra map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	noGPU := map[string][]string{"NVIDIA_VISIBLE_DEVICES": {""}, "NVIDIA_DRIVER_CAPABILITIES": {""}}
	tests := map[string]struct {
		job     *kubeflowv1.MPIJob
		wantEnv map[string][]string
		wantSA  string
		// main is the container that must carry the env and mounts.
		main string
	}{
		"a CPU launcher is kept away from the node's GPUs": {
			job:     newJob(2),
			wantEnv: with(noGPU),
			wantSA:  "pi-launcher",
			main:    "mpi",
		},
		"a GPU launcher sees its GPUs": {
			job:     newJob(2, limit(launcher, "nvidia.com/gpu")),
			wantEnv: base,
			wantSA:  "pi-launcher",
			main:    "mpi",
		},
		"what the user set wins": {
			job: newJob(2,
				env(launcher, "OMPI_MCA_plm_rsh_agent", "/usr/bin/ssh"),
				env(launcher, "I_MPI_HYDRA_BOOTSTRAP", "ssh"),
				env(launcher, "NVIDIA_VISIBLE_DEVICES", "all"),
				func(j *kubeflowv1.MPIJob) {
					j.Spec.MPIReplicaSpecs[launcher].Template.Spec.ServiceAccountName = "trainer"
				}),
			wantEnv: with(map[string][]string{
				"OMPI_MCA_plm_rsh_agent":     {"/usr/bin/ssh"},
				"I_MPI_HYDRA_BOOTSTRAP":      {"ssh"},
				"NVIDIA_VISIBLE_DEVICES":     {"all"},
				"NVIDIA_DRIVER_CAPABILITIES": {""},
			}),
			wantSA: "trainer",
			main:   "mpi",
		},
		"the named main container, not the first": {
			job:     newJob(2, mainContainer("launcher"), containers(launcher, "log-shipper", "launcher")),
			wantEnv: with(noGPU),
			wantSA:  "pi-launcher",
			main:    "launcher",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pod := podFor(t, tc.job, launcher)
			if pod.Spec.ServiceAccountName != tc.wantSA {
				t.Errorf("serviceAccountName = %q, want %q", pod.Spec.ServiceAccountName, tc.wantSA)
			}
			main := engine.MainContainer(&pod.Spec, tc.main)
			if main.Name != tc.main {
				t.Fatalf("no container %q", tc.main)
			}
			g.Expect(envOf(main)).To(Equal(tc.wantEnv), "env of %s", tc.main)
			for i := range pod.Spec.Containers {
				if c := &pod.Spec.Containers[i]; c.Name != tc.main {
					g.Expect(c.Env).To(BeEmpty(), "only the main container gets env")
					g.Expect(c.VolumeMounts).To(BeEmpty(), "only the main container gets mounts")
				}
			}
			wantMounts := []corev1.VolumeMount{
				{Name: "mpi-job-kubectl", MountPath: "/opt/kube"},
				{Name: "mpi-job-config", MountPath: "/etc/mpi"},
			}
			g.Expect(main.VolumeMounts).To(Equal(wantMounts), "mounts")
			wantVolumes := []corev1.Volume{
				{Name: "mpi-job-kubectl", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "mpi-job-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "pi-config"},
					Items: []corev1.KeyToPath{
						{Key: "kubexec.sh", Path: "kubexec.sh", Mode: ptr.To[int32](0o555)},
						{Key: "hostfile", Path: "hostfile", Mode: ptr.To[int32](0o444)},
						{Key: "discover_hosts.sh", Path: "discover_hosts.sh", Mode: ptr.To[int32](0o555)},
					},
				}}},
			}
			g.Expect(pod.Spec.Volumes).To(Equal(wantVolumes), "volumes")
			if len(pod.Spec.InitContainers) != 1 {
				t.Fatalf("init containers = %v, want kubectl-delivery only", pod.Spec.InitContainers)
			}
			ic := pod.Spec.InitContainers[0]
			if ic.Name != "kubectl-delivery" || ic.Image != DefaultKubectlDeliveryImage {
				t.Errorf("init container = %s (%s), want kubectl-delivery (%s)", ic.Name, ic.Image, DefaultKubectlDeliveryImage)
			}
			g.Expect(envOf(&ic)).To(Equal(map[string][]string{"TARGET_DIR": {"/opt/kube"}, "NAMESPACE": {"ns"}}), "init container env")
			g.Expect(ic.VolumeMounts).To(Equal(wantMounts), "init container mounts")
		})
	}
}

func TestKubectlDeliveryImageOverride(t *testing.T) {
	job := newJob(1)
	pod := &corev1.Pod{Spec: *job.Spec.MPIReplicaSpecs[launcher].Template.Spec.DeepCopy()}
	if err := (Framework{KubectlDeliveryImage: "registry.example/kubectl:1"}).ConfigurePod(job, launcher, 0, pod); err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.InitContainers[0].Image; got != "registry.example/kubectl:1" {
		t.Errorf("image = %q, want the configured one", got)
	}
}

func TestConfigureWorker(t *testing.T) {
	tests := map[string]struct {
		job         *kubeflowv1.MPIJob
		wantCommand []string
		wantArgs    []string
	}{
		"no command: the worker only hosts ranks": {
			job:         newJob(2, limit(worker, "nvidia.com/gpu")),
			wantCommand: []string{"sleep"},
			wantArgs:    []string{"365d"},
		},
		"the user's command is kept": {
			job: newJob(2, func(j *kubeflowv1.MPIJob) {
				c := &j.Spec.MPIReplicaSpecs[worker].Template.Spec.Containers[0]
				c.Command, c.Args = []string{"/usr/sbin/sshd"}, []string{"-De"}
			}),
			wantCommand: []string{"/usr/sbin/sshd"},
			wantArgs:    []string{"-De"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pod := podFor(t, tc.job, worker)
			c := pod.Spec.Containers[0]
			if !slices.Equal(c.Command, tc.wantCommand) || !slices.Equal(c.Args, tc.wantArgs) {
				t.Errorf("command %v %v, want %v %v", c.Command, c.Args, tc.wantCommand, tc.wantArgs)
			}
			if len(c.Env) != 0 {
				t.Errorf("worker env = %v, want none (no NVIDIA override on workers)", c.Env)
			}
			if pod.Spec.ServiceAccountName != "" || len(pod.Spec.InitContainers) != 0 {
				t.Errorf("worker got launcher-only settings: sa %q, init %v", pod.Spec.ServiceAccountName, pod.Spec.InitContainers)
			}
			g.Expect(c.VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "mpi-job-config", MountPath: "/etc/mpi"}}), "mounts")
			wantVolumes := []corev1.Volume{{Name: "mpi-job-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "pi-config"},
				Items:                []corev1.KeyToPath{{Key: "kubexec.sh", Path: "kubexec.sh", Mode: ptr.To[int32](0o555)}},
			}}}}
			g.Expect(pod.Spec.Volumes).To(Equal(wantVolumes), "volumes")
		})
	}
}

func TestOutcome(t *testing.T) {
	tests := map[string]struct {
		replicas engine.Replicas
		want     engine.Outcome
	}{
		"launcher pending": {
			replicas: engine.Replicas{launcher: {Replicas: 1}, worker: {Replicas: 2, Running: 2}},
			want:     engine.Outcome{},
		},
		"launcher running, workers still pending": {
			replicas: engine.Replicas{launcher: {Replicas: 1, Running: 1}, worker: {Replicas: 2}},
			want:     engine.Outcome{Running: true},
		},
		"launcher succeeded, workers still running": {
			replicas: engine.Replicas{launcher: {Replicas: 1, Succeeded: 1}, worker: {Replicas: 2, Running: 2}},
			want:     engine.Outcome{Succeeded: true},
		},
		"workers succeeding do not finish the job": {
			replicas: engine.Replicas{launcher: {Replicas: 1, Running: 1}, worker: {Replicas: 2, Succeeded: 2}},
			want:     engine.Outcome{Running: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect((Framework{}).Outcome(newJob(2), tc.replicas)).To(Equal(tc.want))
		})
	}
}
