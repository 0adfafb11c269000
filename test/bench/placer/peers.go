package placer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/integrations/volcano/hypernodes"
	"github.com/troupe-ml/troupe/internal/peers"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Volcano is Volcano's vc-scheduler with the design's configuration
// (peers' defaults: actions enqueue, allocate, backfill; plugins priority,
// gang, predicates, nodeorder) at a schedule period; for gangs with a
// topology policy, with its network-topology-aware plugin too, and the
// gangs written against the HyperNodes of scenario.TopologyObject
// (HyperNodes).
type Volcano struct {
	Binary string
	// Period is --schedule-period; Volcano's default is 1s.
	Period time.Duration
	// Label names it in tables ("volcano", "volcano-200ms").
	Label string
}

func (v Volcano) Name() string { return v.Label }

func (Volcano) Dialect() Dialect { return volcano.Backend{HyperNodes: benchHyperNodes{}} }

// HyperNodes returns the HyperNodes the operator's generator
// (integrations/volcano/hypernodes) writes for topology (as stored: they
// are owned by it) over nodes: what a Volcano user of the operator's
// --volcano-hypernode-topology has.
func (Volcano) HyperNodes(topology *schedulingv1alpha1.Topology, nodes []corev1.Node) ([]client.Object, error) {
	desired, err := hypernodes.Desired(topology, nodes)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, len(desired))
	for i := range desired {
		out[i] = &desired[i]
	}
	return out, nil
}

// benchHyperNodes is the Volcano backend's view of the HyperNodes the
// harness writes before the gangs: those of scenario.TopologyObject, all
// written.
type benchHyperNodes struct{}

func (benchHyperNodes) Topology() string { return scenario.TopologyObject().Name }

func (benchHyperNodes) Tiers(context.Context) (map[string]int, string, bool, error) {
	tiers, nodeLevel, err := hypernodes.Tiers(scenario.TopologyObject())
	return tiers, nodeLevel, true, err
}

// Prepare installs Volcano's CRDs and its open default queue, which
// Volcano's controller manager would create.
func (Volcano) Prepare(ctx context.Context, cfg *rest.Config) error {
	return peers.InstallVolcano(ctx, cfg)
}

func (v Volcano) Start(ctx context.Context, env Env) (Process, error) {
	o := peers.VolcanoOptions{Options: peerOptions(v.Binary, env), SchedulePeriod: v.Period}
	if env.Topology {
		o.Plugins = append(peers.DefaultVolcanoPlugins(), "network-topology-aware")
	}
	p, err := peers.StartVolcano(ctx, o)
	if err != nil {
		return nil, err
	}
	return peerProc{p}, nil
}

// Coscheduling is kube-scheduler built with scheduler-plugins, running
// the Coscheduling plugin in its documented profile.
type Coscheduling struct {
	Binary string
}

func (Coscheduling) Name() string { return "coscheduling" }

func (Coscheduling) Dialect() Dialect {
	return schedulerplugins.Backend{Scheduler: peers.CoschedulingSchedulerName}
}

func (Coscheduling) Prepare(_ context.Context, cfg *rest.Config) error {
	return peers.InstallCoscheduling(cfg)
}

func (c Coscheduling) Start(ctx context.Context, env Env) (Process, error) {
	p, err := peers.StartCoscheduling(ctx, peers.CoschedulingOptions{Options: peerOptions(c.Binary, env)})
	if err != nil {
		return nil, err
	}
	return peerProc{p}, nil
}

// KubeNative is upstream kube-scheduler v1.37, as hack/controlplane.sh
// builds it beside the API server, with its own gang scheduling on (the
// Workload API and the GangScheduling plugin of its default profile), the
// gangs written as the operator's kube-scheduler backend writes them: the
// upstream anchor.
type KubeNative struct {
	Binary string
}

func (KubeNative) Name() string { return "kube-native" }

func (KubeNative) Dialect() Dialect { return kubenative.Backend{} }

// Prepare has nothing to install: the harness's API server serves the
// Workload API.
func (KubeNative) Prepare(context.Context, *rest.Config) error { return nil }

func (k KubeNative) Start(ctx context.Context, env Env) (Process, error) {
	p, err := peers.StartKubeScheduler(ctx, peers.KubeSchedulerOptions{Options: peerOptions(k.Binary, env), GangScheduling: true})
	if err != nil {
		return nil, err
	}
	return peerProc{p}, nil
}

func peerOptions(binary string, env Env) peers.Options {
	return peers.Options{Binary: binary, Kubeconfig: env.Kubeconfig, QPS: env.QPS, Burst: env.Burst, LogFile: env.LogFile}
}

// peerProc adds Exited to a peer's process.
type peerProc struct{ *peers.Process }

func (p peerProc) Exited() (bool, error) {
	select {
	case <-p.Done():
		return true, fmt.Errorf("see %s", p.LogFile())
	default:
		return false, nil
	}
}
