package api

import (
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// PodRules are the placement rules of a pod that relate it to other pods,
// and its node preferences: what kube-scheduler's InterPodAffinity,
// PodTopologySpread and NodeAffinity (scoring) plugins read. They are
// parsed once per pod object (NewTaskInfo, through TaskMemo) with
// kube-scheduler's meaning, for pending gang members and for every pod on
// a node that carries any: a running pod's anti-affinity binds the pods
// placed after it.
//
// k8s.io/kube-scheduler/framework has helpers for the affinity terms, but
// importing it brings in the DRA allocator and cel-go (over 800 packages)
// for three small functions; the parsing here follows them, and the
// differential suite (test/differential) holds it to kube-scheduler's
// decisions.
type PodRules struct {
	// Affinity and AntiAffinity are the required pod (anti-)affinity terms.
	Affinity, AntiAffinity []AffinityTerm
	// PreferredAffinity and PreferredAntiAffinity are the weighted ones.
	PreferredAffinity, PreferredAntiAffinity []WeightedAffinityTerm
	// Spread are the topology spread constraints.
	Spread []SpreadConstraint
	// PreferredNodeAffinity are the weighted node affinity terms; nil for
	// none.
	PreferredNodeAffinity *nodeaffinity.PreferredSchedulingTerms
	// LabelKeys says some selector merged the pod's own labels in
	// (matchLabelKeys, mismatchLabelKeys): pods of one class may then
	// have different selectors.
	LabelKeys bool
	// Err says which rule does not parse, naming the field. The API server
	// validates these fields, so it is for pods stored before a
	// validation existed; the scheduler refuses such a pod's gang rather
	// than guess.
	Err error
}

// HasPodAffinity reports whether the pod has any pod affinity or
// anti-affinity term, required or preferred.
func (r *PodRules) HasPodAffinity() bool {
	return r != nil && len(r.Affinity)+len(r.AntiAffinity)+len(r.PreferredAffinity)+len(r.PreferredAntiAffinity) > 0
}

// HasSpread reports whether the pod has topology spread constraints.
func (r *PodRules) HasSpread() bool { return r != nil && len(r.Spread) > 0 }

// Monotone reports whether a node that does not fit the pod now cannot fit
// it after more pods are placed: true unless the pod has required pod
// affinity (a placement can bring the pod it needs) or a DoNotSchedule
// spread constraint (a placement can raise the least-loaded domain).
func (r *PodRules) Monotone() bool {
	if r == nil {
		return true
	}
	if len(r.Affinity) > 0 {
		return false
	}
	for _, c := range r.Spread {
		if c.DoNotSchedule {
			return false
		}
	}
	return true
}

// AffinityTerm is a parsed PodAffinityTerm: the pods it selects (by
// namespace and labels) and the topology it relates them by.
type AffinityTerm struct {
	// Namespaces are the namespaces it names, or the pod's own when it
	// names none and has no namespace selector.
	Namespaces []string
	// NamespaceSelector selects more namespaces by their labels;
	// labels.Nothing() when unset.
	NamespaceSelector labels.Selector
	// Selector selects pods by their labels, with matchLabelKeys and
	// mismatchLabelKeys merged in (the API server merges them at pod
	// creation too; merging twice adds a requirement already there).
	Selector    labels.Selector
	TopologyKey string
}

// Matches reports whether the term selects pod, whose namespace has the
// labels nsLabels (nil if unknown).
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if !slices.Contains(t.Namespaces, pod.Namespace) && !t.NamespaceSelector.Matches(nsLabels) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// WeightedAffinityTerm is a preferred term with its weight (1-100).
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// SpreadConstraint is a parsed TopologySpreadConstraint, defaults applied
// as kube-scheduler applies them.
type SpreadConstraint struct {
	MaxSkew     int32
	TopologyKey string
	// DoNotSchedule is whenUnsatisfiable DoNotSchedule (a filter);
	// otherwise ScheduleAnyway (a score).
	DoNotSchedule bool
	// Selector selects the pods counted, in the pod's own namespace, with
	// matchLabelKeys merged in; labels.Nothing() when labelSelector is
	// unset, as in kube-scheduler.
	Selector labels.Selector
	// MinDomains is 1 when unset.
	MinDomains int32
	// HonorNodeAffinity: nodeAffinityPolicy Honor (the default): only nodes
	// that match the pod's nodeSelector and required node affinity count.
	HonorNodeAffinity bool
	// HonorNodeTaints: nodeTaintsPolicy Honor (default Ignore): only nodes
	// whose NoSchedule/NoExecute taints the pod tolerates count.
	HonorNodeTaints bool
}

// newPodRules parses pod's rules; nil when it has none.
func newPodRules(pod *corev1.Pod) *PodRules {
	a := pod.Spec.Affinity
	hasAffinity := a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil ||
		a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
	if !hasAffinity && len(pod.Spec.TopologySpreadConstraints) == 0 {
		return nil
	}
	r := &PodRules{}
	var errs []error
	if a != nil && a.PodAffinity != nil {
		r.Affinity = requiredTerms(pod, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAffinity", &errs)
		r.PreferredAffinity = weightedTerms(pod, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAffinity", &errs)
	}
	if a != nil && a.PodAntiAffinity != nil {
		r.AntiAffinity = requiredTerms(pod, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAntiAffinity", &errs)
		r.PreferredAntiAffinity = weightedTerms(pod, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAntiAffinity", &errs)
	}
	if a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: %w", err))
		}
		r.PreferredNodeAffinity = terms
	}
	for _, t := range podAffinityTerms(a) {
		r.LabelKeys = r.LabelKeys || len(t.MatchLabelKeys)+len(t.MismatchLabelKeys) > 0
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		r.LabelKeys = r.LabelKeys || len(pod.Spec.TopologySpreadConstraints[i].MatchLabelKeys) > 0
		c, err := spreadConstraint(pod, &pod.Spec.TopologySpreadConstraints[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.topologySpreadConstraints[%d]: %w", i, err))
			continue
		}
		r.Spread = append(r.Spread, c)
	}
	if len(errs) > 0 {
		r.Err = errs[0]
	}
	return r
}

// podAffinityTerms are every pod affinity and anti-affinity term of a,
// required and preferred.
func podAffinityTerms(a *corev1.Affinity) []*corev1.PodAffinityTerm {
	var out []*corev1.PodAffinityTerm
	add := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		for i := range req {
			out = append(out, &req[i])
		}
		for i := range pref {
			out = append(out, &pref[i].PodAffinityTerm)
		}
	}
	if a != nil && a.PodAffinity != nil {
		add(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if a != nil && a.PodAntiAffinity != nil {
		add(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

func requiredTerms(pod *corev1.Pod, terms []corev1.PodAffinityTerm, field string, errs *[]error) []AffinityTerm {
	var out []AffinityTerm
	for i := range terms {
		t, err := affinityTerm(pod, &terms[i])
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]: %w", field, i, err))
			continue
		}
		out = append(out, t)
	}
	return out
}

func weightedTerms(pod *corev1.Pod, terms []corev1.WeightedPodAffinityTerm, field string, errs *[]error) []WeightedAffinityTerm {
	var out []WeightedAffinityTerm
	for i := range terms {
		t, err := affinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]: %w", field, i, err))
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out
}

// affinityTerm parses one term as kube-scheduler does: no namespaces and
// no namespace selector mean the pod's own namespace; an unset namespace
// selector selects no namespace, an empty one every namespace.
func affinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("labelSelector: %w", err)
	}
	if sel, err = mergeLabelKeys(sel, pod, term.MatchLabelKeys, selection.In); err != nil {
		return AffinityTerm{}, fmt.Errorf("matchLabelKeys: %w", err)
	}
	if sel, err = mergeLabelKeys(sel, pod, term.MismatchLabelKeys, selection.NotIn); err != nil {
		return AffinityTerm{}, fmt.Errorf("mismatchLabelKeys: %w", err)
	}
	nsSel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	ns := slices.Clone(term.Namespaces)
	if len(ns) == 0 && term.NamespaceSelector == nil {
		ns = []string{pod.Namespace}
	}
	return AffinityTerm{Namespaces: ns, NamespaceSelector: nsSel, Selector: sel, TopologyKey: term.TopologyKey}, nil
}

// mergeLabelKeys adds, for each key the pod has a label of, the
// requirement "key op (the pod's value)"; keys the pod lacks are ignored,
// as kube-scheduler ignores them.
func mergeLabelKeys(sel labels.Selector, pod *corev1.Pod, keys []string, op selection.Operator) (labels.Selector, error) {
	for _, k := range keys {
		v, ok := pod.Labels[k]
		if !ok {
			continue
		}
		req, err := labels.NewRequirement(k, op, []string{v})
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}

func spreadConstraint(pod *corev1.Pod, c *corev1.TopologySpreadConstraint) (SpreadConstraint, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return SpreadConstraint{}, fmt.Errorf("labelSelector: %w", err)
	}
	if c.LabelSelector != nil {
		if sel, err = mergeLabelKeys(sel, pod, c.MatchLabelKeys, selection.In); err != nil {
			return SpreadConstraint{}, fmt.Errorf("matchLabelKeys: %w", err)
		}
	}
	out := SpreadConstraint{
		MaxSkew:           c.MaxSkew,
		TopologyKey:       c.TopologyKey,
		DoNotSchedule:     c.WhenUnsatisfiable == corev1.DoNotSchedule,
		Selector:          sel,
		MinDomains:        1,
		HonorNodeAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		HonorNodeTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
	}
	if c.MinDomains != nil {
		out.MinDomains = *c.MinDomains
	}
	return out, nil
}

// labelsHash hashes a pod's labels, sorted, so that two pods with equal
// labels hash alike.
func labelsHash(l map[string]string) uint64 {
	if len(l) == 0 {
		return 0
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := fnv.New64a()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(l[k]))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
