package soak

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// chaos kills and pauses the leading replicas: SIGKILL of the leading
// operator, of the leading scheduler, of both at once, and SIGSTOP of a
// leader past its lease (a standby takes over; the paused one, continued,
// believes it leads until it next tries to renew). Some kills are aimed
// at moments the observer reports: just after a bind (the scheduler may
// be in the middle of a gang's commit) and just after a gang restart was
// stored (the operator is tearing the old generation down).
type chaos struct {
	r *run
	// rng draws the timed faults from the seed; aim decides on the
	// observer's moments, whose number depends on timing, so that they
	// do not shift the timed faults' draws.
	rng, aim *rand.Rand

	mu sync.Mutex
	// down is, per component, when the soak put its leader out and which
	// holder the Lease named then; a failover ends when the Lease names
	// another.
	down     map[string]downState
	lastKill map[string]time.Time
	paused   sync.WaitGroup
}

type downState struct {
	at     time.Time
	holder string
}

func newChaos(r *run, seed uint64) *chaos {
	return &chaos{r: r, rng: rand.New(rand.NewPCG(seed, 2)), aim: rand.New(rand.NewPCG(seed, 3)),
		down: map[string]downState{}, lastKill: map[string]time.Time{}}
}

// loop injects process faults until ctx ends, then waits for the paused
// replicas to be continued.
func (ch *chaos) loop(ctx context.Context) {
	defer ch.paused.Wait()
	next := time.After(expDelay(ch.rng, ch.r.opts.ChaosEvery))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-ch.r.obs.moments:
			ch.aimed(ctx, m)
		case <-next:
			ch.fault(ctx)
			next = time.After(expDelay(ch.rng, ch.r.opts.ChaosEvery))
		}
	}
}

func (ch *chaos) fault(ctx context.Context) {
	op, sched := ch.r.components[0], ch.r.components[1]
	switch pick(ch.rng, []int{0, 1, 2, 3}, []float64{0.35, 0.35, 0.15, 0.15}) {
	case 0:
		ch.kill(ctx, op, cKillOperator, true)
	case 1:
		ch.kill(ctx, sched, cKillScheduler, true)
	case 2:
		ch.killBoth(ctx, op, sched)
	default:
		comp := op
		if ch.rng.IntN(2) == 1 {
			comp = sched
		}
		extra := time.Duration(between(ch.rng, 2, 6)) * time.Second
		ch.pause(ctx, comp, ch.r.opts.LeaseDuration+extra)
	}
}

// aimed kills a leader at a moment the observer reported, now and then:
// at most one aimed kill per component every 20 seconds.
func (ch *chaos) aimed(ctx context.Context, m moment) {
	op, sched := ch.r.components[0], ch.r.components[1]
	switch m {
	case momentBind:
		if ch.aim.Float64() < 0.05 && ch.quiet(sched.name, 20*time.Second) {
			if ch.kill(ctx, sched, cKillScheduler, false) {
				ch.r.tally.add(cAimedScheduler, 1)
			}
		}
	case momentGangRestart:
		if ch.aim.Float64() < 0.3 && ch.quiet(op.name, 20*time.Second) {
			// A moment later the teardown is under way.
			time.Sleep(time.Duration(ch.aim.IntN(1500)) * time.Millisecond)
			if ch.kill(ctx, op, cKillOperator, false) {
				ch.r.tally.add(cAimedOperator, 1)
			}
		}
	}
}

func (ch *chaos) quiet(comp string, d time.Duration) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return time.Since(ch.lastKill[comp]) > d
}

// kill SIGKILLs the component's leader; it reports whether there was one.
// A timed fault that finds none is counted as skipped; an aimed one just
// lets the moment pass.
func (ch *chaos) kill(ctx context.Context, comp *component, counter string, timed bool) bool {
	r, holder, err := comp.leader(ctx, ch.r.cluster.client, ch.r.opts.LeaseDuration)
	if err != nil || r == nil {
		if timed {
			ch.r.tally.add(cNoLeader, 1)
		}
		return false
	}
	ch.markDown(comp, holder)
	ch.r.logf("chaos: SIGKILL %s, the leading %s", r.name(), comp.name)
	if err := r.kill(); err != nil {
		ch.r.logf("chaos: %v", err)
	}
	ch.r.tally.add(counter, 1)
	return true
}

// killBoth SIGKILLs both leaders at once.
func (ch *chaos) killBoth(ctx context.Context, a, b *component) {
	ra, ha, errA := a.leader(ctx, ch.r.cluster.client, ch.r.opts.LeaseDuration)
	rb, hb, errB := b.leader(ctx, ch.r.cluster.client, ch.r.opts.LeaseDuration)
	if errA != nil || errB != nil || ra == nil || rb == nil {
		ch.r.tally.add(cNoLeader, 1)
		return
	}
	ch.markDown(a, ha)
	ch.markDown(b, hb)
	ch.r.logf("chaos: SIGKILL %s and %s, both leaders", ra.name(), rb.name())
	var wg sync.WaitGroup
	for _, r := range []*replica{ra, rb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.kill(); err != nil {
				ch.r.logf("chaos: %v", err)
			}
		}()
	}
	wg.Wait()
	ch.r.tally.add(cKillBoth, 1)
}

// pause SIGSTOPs the component's leader for d, past its lease, then
// continues it: for a moment two replicas believe they lead.
func (ch *chaos) pause(ctx context.Context, comp *component, d time.Duration) {
	r, holder, err := comp.leader(ctx, ch.r.cluster.client, ch.r.opts.LeaseDuration)
	if err != nil || r == nil {
		ch.r.tally.add(cNoLeader, 1)
		return
	}
	ch.markDown(comp, holder)
	ch.r.logf("chaos: SIGSTOP %s, the leading %s, for %s", r.name(), comp.name, d)
	if err := r.pause(); err != nil {
		ch.r.logf("chaos: %v", err)
		return
	}
	counter := cPauseOperator
	if comp == ch.r.components[1] {
		counter = cPauseScheduler
	}
	ch.r.tally.add(counter, 1)
	ch.paused.Add(1)
	go func() {
		defer ch.paused.Done()
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		ch.r.logf("chaos: SIGCONT %s", r.name())
		if err := r.resume(); err != nil {
			ch.r.logf("chaos: %v", err)
		}
	}()
}

// markDown starts a failover: the component has no leader from now
// until its Lease names another holder.
func (ch *chaos) markDown(comp *component, holder string) {
	now := time.Now()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.lastKill[comp.name] = now
	if _, ok := ch.down[comp.name]; ok {
		return
	}
	ch.down[comp.name] = downState{at: now, holder: holder}
	if comp == ch.r.components[1] {
		ch.r.checker.SchedulerDown(now)
	}
}

// leaseChanged ends a failover once the Lease names a new holder.
func (ch *chaos) leaseChanged(t time.Time, lease *coordinationv1.Lease) {
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, comp := range ch.r.components {
		d, ok := ch.down[comp.name]
		if comp.lease != lease.Name || !ok || holder == "" || holder == d.holder {
			continue
		}
		delete(ch.down, comp.name)
		ch.r.tally.failover(comp.name, t.Sub(d.at))
		ch.r.logf("chaos: the %s Lease taken over %s after its leader was put out", comp.name, t.Sub(d.at).Round(100*time.Millisecond))
		if comp == ch.r.components[1] {
			ch.r.checker.SchedulerUp(t)
		}
	}
}
