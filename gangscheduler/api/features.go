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

// Inline in-tree volumes that kube-scheduler places with rules of their
// own (VolumeRestrictions' disk conflicts: one read-write user of a GCE
// PD, EBS volume, RBD image or iSCSI target; NodeVolumeLimits counts the
// migratable ones against their CSI driver's attach limit). No plugin
// honours them: a pod that mounts such a disk inline is refused rather
// than placed against those rules. The same disk through a
// PersistentVolume is honoured by the volumes plugin.
const (
	FeatureGCEPersistentDisk    PodFeature = "spec.volumes[].gcePersistentDisk"
	FeatureAWSElasticBlockStore PodFeature = "spec.volumes[].awsElasticBlockStore"
	FeatureRBD                  PodFeature = "spec.volumes[].rbd"
	FeatureISCSI                PodFeature = "spec.volumes[].iscsi"
	FeatureAzureDisk            PodFeature = "spec.volumes[].azureDisk"
	FeatureAzureFile            PodFeature = "spec.volumes[].azureFile"
	FeatureCinder               PodFeature = "spec.volumes[].cinder"
	FeatureVsphereVolume        PodFeature = "spec.volumes[].vsphereVolume"
	FeaturePortworxVolume       PodFeature = "spec.volumes[].portworxVolume"
)

// inlineDisks maps each inline disk feature to whether a volume is one,
// in a fixed order.
var inlineDisks = []struct {
	feature PodFeature
	is      func(*corev1.VolumeSource) bool
}{
	{FeatureGCEPersistentDisk, func(v *corev1.VolumeSource) bool { return v.GCEPersistentDisk != nil }},
	{FeatureAWSElasticBlockStore, func(v *corev1.VolumeSource) bool { return v.AWSElasticBlockStore != nil }},
	{FeatureRBD, func(v *corev1.VolumeSource) bool { return v.RBD != nil }},
	{FeatureISCSI, func(v *corev1.VolumeSource) bool { return v.ISCSI != nil }},
	{FeatureAzureDisk, func(v *corev1.VolumeSource) bool { return v.AzureDisk != nil }},
	{FeatureAzureFile, func(v *corev1.VolumeSource) bool { return v.AzureFile != nil }},
	{FeatureCinder, func(v *corev1.VolumeSource) bool { return v.Cinder != nil }},
	{FeatureVsphereVolume, func(v *corev1.VolumeSource) bool { return v.VsphereVolume != nil }},
	{FeaturePortworxVolume, func(v *corev1.VolumeSource) bool { return v.PortworxVolume != nil }},
}

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
	for _, d := range inlineDisks {
		for i := range pod.Spec.Volumes {
			if d.is(&pod.Spec.Volumes[i].VolumeSource) {
				out = append(out, d.feature)
				break
			}
		}
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
