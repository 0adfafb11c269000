// Package tfjob is the TFJob adapter of the job engine: TensorFlow's
// replica types, TF_CONFIG and success policy.
package tfjob

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
)

// ControllerName is upstream's name for the TFJob controller; pods carry it
// in the operator-name label.
const ControllerName = "tfjob-controller"

// Framework implements engine.Framework for TFJob.
type Framework struct{}

var _ engine.Framework = Framework{}

func (Framework) ControllerName() string { return ControllerName }

// FrameworkName is training-operator's name for the framework.
func (Framework) FrameworkName() string { return kubeflowv1.TFJobFrameworkName }

func (Framework) GroupVersionKind() schema.GroupVersionKind {
	return kubeflowv1.GroupVersion.WithKind(kubeflowv1.TFJobKind)
}

func (Framework) NewJob() engine.Job { return &kubeflowv1.TFJob{} }

func (Framework) ReplicaTypes() []kubeflowv1.ReplicaType {
	return []kubeflowv1.ReplicaType{
		kubeflowv1.TFJobReplicaTypeChief, kubeflowv1.TFJobReplicaTypeMaster,
		kubeflowv1.TFJobReplicaTypePS, kubeflowv1.TFJobReplicaTypeWorker,
		kubeflowv1.TFJobReplicaTypeEval,
	}
}

func (Framework) MainContainerName(engine.Job) string { return kubeflowv1.TFJobDefaultContainerName }

func (Framework) ServicePort(job engine.Job, rtype kubeflowv1.ReplicaType) (corev1.ServicePort, bool) {
	return engine.NamedServicePort(kubeflowv1.TFJobDefaultPortName, port(job, rtype)), true
}

// IsMaster: the chief (or master) when there is one, otherwise worker 0,
// which then plays the chief's part in TensorFlow.
func (Framework) IsMaster(job engine.Job, rtype kubeflowv1.ReplicaType, index int) bool {
	if hasChief(job) {
		return isChief(rtype)
	}
	return rtype == kubeflowv1.TFJobReplicaTypeWorker && index == 0
}

// ConfigurePod sets TF_CONFIG for distributed jobs; a single-replica job
// trains locally and gets none, as upstream does.
func (Framework) ConfigurePod(job engine.Job, rtype kubeflowv1.ReplicaType, index int, pod *corev1.Pod) error {
	if engine.TotalReplicas(job) <= 1 {
		return nil
	}
	cfg, err := tfConfig(job.(*kubeflowv1.TFJob), rtype, index)
	if err != nil {
		return err
	}
	engine.SetEnv(pod, kubeflowv1.TFJobDefaultContainerName, corev1.EnvVar{Name: "TF_CONFIG", Value: cfg})
	return nil
}

// Outcome: with a chief, the job succeeds when the chief does. Without one,
// when worker 0 does, or with successPolicy AllWorkers when every worker
// does.
func (Framework) Outcome(job engine.Job, replicas engine.Replicas) engine.Outcome {
	tf := job.(*kubeflowv1.TFJob)
	for _, chief := range []kubeflowv1.ReplicaType{kubeflowv1.TFJobReplicaTypeChief, kubeflowv1.TFJobReplicaTypeMaster} {
		if s, ok := replicas[chief]; ok && s.Replicas > 0 {
			return engine.Outcome{Succeeded: replicas.AllSucceeded(chief), Running: s.Running > 0}
		}
	}
	workers, ok := replicas[kubeflowv1.TFJobReplicaTypeWorker]
	if !ok {
		return engine.Outcome{}
	}
	succeeded := workers.SucceededIndexes[0]
	if tf.Spec.SuccessPolicy != nil && *tf.Spec.SuccessPolicy == kubeflowv1.SuccessPolicyAllWorkers {
		succeeded = replicas.AllSucceeded(kubeflowv1.TFJobReplicaTypeWorker)
	}
	return engine.Outcome{Succeeded: succeeded, Running: workers.Running > 0}
}

func isChief(rtype kubeflowv1.ReplicaType) bool {
	return rtype == kubeflowv1.TFJobReplicaTypeChief || rtype == kubeflowv1.TFJobReplicaTypeMaster
}

func hasChief(job engine.Job) bool {
	for rtype, spec := range job.ReplicaSpecs() {
		if isChief(rtype) && spec.Replicas != nil && *spec.Replicas > 0 {
			return true
		}
	}
	return false
}

func port(job engine.Job, rtype kubeflowv1.ReplicaType) int32 {
	return engine.ReplicaPort(job.ReplicaSpecs()[rtype], kubeflowv1.TFJobDefaultContainerName, kubeflowv1.TFJobDefaultPortName, kubeflowv1.TFJobDefaultPort)
}

// TFConfig is the TF_CONFIG document TensorFlow reads.
type TFConfig struct {
	// Cluster maps a lower-case task type to its members' addresses; with
	// enableDynamicWorker a worker sees only itself among the workers.
	Cluster     map[string]any `json:"cluster"`
	Task        TaskSpec       `json:"task"`
	Environment string         `json:"environment"`
}

// TaskSpec names this member within the cluster.
type TaskSpec struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// tfConfig builds TF_CONFIG for one member. The evaluator is not part of
// the training cluster, so it is listed in no one's cluster spec.
func tfConfig(job *kubeflowv1.TFJob, rtype kubeflowv1.ReplicaType, index int) (string, error) {
	cluster := map[string]any{}
	for t, spec := range job.Spec.TFReplicaSpecs {
		if t == kubeflowv1.TFJobReplicaTypeEval {
			continue
		}
		typ := strings.ToLower(string(t))
		p := port(job, t)
		addr := func(i int) string {
			return fmt.Sprintf("%s:%d", engine.ServiceDNSName(job.Name, job.Namespace, t, i), p)
		}
		if job.Spec.EnableDynamicWorker && t == kubeflowv1.TFJobReplicaTypeWorker {
			// Sparse cluster spec: a worker knows only its own address.
			if rtype == t {
				cluster[typ] = map[string]string{fmt.Sprint(index): addr(index)}
			}
			continue
		}
		var addrs []string
		for i := 0; i < int(*spec.Replicas); i++ {
			addrs = append(addrs, addr(i))
		}
		cluster[typ] = addrs
	}
	cfg := TFConfig{
		Cluster:     cluster,
		Task:        TaskSpec{Type: strings.ToLower(string(rtype)), Index: index},
		Environment: "cloud",
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("marshal TF_CONFIG: %w", err)
	}
	return string(b), nil
}
