package operatorbench

import (
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/troupe-ml/troupe/test/bench/measure"
)

// auditPolicy records every mutating request at the Metadata level (who,
// what, when; no bodies) and nothing else. apiserver_request_total does
// not say which client wrote; the audit log does, by user agent, so the
// operator's own writes can be told from the harness's, the scheduler's
// and kwok's.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// auditWrites are the mutating requests received in a span.
type auditWrites struct {
	// All counts every client's; Agent those of the user agent asked for,
	// also by "verb resource[/subresource]".
	All, Agent int
	ByKind     map[string]int
}

// countWrites reads the audit log at path and counts the writes received
// in [from, to], those of user agents starting with agent apart (a
// client-go program's user agent starts with its binary's name and a
// slash).
func countWrites(path, agent string, from, to time.Time) (auditWrites, error) {
	out := auditWrites{ByKind: map[string]int{}}
	err := measure.ReadAudit(path, func(e *auditv1.Event) {
		received := e.RequestReceivedTimestamp.Time
		if (e.Stage != auditv1.StageResponseComplete && e.Stage != auditv1.StagePanic) || received.Before(from) || received.After(to) {
			return
		}
		out.All++
		if !strings.HasPrefix(e.UserAgent, agent) {
			return
		}
		out.Agent++
		kind := e.Verb
		if e.ObjectRef != nil {
			kind += " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				kind += "/" + e.ObjectRef.Subresource
			}
		}
		out.ByKind[kind]++
	})
	return out, err
}
