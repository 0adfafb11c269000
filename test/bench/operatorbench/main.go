// Package operatorbench is `bench operator` (issue 16, part 3): Troupe's
// operator against Kubeflow's training-operator v1.9.4, end to end. Each
// run of a combination (an operator, one of its gang backends and that
// backend's scheduler) gets a fresh kube-apiserver and etcd with the CRDs
// its operator needs (Troupe's kubeflow.org/v1 CRDs for Troupe's
// operator, upstream's for training-operator: they are the same kinds),
// kwok nodes enough for every pod, and the binaries as processes. The
// harness applies N PyTorchJobs at once and measures until every pod and
// PodGroup exists and until every pod is Running, the operator's CPU
// time and API writes, and then a gang-restart probe. It prints a report,
// writes it into its own section of docs/benchmarks.md, and judges the
// issue's goals (verdict.go).
package operatorbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// Main runs the benchmark and returns the exit code: 2 for bad flags, 1
// when a run failed or, with --check, a run did not bring every pod to
// Running or a restart probe's job did not run whole again.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts := NewOptions()
	if err := cmdutil.ParseFlags("bench operator", args, stderr, opts); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	if opts.Command == "" {
		opts.Command = strings.Join(append([]string{filepath.Base(os.Args[0]), "operator"}, args...), " ")
	}
	if err := Run(ctx, opts, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// Run runs every combination --repeat times, the combinations taking
// turns so that a slow minute of the shared machine falls on all alike,
// then reports and judges.
func Run(ctx context.Context, o *Options, stdout, log io.Writer) error {
	// The schedulers run in folders of their own: every path must hold
	// from anywhere.
	for _, p := range []*string{&o.ControlPlaneDir, &o.KwokDir, &o.CRDs, &o.WorkDir, &o.TroupeOperator,
		&o.TroupeScheduler, &o.TrainingOperator, &o.VolcanoScheduler, &o.CoschedulingScheduler} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if err := os.RemoveAll(o.WorkDir); err != nil {
		return err
	}
	combos := o.CombinationList()
	var results []Result
	for rep := range o.Repeat {
		for _, c := range combos {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			name := fmt.Sprintf("%s-%d", strings.ReplaceAll(c.Name, "+", "-"), rep+1)
			fmt.Fprintf(log, "== %s, %d jobs (run %d of %d)\n", c.Name, o.Jobs, rep+1, o.Repeat)
			r := runOne(ctx, o, c, filepath.Join(o.WorkDir, name), log)
			if r.Err != nil {
				fmt.Fprintf(log, "  failed: %v (logs: %s)\n", r.Err, filepath.Join(o.WorkDir, name, "logs"))
			}
			results = append(results, r)
		}
	}
	names := make([]string, len(combos))
	for i, c := range combos {
		names[i] = c.Name
	}
	summaries := Summarize(names, results)
	verdicts := Judge(Goals, summaries, o.Jobs)
	var md strings.Builder
	Markdown(&md, Meta{Command: o.Command, Date: time.Now(), Options: o}, summaries, verdicts)
	fmt.Fprint(stdout, md.String())
	if o.Out != "" {
		if err := UpdateFile(o.Out, SectionOf(o), md.String()); err != nil {
			return err
		}
		fmt.Fprintf(log, "results written to %s\n", o.Out)
	}
	return check(o, summaries)
}

// check fails on a run that could not be measured (a run that does not
// bring every pod to Running within --run-timeout is one) and, with
// --check, on a restart probe whose job did not run whole again.
func check(o *Options, summaries []Summary) error {
	var errs []error
	for _, s := range summaries {
		for _, err := range s.Errors {
			errs = append(errs, fmt.Errorf("%s: %w", s.Combination, err))
		}
		if o.Check {
			for _, e := range s.RestartErrors {
				errs = append(errs, fmt.Errorf("%s: restart probe: %s", s.Combination, e))
			}
		}
	}
	return errors.Join(errs...)
}
