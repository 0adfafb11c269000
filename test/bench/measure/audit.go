package measure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// BindAuditPolicy has the API server record, at the Metadata level (who,
// what, when; no bodies), each bind of a pod and each request that takes a
// pod away (a deletion or an eviction), and nothing else: a few hundred
// bytes per pod, so that the log costs the API server little.
const BindAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods/binding", "pods/eviction"]
- level: Metadata
  verbs: ["delete"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
`

// EnableAudit makes env's API server write the audit log of policy to
// logPath, one JSON event per line. The log is written in batches, off the
// requests' path (each event still carries the time its request
// completed), so that it does not slow what it records; the buffer holds
// the events of any run the harness makes, so none is dropped.
func EnableAudit(env *envtest.Environment, policy, policyPath, logPath string) error {
	if err := os.WriteFile(policyPath, []byte(policy), 0o644); err != nil {
		return err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Append("audit-policy-file", policyPath)
	args.Append("audit-log-path", logPath)
	args.Append("audit-log-format", "json")
	args.Append("audit-log-mode", "batch")
	args.Append("audit-log-batch-buffer-size", "100000")
	return nil
}

// podChange is one bind or removal of a pod the API server completed.
type podChange struct {
	at   time.Time
	pod  string // namespace/name
	bind bool
}

// ReadAudit calls each with every event of the audit log at path, one
// JSON event per line as --audit-log-format=json writes it. A last line
// without its newline is one the API server is still writing: it is left
// for a later read.
func ReadAudit(path string, each func(*auditv1.Event)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	raw = raw[:bytes.LastIndexByte(raw, '\n')+1]
	for line := 1; len(raw) > 0; line++ {
		next, rest, _ := bytes.Cut(raw, []byte{'\n'})
		raw = rest
		var e auditv1.Event
		if err := json.Unmarshal(next, &e); err != nil {
			return fmt.Errorf("audit log %s, line %d: %w", path, line, err)
		}
		each(&e)
	}
	return nil
}

// podChanges reads the binds and removals of pods that succeeded from the
// audit log at path, in the order they completed.
func podChanges(path string) ([]podChange, error) {
	var out []podChange
	err := ReadAudit(path, func(e *auditv1.Event) {
		ref := e.ObjectRef
		if e.Stage != auditv1.StageResponseComplete || ref == nil || ref.Resource != "pods" || e.ResponseStatus == nil ||
			e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299 {
			return
		}
		change := podChange{at: e.StageTimestamp.Time, pod: podKey(ref.Namespace, ref.Name)}
		switch {
		case e.Verb == "create" && ref.Subresource == "binding":
			change.bind = true
		case e.Verb == "create" && ref.Subresource == "eviction", e.Verb == "delete" && ref.Subresource == "":
		default:
			return
		}
		out = append(out, change)
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b podChange) int { return a.at.Compare(b.at) })
	return out, nil
}

// ReplayAudit replays the binds and removals of pods recorded in the API
// server's audit log at path (BindAuditPolicy) that completed from start
// to end, into a tracker whose clock starts at start and stands at end:
// its figures are those of the binds as the API server completed them
// (each after storing it), not as a watch delivered them, which can be seconds late when the API server
// closes a watcher that fell behind. gangOf names each pod's gang (pods of
// no gang tracked are left out) and gangSize each gang's size.
func ReplayAudit(path string, start, end time.Time, gangOf map[string]string, gangSize map[string]int) (*Tracker, error) {
	changes, err := podChanges(path)
	if err != nil {
		return nil, err
	}
	t := NewTracker(gangSize, nil)
	t.start, t.now = start, func() time.Time { return end }
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range changes {
		gang, tracked := gangOf[c.pod]
		if !tracked || c.at.Before(start) || c.at.After(end) {
			continue
		}
		at := c.at.Sub(start)
		switch {
		case c.bind && !t.bound[c.pod]:
			t.bind(c.pod, gang, at)
		case !c.bind:
			t.unbind(c.pod, gang, at)
			// A name is bound anew only by a new pod of that name.
			delete(t.bound, c.pod)
		}
	}
	return t, nil
}
