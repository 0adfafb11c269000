// Package soak is the chaos soak of `make soak` (issue 17): it runs the
// real binaries as processes (etcd, kube-apiserver,
// kube-controller-manager, kwok with CPU and GPU nodes, two operators and
// two troupe-schedulers with leader election), drives them with a seeded
// random mix of jobs and faults while it SIGKILLs and SIGSTOPs the
// leaders, checks Troupe's promises the whole time from its own watches
// (subpackage check), and reports.
//
// The run: setup; the churn (--duration): jobs applied and deleted,
// members failed and evicted, nodes cordoned and deleted, leaders killed
// and paused; the quiet period (at most --settle): faults stop, nodes
// come back, the jobs are drained (each one that runs is finished, so
// that the queued ones run too); the final checks; the report.
package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/troupe-ml/troupe/internal/cmdutil"
	"github.com/troupe-ml/troupe/test/soak/check"
)

// Main runs the soak and returns the exit code: 0 when every invariant
// held, 1 on a violation or a failure of the harness, 2 for bad flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts := NewOptions()
	if err := cmdutil.ParseFlags("soak", args, stderr, opts); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	if opts.Command == "" {
		opts.Command = strings.Join(append([]string{filepath.Base(os.Args[0])}, args...), " ")
	}
	rep := Run(ctx, opts, stderr)
	var md strings.Builder
	rep.markdown(&md)
	fmt.Fprint(stderr, "\n"+md.String())
	reportFile := opts.Report
	if reportFile == "" {
		reportFile = filepath.Join(opts.WorkDir, "report.md")
	}
	if err := os.WriteFile(reportFile, []byte(md.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "soak: write the report: %v\n", err)
	}
	fmt.Fprintln(stdout, rep.summary())
	if !rep.passed() {
		fmt.Fprintf(stderr, "soak: FAILED with seed %d; rerun with SOAK_SEED=%d (logs: %s)\n", rep.Seed, rep.Seed, filepath.Join(opts.WorkDir, logsDir))
		return 1
	}
	return 0
}

// run is one soak.
type run struct {
	opts       *Options
	log        io.Writer
	logMu      sync.Mutex
	start      time.Time
	cluster    *cluster
	obs        *observer
	checker    *check.Checker
	tally      *tally
	components []*component
}

func (r *run) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.log, "[%6.1fs] %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// Run runs the soak and returns its report; a failure of the harness is
// in the report's Err.
func Run(ctx context.Context, o *Options, log io.Writer) *report {
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()%1_000_000_000 + 1
	}
	r := &run{opts: o, log: log, start: time.Now(), tally: newTally(),
		checker: check.New(check.Config{PartialGrace: o.PartialGrace, PartialMargin: o.PartialMargin, WaitLimit: o.WaitLimit})}
	rep := &report{Command: o.Command, Seed: seed, Start: r.start, Options: o, Tally: r.tally}
	r.logf("seed %d (rerun: make soak SOAK_SEED=%d SOAK_DURATION=%s); work dir %s", seed, seed, o.Duration, o.WorkDir)
	rep.Err = r.do(ctx, seed, rep)
	rep.Violations = r.checker.Violations()
	rep.Stats = r.checker.Stats()
	return rep
}

func (r *run) do(ctx context.Context, seed uint64, rep *report) (err error) {
	o := r.opts
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.cluster, err = startCluster(ctx, o, func(s string) { r.logf("%s", s) })
	defer func() {
		if r.cluster != nil {
			if stopErr := r.cluster.stop(); stopErr != nil && err == nil {
				err = fmt.Errorf("stop the cluster: %w", stopErr)
			}
		}
	}()
	if err != nil {
		return err
	}
	if err := r.defineComponents(); err != nil {
		return err
	}
	if r.obs, err = newObserver(r.cluster.cfg, r.checker); err != nil {
		return err
	}
	d := newDriver(r, seed)
	ch := newChaos(r, seed)
	r.obs.onPod = d.landed
	r.obs.onLease = func(t time.Time, l *coordinationv1.Lease) { ch.leaseChanged(t, l) }
	obsCtx, stopObs := context.WithCancel(ctx)
	defer stopObs()
	if err := r.obs.start(obsCtx); err != nil {
		return err
	}

	superCtx, stopSupervising := context.WithCancel(ctx)
	defer stopSupervising()
	if err := r.startComponents(superCtx); err != nil {
		return err
	}
	defer func() {
		stopSupervising()
		if stopErr := r.stopComponents(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	if err := r.waitLeaders(ctx); err != nil {
		return err
	}
	rep.Setup = time.Since(r.start)
	r.logf("setup done in %s; churn for %s", rep.Setup.Round(100*time.Millisecond), o.Duration)

	// The clock of the checkers, and the cluster's health.
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				r.checker.Tick(now)
				if err := r.cluster.health(); err != nil {
					cancel(err)
				}
			}
		}
	}()

	churnStart := time.Now()
	churnCtx, stopChurn := context.WithTimeout(ctx, o.Duration)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.loop(churnCtx) }()
	go func() { defer wg.Done(); ch.loop(churnCtx) }()
	progress := time.NewTicker(time.Minute)
	for done := false; !done; {
		select {
		case <-churnCtx.Done():
			done = true
		case <-progress.C:
			r.logf("churn: %d jobs created, %d leader kills, %d violations so far", r.tally.get(cJobsCreated),
				r.tally.get(cKillOperator)+r.tally.get(cKillScheduler)+2*r.tally.get(cKillBoth), len(r.checker.Violations()))
		}
	}
	progress.Stop()
	stopChurn()
	wg.Wait()
	rep.Churn = time.Since(churnStart)
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}

	settleStart := time.Now()
	r.logf("quiet period: no more faults; nodes back; draining the jobs (at most %s)", o.Settle)
	if err := d.settle(ctx, settleStart.Add(o.Settle)); err != nil {
		return err
	}
	// What the last writes set off (a PodGroup deleted after a verdict)
	// gets a moment to land.
	time.Sleep(3 * time.Second)
	rep.Settle = time.Since(settleStart)
	now := time.Now()
	r.checker.Tick(now)
	r.checker.Final(now)
	r.tallyOutcomes(ctx)
	return context.Cause(ctx)
}

