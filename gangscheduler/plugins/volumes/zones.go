package volumes

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// zoneLabels are the labels VolumeZone compares, the deprecated beta ones
// included: a volume created before the GA labels may carry only those.
var zoneLabels = []string{
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
}

// volumeZone is one zone or region label of a volume: the node's value of
// key must be one of values.
type volumeZone struct {
	key    string
	values []string
}

// zonesOf returns the zone and region labels of pv. A value may name
// several zones, joined by "__" (a regional disk); one that does not
// parse is ignored, as kube-scheduler ignores it.
func zonesOf(pv *corev1.PersistentVolume) []volumeZone {
	var out []volumeZone
	for _, key := range zoneLabels {
		value, ok := pv.Labels[key]
		if !ok {
			continue
		}
		if values, ok := splitZones(value); ok {
			out = append(out, volumeZone{key: key, values: values})
		}
	}
	return out
}

// splitZones is cloud-provider's volume/helpers.LabelZonesToSet (that
// module would bring in a cloud provider's dependencies for one small
// function): zones separated by "__", trimmed, none empty.
func splitZones(value string) ([]string, bool) {
	parts := strings.Split(value, "__")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, false
		}
		parts[i] = p
	}
	return parts, true
}

// zonesFit is kube-scheduler's VolumeZone Filter: a node without any zone
// or region label fits; otherwise it must have each volume label, or its
// GA twin, with one of the volume's values.
func zonesFit(zones []volumeZone, node map[string]string) bool {
	if len(zones) == 0 {
		return true
	}
	constrained := false
	for _, key := range zoneLabels {
		if _, ok := node[key]; ok {
			constrained = true
			break
		}
	}
	if !constrained {
		return true
	}
	for _, z := range zones {
		v, ok := node[z.key]
		if !ok {
			v, ok = node[gaLabel(z.key)]
		}
		if !ok || !slices.Contains(z.values, v) {
			return false
		}
	}
	return true
}

// gaLabel is the GA label of a deprecated beta zone or region label.
func gaLabel(key string) string {
	switch key {
	case corev1.LabelFailureDomainBetaZone:
		return corev1.LabelTopologyZone
	case corev1.LabelFailureDomainBetaRegion:
		return corev1.LabelTopologyRegion
	}
	return key
}
