package integrations

import (
	"fmt"
	"strings"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// TopologyPlacer is a Backend whose scheduler places gangs by a topology
// policy, wholly or in part. A backend that is not one keeps no rule.
type TopologyPlacer interface {
	// UnkeptTopologyRules lists the parts of t's rules the backend's
	// scheduler cannot keep, none when it keeps them all.
	UnkeptTopologyRules(t *GangTopology) []UnkeptRule
}

// UnkeptRule is a part of a level's rule that a backend cannot keep.
type UnkeptRule struct {
	// Level is the rule's level.
	Level string
	// Required is the rule's required.
	Required bool
	// What names the part: "policy Spread", "range", "factor", or "rule"
	// for all of it.
	What string
}

func (u UnkeptRule) String() string { return u.Level + ": " + u.What }

// UnkeptTopology splits the rules of t that backend (nil: gang scheduling
// off) cannot keep into required ones, which the job must not run without,
// and preferred ones, which it may.
func UnkeptTopology(backend Backend, t *GangTopology) (required, preferred []UnkeptRule) {
	if t == nil {
		return nil, nil
	}
	var unkept []UnkeptRule
	if placer, ok := backend.(TopologyPlacer); ok {
		unkept = placer.UnkeptTopologyRules(t)
	} else {
		for _, l := range t.Levels {
			unkept = append(unkept, UnkeptRule{Level: l.Level, Required: l.Required, What: "rule"})
		}
	}
	for _, u := range unkept {
		if u.Required {
			required = append(required, u)
		} else {
			preferred = append(preferred, u)
		}
	}
	return required, preferred
}

// DescribeUnkept says, for a job's condition or event, which rules of
// runPolicy.gangPolicy.topology the backend named cannot keep.
func DescribeUnkept(backendName string, rules []UnkeptRule) string {
	parts := make([]string, len(rules))
	for i, u := range rules {
		parts[i] = u.String()
	}
	return fmt.Sprintf("runPolicy.gangPolicy.topology: the %s gang backend cannot keep %s", backendName, strings.Join(parts, "; "))
}

// PolicyOf is a level's policy: Pack when unset, as the API server
// defaults it (objects built in code may not carry the default).
func PolicyOf(l schedulingv1alpha1.TopologyLevelPolicy) schedulingv1alpha1.TopologyPolicyType {
	if l.Policy == "" {
		return schedulingv1alpha1.TopologyPack
	}
	return l.Policy
}
