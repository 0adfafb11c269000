package volumes

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// attachment is one volume attached to a node through a CSI driver, as
// kube-scheduler's NodeVolumeLimits tells volumes apart: the driver and
// the volume's handle; or, for a claim not bound yet (of a pod on a node:
// a pending pod with one waits), the claim, which the driver of its
// StorageClass will provision.
type attachment struct {
	driver, handle string
	// claim is namespace/name for a claim not bound yet, "" otherwise.
	claim string
}

// attachedOf returns the CSI volumes of a pod, each once, read on first
// ask. It reads the pod's spec, not its Features: those are not set for
// other schedulers' pods on nodes, whose volumes count all the same.
func (s *state) attachedOf(t *api.TaskInfo) []attachment {
	if t.Pod == nil || !podHasClaims(t.Pod) {
		return nil
	}
	a, ok := s.attached[t]
	if !ok {
		a = s.attachmentsOf(t)
		s.attached[t] = a
	}
	return a
}

// attachmentsOf reads the CSI volumes of a pod as kube-scheduler's
// NodeVolumeLimits does for the pods on a node: a claim missing, or an
// ephemeral claim that is not the pod's, counts nothing (kube-scheduler
// fails the node for the latter; a pending pod with one waits anyway).
// A volume of an in-tree plugin (a PersistentVolume without spec.csi)
// counts nothing either: kube-scheduler counts it against its CSI driver
// when CSI migration is on for the node, through csi-translation-lib,
// which this plugin leaves out. On a cluster whose in-tree volumes are
// migrated to CSI, every volume provisioned since is a CSI one. Nor do
// inline in-tree disks count (the scheduler places no pod with one:
// api.FeatureGCEPersistentDisk and the others), or volumes still attached
// by a VolumeAttachment after their pod is gone, which kube-scheduler
// counts.
func (s *state) attachmentsOf(t *api.TaskInfo) []attachment {
	pod := t.Pod
	var out []attachment
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name, eph := claimOf(pod, vol)
		if name == "" {
			continue
		}
		claim := s.ssn.PersistentVolumeClaim(pod.Namespace, name)
		if claim == nil || eph && ephemeral.VolumeIsForPod(pod, claim) != nil {
			continue
		}
		var a attachment
		if pv := s.pvOf(claim.Spec.VolumeName); pv != nil {
			if pv.Spec.CSI == nil {
				continue
			}
			a = attachment{driver: pv.Spec.CSI.Driver, handle: pv.Spec.CSI.VolumeHandle}
		} else {
			// No volume yet: the provisioner of its class will attach one.
			class := s.ssn.StorageClass(volume.GetPersistentVolumeClaimClass(claim))
			if class == nil {
				continue
			}
			a = attachment{driver: class.Provisioner, claim: pod.Namespace + "/" + name}
		}
		if a.driver != "" && !containsAttachment(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// pvOf returns the volume name, nil for none or "".
func (s *state) pvOf(name string) *corev1.PersistentVolume {
	if name == "" {
		return nil
	}
	return s.ssn.PersistentVolume(name)
}

func driverBefore(list []attachment, driver string) bool {
	for _, b := range list {
		if b.driver == driver {
			return true
		}
	}
	return false
}

// podHasClaims reports whether the pod has a persistentVolumeClaim or a
// generic ephemeral volume.
func podHasClaims(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

func containsAttachment(list []attachment, a attachment) bool {
	for _, b := range list {
		if b == a {
			return true
		}
	}
	return false
}

// nodeVolumes are one node's attach limits and, once a pod needs them,
// the volumes attached to it.
type nodeVolumes struct {
	// limits are the CSINode's allocatable counts by driver; nil for
	// none (no CSINode, or no driver with a count).
	limits map[string]int64
	// attached counts the pods on the node using each volume, placed ones
	// included; nil until counted.
	attached map[attachment]int
	// perDriver is the number of distinct volumes attached per driver.
	perDriver map[string]int64
}

func (nv *nodeVolumes) add(a attachment, v int) {
	was := nv.attached[a]
	nv.attached[a] = was + v
	switch {
	case was == 0 && v > 0:
		nv.perDriver[a.driver]++
	case was+v == 0:
		delete(nv.attached, a)
		nv.perDriver[a.driver]--
	}
}

// limitsOf returns node's entry, with its limits read on first ask.
func (s *state) limitsOf(node *api.NodeInfo) *nodeVolumes {
	nv := s.nodes[node]
	if nv == nil {
		nv = &nodeVolumes{}
		if c := s.ssn.CSINode(node.Name); c != nil {
			for _, d := range c.Spec.Drivers {
				if d.Allocatable != nil && d.Allocatable.Count != nil {
					if nv.limits == nil {
						nv.limits = map[string]int64{}
					}
					nv.limits[d.Name] = int64(*d.Allocatable.Count)
				}
			}
		}
		s.nodes[node] = nv
	}
	return nv
}

// attachFits is kube-scheduler's NodeVolumeLimits Filter for CSI drivers:
// for each driver with a limit on the node, the distinct volumes attached
// there plus the pod's that are not yet must stay within it. The volumes
// attached are counted from the node's pods once, then kept up to date
// with the session's placements.
func (s *state) attachFits(pod []attachment, node *api.NodeInfo) bool {
	nv := s.limitsOf(node)
	if nv.limits == nil {
		return true
	}
	limited := false
	for _, a := range pod {
		_, ok := nv.limits[a.driver]
		limited = limited || ok
	}
	if !limited {
		return true
	}
	if nv.attached == nil {
		nv.attached, nv.perDriver = map[attachment]int{}, map[string]int64{}
		for t := range node.Occupants() {
			for _, a := range s.attachedOf(t) {
				nv.add(a, 1)
			}
		}
	}
	for i, a := range pod {
		limit, ok := nv.limits[a.driver]
		if !ok || driverBefore(pod[:i], a.driver) {
			continue // no limit, or judged at the driver's first volume
		}
		var n int64
		for _, b := range pod[i:] {
			if b.driver == a.driver && nv.attached[b] == 0 {
				n++
			}
		}
		// Only new volumes can exceed a limit: a node already over it (its
		// limit lowered) still takes a pod whose volumes it has.
		if n > 0 && nv.perDriver[a.driver]+n > limit {
			return false
		}
	}
	return true
}
