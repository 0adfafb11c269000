package placer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/internal/peers"
)

// Volcano is Volcano's vc-scheduler with the design's configuration
// (peers' defaults: actions enqueue, allocate, backfill; plugins priority,
// gang, predicates, nodeorder) at a schedule period.
type Volcano struct {
	Binary string
	// Period is --schedule-period; Volcano's default is 1s.
	Period time.Duration
	// Label names it in tables ("volcano", "volcano-200ms").
	Label string
}

func (v Volcano) Name() string { return v.Label }

func (Volcano) Dialect() Dialect { return volcano.Backend{} }

// Prepare installs Volcano's CRDs and its open default queue, which
// Volcano's controller manager would create.
func (Volcano) Prepare(ctx context.Context, cfg *rest.Config) error {
	return peers.InstallVolcano(ctx, cfg)
}

func (v Volcano) Start(ctx context.Context, env Env) (Process, error) {
	p, err := peers.StartVolcano(ctx, peers.VolcanoOptions{
		Options:        peerOptions(v.Binary, env),
		SchedulePeriod: v.Period,
	})
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
