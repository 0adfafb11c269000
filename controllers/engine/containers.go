package engine

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// MainContainer returns the container of a pod spec that has the name, or
// the first container when none has it; nil only for a pod spec without
// containers, which the CRD schema rejects.
func MainContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	if len(spec.Containers) > 0 {
		return &spec.Containers[0]
	}
	return nil
}

// ReplicaPort returns the number of the named port on a replica's main
// container, or def when the container does not declare it.
func ReplicaPort(spec *kubeflowv1.ReplicaSpec, container, portName string, def int32) int32 {
	if c := MainContainer(&spec.Template.Spec, container); c != nil {
		for _, p := range c.Ports {
			if p.Name == portName {
				return p.ContainerPort
			}
		}
	}
	return def
}

// NamedServicePort is the service port for a container port of that name.
func NamedServicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port)}
}

// SetEnv adds variables to the named container of a pod. A variable the
// user already set in the template is left as the user set it.
func SetEnv(pod *corev1.Pod, container string, vars ...corev1.EnvVar) {
	c := MainContainer(&pod.Spec, container)
	if c == nil {
		return
	}
	have := map[string]bool{}
	for _, e := range c.Env {
		have[e.Name] = true
	}
	for _, v := range vars {
		if !have[v.Name] {
			c.Env = append(c.Env, v)
		}
	}
}

// TotalReplicas sums the desired replicas over every replica type.
func TotalReplicas(job Job) int32 {
	var n int32
	for _, spec := range job.ReplicaSpecs() {
		if spec.Replicas != nil {
			n += *spec.Replicas
		}
	}
	return n
}
