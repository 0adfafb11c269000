// Package mpi is the MPIJob (v1) adapter of the job engine: one launcher
// that runs mpirun and starts ranks on the workers through `kubectl exec`,
// with the hostfile, the remote-shell script and the launcher's RBAC that
// this needs.
package mpi

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
)

// ControllerName is upstream's name for the MPIJob controller; pods carry it
// in the operator-name label.
const ControllerName = "mpijob-controller"

// DefaultKubectlDeliveryImage is upstream's default image of the launcher's
// init container that puts kubectl where kubexec.sh calls it.
const DefaultKubectlDeliveryImage = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"

// Names and paths that launcher images and mpirun rely on; upstream's.
const (
	configSuffix   = "-config"
	launcherSuffix = "-launcher"

	configVolumeName  = "mpi-job-config"
	configMountPath   = "/etc/mpi"
	kubectlVolumeName = "mpi-job-kubectl"
	kubectlMountPath  = "/opt/kube"
	kubectlDelivery   = "kubectl-delivery"

	hostfileKey      = "hostfile"
	kubexecKey       = "kubexec.sh"
	discoverHostsKey = "discover_hosts.sh"

	// iMPIDefaultBootstrap makes Intel MPI's Hydra start ranks through an
	// rsh-like agent, which kubexec.sh is.
	iMPIDefaultBootstrap = "rsh"
)

var (
	scriptMode   = ptr.To[int32](0o555)
	hostfileMode = ptr.To[int32](0o444)
)

// Framework implements engine.Framework and engine.DependentsReconciler for
// MPIJob.
type Framework struct {
	// KubectlDeliveryImage is the launcher's init-container image that
	// copies kubectl to /opt/kube; empty means DefaultKubectlDeliveryImage.
	KubectlDeliveryImage string
}

var (
	_ engine.Framework            = Framework{}
	_ engine.DependentsReconciler = Framework{}
	_ engine.PodNamer             = Framework{}
)

func (Framework) ControllerName() string { return ControllerName }

// FrameworkName is training-operator's name for the framework.
func (Framework) FrameworkName() string { return kubeflowv1.MPIJobFrameworkName }

func (Framework) GroupVersionKind() schema.GroupVersionKind {
	return kubeflowv1.GroupVersion.WithKind(kubeflowv1.MPIJobKind)
}

func (Framework) NewJob() engine.Job { return &kubeflowv1.MPIJob{} }

func (Framework) ReplicaTypes() []kubeflowv1.ReplicaType {
	return []kubeflowv1.ReplicaType{kubeflowv1.MPIJobReplicaTypeLauncher, kubeflowv1.MPIJobReplicaTypeWorker}
}

func (Framework) MainContainerName(job engine.Job) string {
	return mainContainerName(job.(*kubeflowv1.MPIJob))
}

// ServicePort: none. The launcher reaches workers by pod name through the
// API server (kubectl exec), never over the pod network, so v1 creates no
// services, as upstream.
func (Framework) ServicePort(engine.Job, kubeflowv1.ReplicaType) (corev1.ServicePort, bool) {
	return corev1.ServicePort{}, false
}

func (Framework) IsMaster(_ engine.Job, rtype kubeflowv1.ReplicaType, _ int) bool {
	return rtype == kubeflowv1.MPIJobReplicaTypeLauncher
}

func (f Framework) ConfigurePod(job engine.Job, rtype kubeflowv1.ReplicaType, _ int, pod *corev1.Pod) error {
	mpi := job.(*kubeflowv1.MPIJob)
	switch rtype {
	case kubeflowv1.MPIJobReplicaTypeLauncher:
		f.configureLauncher(mpi, pod)
	case kubeflowv1.MPIJobReplicaTypeWorker:
		configureWorker(mpi, pod)
	}
	return nil
}

// Outcome: the launcher's mpirun is the job, so its exit decides. As
// upstream, the job is Running once the launcher runs, whether or not every
// worker is up yet: mpirun itself waits for its ranks.
func (Framework) Outcome(_ engine.Job, replicas engine.Replicas) engine.Outcome {
	l, ok := replicas[kubeflowv1.MPIJobReplicaTypeLauncher]
	if !ok || l.Replicas == 0 {
		return engine.Outcome{}
	}
	return engine.Outcome{
		Succeeded: replicas.AllSucceeded(kubeflowv1.MPIJobReplicaTypeLauncher),
		Running:   l.Running > 0,
	}
}

