package api

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodFeature is a placement rule a pod can carry that only some plugin
// honours: its field path, which messages name. A gang whose pod carries
// a feature that no configured plugin honours is refused, naming the
// field, rather than placed against it (framework.Session.JobValid).
type PodFeature string

// The features plugins honour (see framework.Session.Honour). The
// node-local rules (nodeSelector, required node affinity, tolerations,
// host ports, resources) are the predicates plugin's, which every
// configuration has.
const (
	FeaturePodAffinity           PodFeature = "spec.affinity.podAffinity"
	FeaturePodAntiAffinity       PodFeature = "spec.affinity.podAntiAffinity"
	FeatureTopologySpread        PodFeature = "spec.topologySpreadConstraints"
	FeaturePreferredNodeAffinity PodFeature = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
	FeaturePersistentVolumeClaim PodFeature = "spec.volumes[].persistentVolumeClaim"
	FeatureEphemeralVolume       PodFeature = "spec.volumes[].ephemeral"
	// FeatureResourceClaims (dynamic resource allocation) is honoured by
	// no plugin: allocating devices is kube-scheduler's DRA plugin's job,
	// and placing the pod without it would run it without its devices.
	FeatureResourceClaims PodFeature = "spec.resourceClaims"
)

// podFeatures lists the features pod uses, in a fixed order.
func podFeatures(pod *corev1.Pod) []PodFeature {
	var out []PodFeature
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)+len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, FeaturePodAffinity)
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)+len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, FeaturePodAntiAffinity)
		}
		if a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			out = append(out, FeaturePreferredNodeAffinity)
		}
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		out = append(out, FeatureTopologySpread)
	}
	claims, ephemeral := false, false
	for i := range pod.Spec.Volumes {
		claims = claims || pod.Spec.Volumes[i].PersistentVolumeClaim != nil
		ephemeral = ephemeral || pod.Spec.Volumes[i].Ephemeral != nil
	}
	if claims {
		out = append(out, FeaturePersistentVolumeClaim)
	}
	if ephemeral {
		out = append(out, FeatureEphemeralVolume)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		out = append(out, FeatureResourceClaims)
	}
	return out
}

// UnsupportedMessage says why a pod's feature keeps its gang from being
// placed: honouredBy names what would honour it, "" if nothing in this
// scheduler does.
func UnsupportedMessage(task *TaskInfo, f PodFeature, honouredBy string) string {
	if honouredBy == "" {
		return fmt.Sprintf("pod %s: %s is not supported by troupe-scheduler; the gang is not placed rather than placed without it", task.Key(), f)
	}
	return fmt.Sprintf("pod %s: %s is honoured by the %s plugin, which this scheduler's configuration leaves out; the gang is not placed rather than placed against it", task.Key(), f, honouredBy)
}
