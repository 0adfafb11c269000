package placementcheck

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Volume rules, named after the kube-scheduler plugin that enforces each.
const (
	RuleVolumeBinding      = "VolumeBinding"
	RuleVolumeZone         = "VolumeZone"
	RuleVolumeRestrictions = "VolumeRestrictions"
	RuleNodeVolumeLimits   = "NodeVolumeLimits"
)

// bindCompleted is the annotation the PV controller sets on a claim once
// its binding is complete; kube-scheduler takes a claim for bound only
// with it.
const bindCompleted = "pv.kubernetes.io/bind-completed"

// claimOf is the claim a pod volume uses, and whether it is a generic
// ephemeral volume's; "" for a volume without one.
func claimOf(pod *corev1.Pod, v *corev1.Volume) (string, bool) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName, false
	case v.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, v), true
	}
	return "", false
}

func (c *cluster) claim(namespace, name string) *corev1.PersistentVolumeClaim {
	return c.claims[namespace+"/"+name]
}

// fullyBound: the claim names its volume and the binding is complete.
func fullyBound(claim *corev1.PersistentVolumeClaim) bool {
	_, done := claim.Annotations[bindCompleted]
	return claim.Spec.VolumeName != "" && done
}

// volumeBinding: every claim exists, is not being deleted, belongs to the
// pod if it is an ephemeral volume's, and is bound to a volume that exists
// and whose required node affinity the node matches. An unbound claim
// whose class binds WaitForFirstConsumer kube-scheduler would bind or
// provision: the checker cannot judge that (NotModelled); any other
// unbound claim keeps the pod off every node.
func (j *judgement) volumeBinding() {
	for i := range j.pod.Spec.Volumes {
		v := &j.pod.Spec.Volumes[i]
		name, eph := claimOf(j.pod, v)
		if name == "" {
			continue
		}
		claim := j.claim(j.pod.Namespace, name)
		switch {
		case claim == nil:
			j.fail(RuleVolumeBinding, "volume %s: persistentvolumeclaim %q does not exist", v.Name, name)
			continue
		case claim.DeletionTimestamp != nil:
			j.fail(RuleVolumeBinding, "volume %s: persistentvolumeclaim %q is being deleted", v.Name, name)
			continue
		case eph && !metav1.IsControlledBy(claim, j.pod):
			j.fail(RuleVolumeBinding, "volume %s: persistentvolumeclaim %q was not created for the pod", v.Name, name)
			continue
		case !fullyBound(claim):
			if j.waitsForFirstConsumer(claim) {
				j.fail(RuleNotModelled, "volume %s: persistentvolumeclaim %q is not bound and binds WaitForFirstConsumer; the checker does not bind or provision", v.Name, name)
			} else {
				j.fail(RuleVolumeBinding, "volume %s: persistentvolumeclaim %q is not bound", v.Name, name)
			}
			continue
		}
		pv := j.volumes[claim.Spec.VolumeName]
		if pv == nil {
			j.fail(RuleVolumeBinding, "volume %s: persistentvolumeclaim %q is bound to persistentvolume %q, which does not exist", v.Name, name, claim.Spec.VolumeName)
			continue
		}
		if inTreeSource(pv.Spec.PersistentVolumeSource) != "" {
			j.fail(RuleNotModelled, "volume %s: persistentvolume %q is an in-tree %s volume", v.Name, pv.Name, inTreeSource(pv.Spec.PersistentVolumeSource))
		}
		if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
			if ok, err := nodeaffinity.NewLazyErrorNodeSelector(na.Required).Match(j.node); !ok || err != nil {
				j.fail(RuleVolumeBinding, "volume %s: persistentvolume %q's node affinity does not match the node", v.Name, pv.Name)
			}
		}
	}
}