func (f Framework) kubectlDeliveryImage() string {
	if f.KubectlDeliveryImage != "" {
		return f.KubectlDeliveryImage
	}
	return DefaultKubectlDeliveryImage
}

// configureLauncher gives the launcher what mpirun needs to reach the
// workers: kubectl, the API identity allowed to exec into them, the hostfile
// and kubexec.sh as Open MPI's and Intel MPI's remote shell.
func (f Framework) configureLauncher(job *kubeflowv1.MPIJob, pod *corev1.Pod) {
	main := mainContainerName(job)
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = launcherName(job)
	}
	kubexec := configMountPath + "/" + kubexecKey
	engine.SetEnv(pod, main,
		corev1.EnvVar{Name: "OMPI_MCA_plm_rsh_agent", Value: kubexec},
		corev1.EnvVar{Name: "OMPI_MCA_orte_default_hostfile", Value: configMountPath + "/" + hostfileKey},
		corev1.EnvVar{Name: "I_MPI_HYDRA_BOOTSTRAP", Value: iMPIDefaultBootstrap},
		corev1.EnvVar{Name: "I_MPI_HYDRA_BOOTSTRAP_EXEC", Value: kubexec},
	)
	if !isGPULauncher(job) {
		// The NVIDIA container runtime would otherwise expose every GPU
		// of the node to a launcher that was granted none.
		engine.SetEnv(pod, main,
			corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: ""},
			corev1.EnvVar{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: ""},
		)
	}

	mounts := []corev1.VolumeMount{
		{Name: kubectlVolumeName, MountPath: kubectlMountPath},
		{Name: configVolumeName, MountPath: configMountPath},
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            kubectlDelivery,
		Image:           f.kubectlDeliveryImage(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			{Name: "TARGET_DIR", Value: kubectlMountPath},
			{Name: "NAMESPACE", Value: job.Namespace},
		},
		VolumeMounts: mounts,
		Resources:    kubectlDeliveryResources(),
	})
	if c := engine.MainContainer(&pod.Spec, main); c != nil {
		c.VolumeMounts = append(c.VolumeMounts, mounts...)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: kubectlVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		configVolume(job, []corev1.KeyToPath{
			{Key: kubexecKey, Path: kubexecKey, Mode: scriptMode},
			{Key: hostfileKey, Path: hostfileKey, Mode: hostfileMode},
			{Key: discoverHostsKey, Path: discoverHostsKey, Mode: scriptMode},
		}),
	)
}

// configureWorker keeps a worker alive for the ranks mpirun starts in it,
// and mounts kubexec.sh, whose path Open MPI checks on every rank.
func configureWorker(job *kubeflowv1.MPIJob, pod *corev1.Pod) {
	c := engine.MainContainer(&pod.Spec, mainContainerName(job))
	if c == nil {
		return
	}
	if len(c.Command) == 0 {
		// The image's entrypoint would start training on its own; the
		// worker only hosts the ranks the launcher execs into it.
		c.Command = []string{"sleep"}
		c.Args = []string{"365d"}
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: configVolumeName, MountPath: configMountPath})
	pod.Spec.Volumes = append(pod.Spec.Volumes, configVolume(job, []corev1.KeyToPath{
		{Key: kubexecKey, Path: kubexecKey, Mode: scriptMode},
	}))
}

func configVolume(job *kubeflowv1.MPIJob, items []corev1.KeyToPath) corev1.Volume {
	return corev1.Volume{
		Name: configVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMapName(job)},
			Items:                items,
		}},
	}
}

func kubectlDeliveryResources() corev1.ResourceRequirements {
	l := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("100m"),
		corev1.ResourceMemory:           resource.MustParse("512Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("5Gi"),
	}
	return corev1.ResourceRequirements{Limits: l, Requests: l.DeepCopy()}
}

// isGPULauncher reports whether the launcher was granted a GPU, as upstream
// tells: a limit on a resource named like one (nvidia.com/gpu, amd.com/gpu,
// gpu.intel.com/i915). Limits suffice: the API server rejects an extended
// resource requested without a limit.
func isGPULauncher(job *kubeflowv1.MPIJob) bool {
	spec := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]
	if spec == nil {
		return false
	}
	for _, c := range spec.Template.Spec.Containers {
		for name := range c.Resources.Limits {
			if strings.Contains(string(name), "gpu") {
				return true
			}
		}
	}
	return false
}

