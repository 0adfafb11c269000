package operator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/integrations/volcano/hypernodes"
)

// namedGangBackends have a PodGroup of their own.
var namedGangBackends = []string{volcano.Name, schedulerplugins.Name, troupe.Name, kubenative.Name}

// KnownGangBackends are the values of --gang-scheduler-name and of a job's
// troupe.dev/gang-scheduler-name annotation. As upstream, any other valid
// scheduler name on the flag selects a scheduler that is compatible with
// scheduler-plugins' Coscheduling.
var KnownGangBackends = append([]string{integrations.None}, namedGangBackends...)

// newGangBackend returns the backend a --gang-scheduler-name value
// selects, nil for none. Registered here, explicitly.
func newGangBackend(name string) (integrations.Backend, error) {
	switch name {
	case "", integrations.None:
		return nil, nil
	case troupe.Name:
		return troupe.Backend{}, nil
	case volcano.Name:
		return volcano.Backend{}, nil
	case schedulerplugins.Name:
		return schedulerplugins.Backend{Scheduler: schedulerplugins.DefaultSchedulerName}, nil
	case kubenative.Name:
		return kubenative.Backend{}, nil
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, fmt.Errorf("--gang-scheduler-name: %q is neither one of %s nor a valid scheduler name: %s", name, strings.Join(KnownGangBackends, ", "), strings.Join(msgs, "; "))
	}
	return schedulerplugins.Backend{Scheduler: name}, nil
}

// gangBackends returns the operator's backends: the flag's as the default,
// whose PodGroup the cluster must serve, and for jobs that choose by
// annotation every known backend the cluster serves. The others are
// recorded with what to install, for the jobs that ask for them.
func gangBackends(flag string, mapper meta.RESTMapper) (integrations.Backends, error) {
	def, err := newGangBackend(flag)
	if err != nil {
		return integrations.Backends{}, err
	}
	bs := integrations.Backends{
		Default:     def,
		Available:   map[string]integrations.Backend{integrations.None: nil},
		Unavailable: map[string]error{},
	}
	for _, name := range namedGangBackends {
		b, _ := newGangBackend(name)
		if def != nil && def.Name() == name {
			// A job that names the default's kind gets the operator's
			// own configuration of it (a custom coscheduling name).
			b = def
		}
		if err := b.CheckInstalled(mapper); err != nil {
			bs.Unavailable[name] = err
			continue
		}
		bs.Available[name] = b
	}
	if def != nil {
		if err := bs.Unavailable[def.Name()]; err != nil {
			return bs, fmt.Errorf("--gang-scheduler-name=%s: %w", flag, err)
		}
	}
	return bs, nil
}

// setupHyperNodes starts the generator of Volcano HyperNodes from the
// Topology named topology (none when empty) and gives it to the volcano
// backend, when the cluster serves Volcano's PodGroup: without it no job
// can use that backend, and the flag does nothing. A cluster that serves
// the PodGroup but not the HyperNode is an error that says what to
// install.
func setupHyperNodes(mgr ctrl.Manager, bs integrations.Backends, topology string) (integrations.Backends, error) {
	log := ctrl.Log.WithName("setup")
	if topology == "" {
		return bs, nil
	}
	if _, ok := bs.Available[volcano.Name]; !ok {
		log.Info("Volcano is not installed: no HyperNodes are generated", "volcanoHypernodeTopology", topology)
		return bs, nil
	}
	hn := topologyv1alpha1.SchemeGroupVersion.WithKind("HyperNode")
	if err := integrations.CheckServed(mgr.GetRESTMapper(), hn,
		"Volcano v1.14's HyperNode CRD (config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml in volcano.sh/volcano)"); err != nil {
		return bs, fmt.Errorf("--volcano-hypernode-topology=%s: %w", topology, err)
	}
	gen := hypernodes.New(mgr.GetClient(), topology)
	if err := gen.SetupWithManager(mgr); err != nil {
		return bs, fmt.Errorf("set up the Volcano HyperNode generator: %w", err)
	}
	b := volcano.Backend{HyperNodes: gen}
	bs.Available[volcano.Name] = b
	if bs.Default != nil && bs.Default.Name() == volcano.Name {
		bs.Default = b
	}
	log.Info("generating Volcano HyperNodes", "topology", topology)
	return bs, nil
}

// describeGangBackends is a log line's worth of what the operator can use.
func describeGangBackends(bs integrations.Backends) []any {
	def := integrations.None
	if bs.Default != nil {
		def = bs.Default.Name() + " (scheduler " + bs.Default.SchedulerName() + ")"
	}
	return []any{
		"default", def,
		"available", slices.Sorted(maps.Keys(bs.Available)),
		"notInstalled", slices.Sorted(maps.Keys(bs.Unavailable)),
	}
}
