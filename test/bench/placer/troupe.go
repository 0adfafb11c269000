package placer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/troupe-ml/troupe/integrations/troupe"
)

// Troupe is troupe-scheduler, built from ./cmd/scheduler, with the default
// configuration (enqueue, allocate, backfill; the default plugins). It
// creates its default Queue itself.
type Troupe struct {
	Binary string
	// Label names it in tables; empty is "troupe".
	Label string
	// NoPodEvents runs it with --pod-scheduled-events=false.
	NoPodEvents bool
	// MinCyclePeriod is --min-cycle-period; 0 keeps the scheduler's
	// default.
	MinCyclePeriod time.Duration
	// Pprof serves /debug/pprof, so that the harness can profile it.
	Pprof bool
	// BindWorkers, if set, names it troupe-<BindWorkers> (unless Label
	// names it) and overrides the harness's Env.BindWorkers: a variant
	// at other binds in flight than the ones measured as shipped.
	BindWorkers int
}

func (t Troupe) Name() string {
	switch {
	case t.Label != "":
		return t.Label
	case t.BindWorkers > 0:
		return fmt.Sprintf("troupe-%d", t.BindWorkers)
	}
	return "troupe"
}

func (Troupe) Dialect() Dialect { return troupe.Backend{} }

func (Troupe) Prepare(context.Context, *rest.Config) error { return nil }

func (t Troupe) Start(_ context.Context, env Env) (Process, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + env.Kubeconfig,
		fmt.Sprintf("--kube-api-qps=%v", env.QPS),
		fmt.Sprintf("--kube-api-burst=%d", env.Burst),
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=0",
	}
	// Binds in flight are troupe-scheduler's own default unless the
	// harness was told otherwise: what it does as shipped is measured.
	if t.BindWorkers > 0 {
		env.BindWorkers = t.BindWorkers
	}
	if env.BindWorkers > 0 {
		args = append(args, fmt.Sprintf("--bind-workers=%d", env.BindWorkers))
	}
	if t.NoPodEvents {
		args = append(args, "--pod-scheduled-events=false")
	}
	if t.MinCyclePeriod > 0 {
		args = append(args, "--min-cycle-period="+t.MinCyclePeriod.String())
	}
	var pprof string
	if t.Pprof {
		if pprof, err = freeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address="+pprof)
	}
	p, err := startProc("troupe-scheduler", t.Binary, args, env.LogFile)
	if err != nil {
		return nil, err
	}
	return &troupeProc{proc: p, metrics: "http://" + metrics + "/metrics", pprof: pprof}, nil
}

type troupeProc struct {
	*proc
	metrics, pprof string
}

func (p *troupeProc) MetricsURL() string { return p.metrics }

func (p *troupeProc) PprofURL() string {
	if p.pprof == "" {
		return ""
	}
	return "http://" + p.pprof + "/debug/pprof"
}