// defineComponents says how the operator and the scheduler run: their
// flags, their Leases, their logs.
func (r *run) defineComponents() error {
	o := r.opts
	le := []string{
		"--kubeconfig=" + r.cluster.kubeconfig,
		"--leader-elect",
		"--leader-election-namespace=" + leaseNamespace,
		"--leader-elect-lease-duration=" + o.LeaseDuration.String(),
		"--leader-elect-renew-deadline=" + o.RenewDeadline.String(),
		"--leader-elect-retry-period=" + o.RetryPeriod.String(),
		"--health-probe-bind-address=0",
	}
	// Preemption on: priorities make gangs preempt one another, one more
	// way members are deleted under a running gang.
	schedConfig := filepath.Join(o.WorkDir, "scheduler-config.yaml")
	if err := os.WriteFile(schedConfig, []byte("actions: [enqueue, preempt, allocate, backfill]\n"), 0o644); err != nil {
		return err
	}
	logDir := filepath.Join(o.WorkDir, logsDir)
	r.components = []*component{
		{name: "operator", binary: o.Operator, lease: "troupe-operator.troupe.dev", logDir: logDir,
			args: append(append([]string(nil), le...), "--gang-scheduler-name=troupe")},
		{name: "scheduler", binary: o.Scheduler, lease: "troupe-scheduler.troupe.dev", logDir: logDir,
			args: append(append([]string(nil), le...), "--partial-gang-grace-period="+o.PartialGrace.String(), "--config="+schedConfig)},
	}
	for _, c := range r.components {
		c.onExit = r.replicaExited
	}
	return nil
}

// startComponents starts two replicas each of the operator and the
// scheduler, and keeps them running.
func (r *run) startComponents(ctx context.Context) error {
	for _, c := range r.components {
		for i := range 2 {
			rep := &replica{comp: c, index: i}
			if err := rep.start(); err != nil {
				return err
			}
			r.tally.add(cStarts, 1)
			c.replicas = append(c.replicas, rep)
			go rep.supervise(ctx)
		}
	}
	return nil
}

// replicaExited hears every exit of a replica.
func (r *run) replicaExited(rep *replica, planned bool, tail string, err error) {
	r.tally.add(cStarts, 1)
	crashed, why := exitCause(tail)
	switch {
	case crashed:
		r.checker.Report(time.Now(), check.ProcessCrashed, rep.name(), why)
		r.tally.add(cExitsOther, 1)
		r.tally.exit(fmt.Sprintf("%s crashed: %s", rep.name(), firstLine(why)))
	case why == "lost its lease":
		r.tally.add(cExitsLease, 1)
		if !planned {
			r.tally.exit(fmt.Sprintf("%s lost its lease without being paused (a slow API server or machine)", rep.name()))
		}
	case !planned:
		r.tally.add(cExitsOther, 1)
		r.tally.exit(fmt.Sprintf("%s exited (%v): %s", rep.name(), err, firstLine(why)))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// waitLeaders waits until each component has a leader.
func (r *run) waitLeaders(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, c := range r.components {
		for {
			lead, _, err := c.leader(ctx, r.cluster.client, r.opts.LeaseDuration)
			if err == nil && lead != nil {
				r.logf("%s: %s leads", c.name, lead.name())
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no %s leads after 2 minutes (see %s): %v", c.name, r.opts.WorkDir+"/"+logsDir, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// stopComponents stops every replica with SIGTERM (continuing a paused
// one first).
func (r *run) stopComponents() error {
	var errs []error
	for _, c := range r.components {
		for _, rep := range c.replicas {
			rep.mu.Lock()
			p := rep.proc
			rep.mu.Unlock()
			if err := p.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// tallyOutcomes counts the jobs at the end by state.
func (r *run) tallyOutcomes(ctx context.Context) {
	d := &driver{r: r}
	jobs, _, err := d.view(ctx)
	if err != nil {
		r.logf("count the jobs at the end: %v", err)
		return
	}
	r.tally.mu.Lock()
	defer r.tally.mu.Unlock()
	for _, jv := range jobs {
		j := jv.job
		state := "other"
		switch {
		case j.Succeeded:
			state = "Succeeded"
		case j.Failed:
			state = "Failed (" + j.Reason + ")"
		case j.Running:
			state = "Running"
		}
		r.tally.outcomes[state]++
	}
}