func mainContainerName(job *kubeflowv1.MPIJob) string {
	if job.Spec.MainContainer != "" {
		return job.Spec.MainContainer
	}
	return kubeflowv1.MPIJobDefaultContainerName
}

// launcherName names the launcher's ServiceAccount, Role and RoleBinding.
func launcherName(job *kubeflowv1.MPIJob) string { return job.Name + launcherSuffix }

func configMapName(job *kubeflowv1.MPIJob) string { return job.Name + configSuffix }

func slotsPerWorker(job *kubeflowv1.MPIJob) int32 {
	if job.Spec.SlotsPerWorker != nil {
		return *job.Spec.SlotsPerWorker
	}
	return 1
}

func workerReplicas(job *kubeflowv1.MPIJob) int {
	if spec := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]; spec != nil && spec.Replicas != nil {
		return int(*spec.Replicas)
	}
	return 0
}

// workerPodNames are the names the engine gives the worker pods; the
// hostfile, kubexec.sh and the Role all address workers by them.
func workerPodNames(job *kubeflowv1.MPIJob) []string {
	names := make([]string, workerReplicas(job))
	for i := range names {
		names[i] = engine.ReplicaName(job.Name, kubeflowv1.MPIJobReplicaTypeWorker, i)
	}
	return names
}

// PodName names the launcher "<job>-launcher", as upstream does, so that
// `kubectl logs <job>-launcher` keeps working; workers keep the engine's
// "<job>-worker-<i>".
func (Framework) PodName(job engine.Job, rtype kubeflowv1.ReplicaType, index int) string {
	if rtype == kubeflowv1.MPIJobReplicaTypeLauncher {
		return job.GetName() + launcherSuffix
	}
	return engine.ReplicaName(job.GetName(), rtype, index)
}

func launcherPodName(job *kubeflowv1.MPIJob) string {
	return Framework{}.PodName(job, kubeflowv1.MPIJobReplicaTypeLauncher, 0)
}

// hostfile lists one line per MPI host, "<pod> slots=<n>": Open MPI's
// format, which v1 writes whatever the MPI (it has no field to tell Intel
// MPI or MPICH apart; v2's mpiImplementation does). A launcher with a GPU
// runs ranks too, so it comes first; mpirun recognises its own hostname and
// starts those locally.
func hostfile(job *kubeflowv1.MPIJob) string {
	var b strings.Builder
	slots := slotsPerWorker(job)
	if isGPULauncher(job) {
		fmt.Fprintf(&b, "%s slots=%d\n", launcherPodName(job), slots)
	}
	for _, name := range workerPodNames(job) {
		fmt.Fprintf(&b, "%s slots=%d\n", name, slots)
	}
	return b.String()
}

// discoverHosts is Horovod elastic's host-discovery script: it prints
// "<pod>:<slots>" for the hosts that can take ranks now, that is the GPU
// launcher and the running workers (sorted by the caller).
func discoverHosts(job *kubeflowv1.MPIJob, runningWorkers []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	slots := slotsPerWorker(job)
	if isGPULauncher(job) {
		fmt.Fprintf(&b, "echo %s:%d\n", launcherPodName(job), slots)
	}
	for _, name := range runningWorkers {
		fmt.Fprintf(&b, "echo %s:%d\n", name, slots)
	}
	return b.String()
}

// kubexec is the remote shell mpirun calls as `kubexec.sh <host> <command>`:
// it runs the command in that worker pod through the API server, with the
// kubectl the init container delivered.
func kubexec(job *kubeflowv1.MPIJob) string {
	return fmt.Sprintf(`#!/bin/sh
set -x
POD_NAME=$1
shift
%s/kubectl exec ${POD_NAME} --container %s -- /bin/sh -c "$*"`, kubectlMountPath, workerMainContainer(job))
}

// workerMainContainer is the container of the worker template that the
// engine treats as main. kubexec.sh names it explicitly: kubectl's own
// default (the first container) would miss an "mpi" container that is not
// first, or a mainContainer name that only the launcher uses.
func workerMainContainer(job *kubeflowv1.MPIJob) string {
	name := mainContainerName(job)
	if spec := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]; spec != nil {
		if c := engine.MainContainer(&spec.Template.Spec, name); c != nil {
			return c.Name
		}
	}
	return name
}
