// Package hypernodes generates Volcano HyperNodes from a Troupe Topology
// and the nodes' labels, so that the Volcano backend can translate a
// topology policy into Volcano's networkTopology (integrations/volcano).
//
// One HyperNode per domain of each level above the nodes: tierName is the
// level's name, tier 1 the finest such level, each level up one more. A
// level whose nodeLabel is kubernetes.io/hostname is the node level itself
// and gets none. Tier-1 HyperNodes list their nodes by name (exactMatch),
// higher tiers the HyperNodes of the level below. A domain is the nodes
// with one value of a level's label under one domain of the level above,
// as troupe-scheduler's tree has it: rack r1 of block b1 and rack r1 of
// block b2 are two HyperNodes. A node that lacks any level's label is
// outside the tree and in no HyperNode.
//
// Nodes are listed by name rather than by a labelMatch selector because
// Volcano v1.14's scheduler cache refreshes a labelMatch HyperNode only
// when a node it matches now changes (SchedulerCache.triggerUpdateHyperNode
// with HyperNodesInfo.NodeRegexOrLabelMatchLeafHyperNode): a node whose
// rack label moves stays in its old rack's HyperNode as well. A rewritten
// member list is rebuilt whole (processHyperNode). Volcano's own label
// discoverer (pkg/controllers/hypernode/discovery/label) lists names too.
package hypernodes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// The labels and annotation every generated HyperNode carries.
const (
	// TopologyLabel marks a HyperNode as Troupe's, generated from the
	// Topology it names. The generator deletes those it no longer wants.
	TopologyLabel = "troupe.dev/topology"
	// LevelLabel is the Topology level the HyperNode is a domain of.
	LevelLabel = "troupe.dev/topology-level"
	// DomainAnnotation is the domain's label values, top down
	// ("block-1/rack-3").
	DomainAnnotation = "troupe.dev/topology-domain"
)

// Tiers returns the HyperNode tier of each level of t that has
// HyperNodes, by level name, and the name of its node level ("" if none).
// It fails when kubernetes.io/hostname names a level other than the last:
// nothing is finer than a node.
func Tiers(t *schedulingv1alpha1.Topology) (map[string]int, string, error) {
	levels := t.Spec.Levels
	nodeLevel := ""
	for i, l := range levels {
		if l.NodeLabel != corev1.LabelHostname {
			continue
		}
		if i != len(levels)-1 {
			return nil, "", fmt.Errorf("Topology %s: spec.levels[%d] (%s) has nodeLabel %s, which only the last level may have: nothing is finer than a node", t.Name, i, l.Name, corev1.LabelHostname)
		}
		nodeLevel = l.Name
		levels = levels[:i]
	}
	tiers := make(map[string]int, len(levels))
	for i, l := range levels {
		tiers[l.Name] = len(levels) - i
	}
	return tiers, nodeLevel, nil
}

// Desired returns the HyperNodes of t over nodes, sorted by name, each
// labelled as Troupe's and controlled by t.
func Desired(t *schedulingv1alpha1.Topology, nodes []corev1.Node) ([]topologyv1alpha1.HyperNode, error) {
	tiers, _, err := Tiers(t)
	if err != nil {
		return nil, err
	}
	levels := t.Spec.Levels[:len(tiers)]
	if len(levels) == 0 {
		return nil, nil
	}
	type domain struct {
		level   int
		path    []string
		members map[string]bool
	}
	domains := map[string]*domain{}
	for _, n := range nodes {
		path := make([]string, 0, len(t.Spec.Levels))
		for _, l := range t.Spec.Levels {
			v, ok := n.Labels[l.NodeLabel]
			if !ok {
				break
			}
			path = append(path, v)
		}
		if len(path) < len(t.Spec.Levels) {
			continue // outside the tree
		}
		member := n.Name
		for i := len(levels) - 1; i >= 0; i-- {
			name := Name(t.Name, levels[i].Name, path[:i+1])
			d := domains[name]
			if d == nil {
				d = &domain{level: i, path: path[:i+1], members: map[string]bool{}}
				domains[name] = d
			}
			d.members[member] = true
			member = name
		}
	}
	ref := metav1.OwnerReference{
		APIVersion: schedulingv1alpha1.GroupVersion.String(), Kind: "Topology",
		Name: t.Name, UID: t.UID, Controller: ptrTo(true),
	}
	out := make([]topologyv1alpha1.HyperNode, 0, len(domains))
	for name, d := range domains {
		memberType := topologyv1alpha1.MemberTypeHyperNode
		if d.level == len(levels)-1 {
			memberType = topologyv1alpha1.MemberTypeNode
		}
		var members []topologyv1alpha1.MemberSpec
		for _, m := range sortedKeys(d.members) {
			members = append(members, topologyv1alpha1.MemberSpec{
				Type:     memberType,
				Selector: topologyv1alpha1.MemberSelector{ExactMatch: &topologyv1alpha1.ExactMatch{Name: m}},
			})
		}
		out = append(out, topologyv1alpha1.HyperNode{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Labels:          map[string]string{TopologyLabel: t.Name, LevelLabel: levels[d.level].Name},
				Annotations:     map[string]string{DomainAnnotation: strings.Join(d.path, "/")},
				OwnerReferences: []metav1.OwnerReference{ref},
			},
			Spec: topologyv1alpha1.HyperNodeSpec{
				Tier:     tiers[levels[d.level].Name],
				TierName: levels[d.level].Name,
				Members:  members,
			},
		})
	}
	slices.SortFunc(out, func(a, b topologyv1alpha1.HyperNode) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// maxNameLength keeps names usable as label values too.
const maxNameLength = 63

// Name is the HyperNode of the domain path (label values, top down) at a
// level of a Topology: "<topology>-<level>-<values>-<hash>", lower case,
// cut to 63 characters. The hash of the exact names and values keeps apart
// domains whose values read alike once made valid ("r_1" and "r.1"), or
// join alike ("b-1"/"r" and "b"/"1-r").
func Name(topology, level string, path []string) string {
	sum := sha256.Sum256([]byte(topology + "\x00" + level + "\x00" + strings.Join(path, "\x00")))
	hash := hex.EncodeToString(sum[:])[:8]
	readable := sanitize(topology + "-" + level + "-" + strings.Join(path, "-"))
	if room := maxNameLength - len(hash) - 1; len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-")
	}
	return readable + "-" + hash
}

// sanitize makes s a run of lower-case letters, digits and single dashes,
// with no dash at either end.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ptrTo[T any](v T) *T { return &v }
