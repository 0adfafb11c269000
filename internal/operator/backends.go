package operator

import (
	"fmt"
	"strings"

	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/troupe"
)

// gangBackends maps a --gang-scheduler-name value to its backend; a nil
// backend means pods are scheduled one by one. Registered explicitly.
var gangBackends = map[string]func() integrations.Backend{
	"":                nil,
	GangSchedulerNone: nil,
	troupe.Name:       func() integrations.Backend { return troupe.Backend{} },
}

// availableGangBackends lists the backends this build provides.
func availableGangBackends() string {
	return strings.Join([]string{GangSchedulerNone, troupe.Name}, ", ")
}

// gangBackend returns the backend a valid --gang-scheduler-name selects.
func gangBackend(name string) (integrations.Backend, error) {
	newBackend, ok := gangBackends[name]
	if !ok {
		return nil, fmt.Errorf("--gang-scheduler-name: %q is not available in this build yet; available: %s", name, availableGangBackends())
	}
	if newBackend == nil {
		return nil, nil
	}
	return newBackend(), nil
}