func (j *judgement) waitsForFirstConsumer(claim *corev1.PersistentVolumeClaim) bool {
	class := claimClass(claim)
	if class == "" {
		return false
	}
	sc := j.classes[class]
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// claimClass is the claim's StorageClass: the field, else the deprecated
// beta annotation.
func claimClass(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return claim.Annotations[corev1.BetaStorageClassAnnotation]
}

// zoneKeys are the labels VolumeZone compares: a volume's beta label
// matches the node's GA one too.
var zoneKeys = map[string]string{
	corev1.LabelTopologyZone:            corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion:          corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
}

// volumeZone: the zone and region labels of the bound volumes of the
// pod's persistentVolumeClaim volumes must name the node's (a value may
// list several, joined by "__"). A node without any zone or region label
// passes.
func (j *judgement) volumeZone() {
	nodeHasZone := false
	for key := range zoneKeys {
		if _, ok := j.node.Labels[key]; ok {
			nodeHasZone = true
		}
	}
	if !nodeHasZone {
		return
	}
	for i := range j.pod.Spec.Volumes {
		v := &j.pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim := j.claim(j.pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if claim == nil || !fullyBound(claim) || j.volumes[claim.Spec.VolumeName] == nil {
			continue
		}
		pv := j.volumes[claim.Spec.VolumeName]
		for _, key := range slices.Sorted(maps.Keys(zoneKeys)) {
			want, ok := pv.Labels[key]
			if !ok {
				continue
			}
			have, ok := j.node.Labels[key]
			if !ok {
				have, ok = j.node.Labels[zoneKeys[key]]
			}
			if !ok || !slices.Contains(strings.Split(want, "__"), have) {
				j.fail(RuleVolumeZone, "volume %s: persistentvolume %q is in %s=%s, the node in %q", v.Name, pv.Name, key, want, have)
			}
		}
	}
}

// readWriteOncePod: a claim with the ReadWriteOncePod access mode that a
// pod on any node uses keeps every other pod off (kube-scheduler's
// VolumeRestrictions, for persistentVolumeClaim volumes).
func (j *judgement) readWriteOncePod() {
	for i := range j.pod.Spec.Volumes {
		v := &j.pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		claim := j.claim(j.pod.Namespace, name)
		if claim == nil || !slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteOncePod) {
			continue
		}
		for _, other := range j.others {
			if other.Namespace == j.pod.Namespace && usesClaim(other, name) {
				j.fail(RuleVolumeRestrictions, "volume %s: ReadWriteOncePod persistentvolumeclaim %q is in use by pod %s", v.Name, name, key(other))
			}
		}
	}
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for i := range p.Spec.Volumes {
		if pvc := p.Spec.Volumes[i].PersistentVolumeClaim; pvc != nil && pvc.ClaimName == claim {
			return true
		}
	}
	return false
}

// attachment is a CSI volume on a node: its driver and what tells it
// apart (the volume handle, or an inline volume's pod and name).
type attachment struct{ driver, id string }

// csiVolumes are the CSI volumes a pod attaches: those of its claims'
// bound volumes, and its inline CSI volumes.
func (c *cluster) csiVolumes(p *corev1.Pod) []attachment {
	var out []attachment
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.CSI != nil {
			out = append(out, attachment{v.CSI.Driver, key(p) + "/" + v.Name})
			continue
		}
		name, _ := claimOf(p, v)
		if name == "" {
			continue
		}
		claim := c.claim(p.Namespace, name)
		if claim == nil || !fullyBound(claim) {
			continue
		}
		if pv := c.volumes[claim.Spec.VolumeName]; pv != nil && pv.Spec.CSI != nil {
			out = append(out, attachment{pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle})
		}
	}
	return out
}

// nodeVolumeLimits: for every CSI driver whose CSINode entry on the node
// has an allocatable count, the distinct volumes of that driver on the
// node, the pod's included, are at most that count.
func (j *judgement) nodeVolumeLimits() {
	mine := j.csiVolumes(j.pod)
	if len(mine) == 0 {
		return
	}
	csiNode := j.csiNodes[j.node.Name]
	if csiNode == nil {
		return
	}
	on := map[attachment]bool{}
	for _, p := range j.onNode[j.node.Name] {
		for _, a := range j.csiVolumes(p) {
			on[a] = true
		}
	}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			continue
		}
		attached := map[attachment]bool{}
		for a := range on {
			if a.driver == d.Name {
				attached[a] = true
			}
		}
		added := 0
		for _, a := range mine {
			if a.driver == d.Name && !attached[a] {
				attached[a] = true
				added++
			}
		}
		if added > 0 && len(attached) > int(*d.Allocatable.Count) {
			j.fail(RuleNodeVolumeLimits, "driver %s: %d volumes on the node with the pod's, the node allows %d", d.Name, len(attached), *d.Allocatable.Count)
		}
	}
}

// inTreeSource names the in-tree plugin of a persistent volume source
// whose attach limits and conflicts the checker does not model; "" for
// CSI, local, hostPath and the others that have none.
func inTreeSource(s corev1.PersistentVolumeSource) string {
	switch {
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.Cinder != nil:
		return "cinder"
	case s.RBD != nil:
		return "rbd"
	case s.ISCSI != nil:
		return "iscsi"
	}
	return ""
}

// inlineInTreeDisk names the in-tree disk plugin of a pod's inline volume
// (attach limits and conflicts between pods: not modelled), "" otherwise.
func inlineInTreeDisk(v *corev1.Volume) string {
	switch {
	case v.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case v.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case v.AzureDisk != nil:
		return "azureDisk"
	case v.Cinder != nil:
		return "cinder"
	case v.RBD != nil:
		return "rbd"
	case v.ISCSI != nil:
		return "iscsi"
	}
	return ""
}
