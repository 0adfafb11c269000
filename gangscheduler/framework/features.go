package framework

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// ReasonUnsupported is the validity reason of a gang whose pod carries a
// placement rule that no configured plugin honours, or that does not
// parse.
const ReasonUnsupported = "Unsupported"

// Honour declares that plugin honours the pod features: the session then
// places pods that carry them. A plugin calls it in OnSessionOpen for the
// rules it enforces. A pod with a feature no plugin honoured keeps its
// whole gang from being placed, with a message naming the field (see
// JobValid), so that leaving a plugin out of the configuration can never
// mean placing pods against their rules.
func (ssn *Session) Honour(plugin string, features ...api.PodFeature) {
	if ssn.honoured == nil {
		ssn.honoured = map[api.PodFeature]string{}
	}
	for _, f := range features {
		ssn.honoured[f] = plugin
	}
}

// knownHonours says which plugin of this scheduler honours a feature, for
// the message of a configuration that leaves it out.
var knownHonours = map[api.PodFeature]string{
	api.FeaturePodAffinity:           "interpodaffinity",
	api.FeaturePodAntiAffinity:       "interpodaffinity",
	api.FeatureTopologySpread:        "podtopologyspread",
	api.FeaturePreferredNodeAffinity: "nodeorder",
	api.FeaturePersistentVolumeClaim: "volumes",
	api.FeatureEphemeralVolume:       "volumes",
}

// unsupported refuses a gang one of whose pending pods carries a feature
// no plugin of the session honours, or a rule that does not parse.
func (ssn *Session) unsupported(job *api.JobInfo) *ValidateResult {
	var first *ValidateResult
	var firstKey string
	for _, t := range job.Tasks {
		if t.Status != api.Pending || (len(t.Features) == 0 && (t.Rules == nil || t.Rules.Err == nil)) {
			continue
		}
		if first != nil && t.Key() > firstKey {
			continue // report the first pod by name, whatever the map order
		}
		if t.Rules != nil && t.Rules.Err != nil {
			first, firstKey = &ValidateResult{Reason: ReasonUnsupported, Message: "pod " + t.Key() + ": " + t.Rules.Err.Error()}, t.Key()
			continue
		}
		if i := slices.IndexFunc(t.Features, func(f api.PodFeature) bool { return ssn.honoured[f] == "" }); i >= 0 {
			f := t.Features[i]
			first, firstKey = &ValidateResult{Reason: ReasonUnsupported, Message: api.UnsupportedMessage(t, f, knownHonours[f])}, t.Key()
		}
	}
	return first
}
