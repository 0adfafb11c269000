package operatorbench

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"time"
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

// auditEvent is what the benchmark reads of an audit event.
type auditEvent struct {
	Stage     string    `json:"stage"`
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

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
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || (e.Stage != "ResponseComplete" && e.Stage != "Panic") {
			continue
		}
		if e.Received.Before(from) || e.Received.After(to) {
			continue
		}
		out.All++
		if !strings.HasPrefix(e.UserAgent, agent) {
			continue
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
	}
	return out, sc.Err()
}
