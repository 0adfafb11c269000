// Package bench is the benchmark harness of `make bench`: for every
// scenario and every placer in turn, it starts a fresh kube-apiserver and
// etcd, creates the scenario's nodes and gangs in the placer's dialect,
// starts the placer as its own process and measures it until every gang is
// bound whole. It prints the results and writes them into
// docs/benchmarks.md.
//
// Subpackages: scenario (the workloads), placer (the schedulers, one small
// type each), nullbinder (the logic-free placer), measure (throughput, CPU,
// API writes, quality) and report (tables and goals).
package bench

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
	"github.com/troupe-ml/troupe/test/bench/nullbinder"
	"github.com/troupe-ml/troupe/test/bench/operatorbench"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/report"
)

// NullBinderCommand is the subcommand that runs the null binder; the
// harness re-executes itself with it.
const NullBinderCommand = "null-binder"

// OperatorCommand is the subcommand of the operator benchmark
// (test/bench/operatorbench): Troupe's operator against training-operator.
const OperatorCommand = "operator"

// Main runs the harness (or, with the null-binder subcommand, the null
// binder) and returns the exit code: 2 for bad flags, 1 when a run failed
// or --check found a gang not bound whole.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == NullBinderCommand {
		return nullbinder.Main(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == OperatorCommand {
		return operatorbench.Main(ctx, args[1:], stdout, stderr)
	}
	opts := NewOptions()
	if err := cmdutil.ParseFlags("bench", args, stderr, opts); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	if opts.Command == "" {
		opts.Command = strings.Join(append([]string{filepath.Base(os.Args[0])}, args...), " ")
	}
	if err := Run(ctx, opts, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// Run runs every scenario with every placer, renders the results, and
// fails if a run failed, or with --check if a gang was left unbound or
// partial.
func Run(ctx context.Context, opts *Options, stdout, log io.Writer) error {
	placers, err := placersFor(opts)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(opts.WorkDir); err != nil {
		return err
	}
	meta := report.Meta{Command: opts.Command, Date: time.Now(), Settings: settings(opts)}
	var all []report.Result
	for _, s := range opts.ScenarioList() {
		// The placers take turns, so that a slow minute of this shared
		// machine falls on all of them alike.
		for rep := range opts.Repeat {
			for _, p := range placers {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if !s.RunsWith(family(p)) {
					if rep == 0 {
						fmt.Fprintf(log, "== %s with %s: not run (the scenario runs only %v)\n", s.Name, p.Name(), s.Placers)
					}
					continue
				}
				name, label := s.Name+"-"+p.Name(), ""
				if opts.Repeat > 1 {
					name += fmt.Sprintf("-%d", rep+1)
					label = fmt.Sprintf(" (run %d of %d)", rep+1, opts.Repeat)
				}
				fmt.Fprintf(log, "== %s (%s) with %s%s\n", s.Name, s.Title, p.Name(), label)
				r := (&run{opts: opts, scenario: s, placer: p, dir: filepath.Join(opts.WorkDir, name), log: log}).do(ctx)
				fmt.Fprintf(log, "  %s\n", summary(r))
				all = append(all, r)
			}
		}
	}
	meta.Machine = machineFacts()

	var out strings.Builder
	report.Markdown(&out, meta, all)
	fmt.Fprint(stdout, out.String())
	if opts.Out != "" {
		if err := report.UpdateFile(opts.Out, out.String()); err != nil {
			return err
		}
		fmt.Fprintf(log, "results written to %s\n", opts.Out)
	}
	return verdict(opts, all, log)
}

// verdict fails on a failed run (report.Result.Failure: not measured, a
// gang partly bound at the end, or a gang the null binder or Troupe never
// bound whole where every gang fits), and with --check also on a peer that
// bound no gang at all (the harness did not wire it right) or a scheduler
// that left a gang partly bound for longer than --partial-grace during the
// run (the null binder binds pods, not gangs: its partial gangs are
// reported, not failed). A peer that
// binds some gangs and then stalls is the peer's own behaviour, which the
// benchmark exists to show: it is reported, not failed.
func verdict(opts *Options, results []report.Result, log io.Writer) error {
	var errs []error
	for _, r := range results {
		name := r.Scenario.Name + "/" + r.Placer
		unbound := r.Scenario.MustBindAll && len(r.NeverUp) > 0
		switch err := r.Failure(); {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case !opts.Check:
		case len(r.PartialDuring) > 0 && !strings.HasPrefix(r.Placer, PlacerNull):
			e := r.PartialDuring[0]
			errs = append(errs, fmt.Errorf("%s: %d gangs partly bound for longer than %v during the run, the longest %s for %v", name, len(r.PartialDuring), opts.PartialGrace, e.Gang, e.Duration()))
		case unbound && r.Throughput.Gangs == 0:
			errs = append(errs, fmt.Errorf("%s: %d of %d gangs never bound whole: %s", name, len(r.NeverUp), r.Scenario.Gangs, strings.Join(r.NeverUp, ", ")))
		case unbound:
			fmt.Fprintf(log, "note: %s left %d of %d gangs unbound after binding %d: the peer's own behaviour, not a failure\n", name, len(r.NeverUp), r.Scenario.Gangs, r.Throughput.Gangs)
		}
	}
	return errors.Join(errs...)
}

// placersFor builds the placers --placers names.
func placersFor(opts *Options) ([]placer.Placer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var out []placer.Placer
	for _, name := range opts.PlacerList() {
		switch name {
		case PlacerNull:
			widths, err := opts.NullWidths()
			if err != nil {
				return nil, err
			}
			for _, n := range widths {
				out = append(out, placer.Null{Exe: exe, Subcommand: NullBinderCommand, BindWorkers: n})
			}
		case PlacerTroupe:
			out = append(out, placer.Troupe{Binary: opts.TroupeScheduler, Pprof: opts.Profile})
			widths, err := opts.TroupeWidths()
			if err != nil {
				return nil, err
			}
			for _, n := range widths {
				out = append(out, placer.Troupe{Binary: opts.TroupeScheduler, BindWorkers: n})
			}
		case PlacerTroupeGang:
			out = append(out, placer.Troupe{Binary: opts.TroupeScheduler, Label: name, NoPodEvents: true})
		case PlacerVolcano:
			out = append(out, placer.Volcano{Binary: opts.VolcanoScheduler, Label: name})
		case PlacerVolcanoFast:
			out = append(out, placer.Volcano{Binary: opts.VolcanoScheduler, Label: name, Period: 200 * time.Millisecond})
		case PlacerCoscheduling:
			out = append(out, placer.Coscheduling{Binary: opts.CoschedulingScheduler})
		case PlacerKubeNative:
			// kube-scheduler comes with the control plane.
			out = append(out, placer.KubeNative{Binary: filepath.Join(opts.ControlPlaneDir, "kube-scheduler")})
		}
	}
	return out, nil
}

// family is the name a scenario's list of placers knows a placer by: the
// null binder's sweep is one, and troupe's variants at other binds in
// flight are troupe.
func family(p placer.Placer) string {
	switch p := p.(type) {
	case placer.Null:
		return PlacerNull
	case placer.Troupe:
		if p.BindWorkers > 0 && p.Label == "" {
			return PlacerTroupe
		}
	}
	return p.Name()
}

func summary(r report.Result) string {
	if r.Err != nil {
		return "failed: " + r.Err.Error()
	}
	t := r.Throughput
	out := fmt.Sprintf("%d pods, %d gangs bound; makespan %v (first bind %v), %.0f pods/s over it; CPU %v (%v/pod); peak RSS %d MiB; %.2f writes/pod; partial %d during, %d at the end; never bound %d; watch errors %d (the watch saw: makespan %v, partial %d during)",
		t.Pods, t.Gangs, t.Makespan.Round(time.Millisecond), t.FirstBind.Round(time.Millisecond), t.OverMakespan, r.PlacerCPU, r.CPUPerPod().Round(time.Microsecond),
		r.PeakRSS>>20, r.WritesPerPod(), len(r.PartialDuring), len(r.Partial), len(r.NeverUp), r.WatchErrors, r.Watched.Makespan.Round(time.Millisecond), r.Watched.PartialDuring)
	if after, ok := r.FirstBindAfterSync(); ok {
		out += fmt.Sprintf("; caches synced at %v, first bind %v after", r.CachesSynced.Round(time.Millisecond), after.Round(time.Millisecond))
	}
	if s := r.Stream; s != nil {
		out += fmt.Sprintf("; stream: %d of %d arrived gangs bound whole, %d split across racks, wait %v median, %v p90; GPUs stranded %d median, %d max of %d samples",
			s.Bound, s.Arrived, r.Quality.Racks.Split, s.Wait(0.5).Round(time.Millisecond), s.Wait(0.9).Round(time.Millisecond), s.StrandedMedian(), s.StrandedMax(), len(s.Stranded))
	}
	return out
}

func settings(o *Options) []string {
	troupeBinds := "its own default"
	if o.BindWorkers > 0 {
		troupeBinds = fmt.Sprint(o.BindWorkers)
	}
	if o.TroupeBindWorkers != "" {
		troupeBinds += fmt.Sprintf(", and as variants troupe-<n> at %s (the goals judge troupe, never a variant)", strings.ReplaceAll(o.TroupeBindWorkers, ",", ", "))
	}
	out := []string{
		fmt.Sprintf("Client rate limit, the same for every placer and the ceiling: %s. Binds in flight: the null binder swept over %s (the ceiling of a scenario is the best median makespan among them); troupe-scheduler: %s.",
			o.Limit(), strings.ReplaceAll(o.NullBindWorkers, ",", ", "), troupeBinds),
		fmt.Sprintf("Bind times: when the API server completed each bind, from its audit log. Partial gangs: a gang partly bound for longer than %v is counted during the run, and one partly bound at the end fails the run.", o.PartialGrace),
		fmt.Sprintf("Scale %v of the reference point; S3's gangs run %v; a run ends when every gang was bound whole, after %v without a bind, or after %v.", o.Scale, o.Hold, o.Settle, o.RunTimeout),
		"Each placer gets a fresh kube-apiserver and etcd per scenario; the clock starts when the placer's process starts, after every node, PodGroup and pod exists.",
	}
	for _, s := range o.ScenarioList() {
		if s.Streamed() {
			out = append(out, fmt.Sprintf("%s's gangs are the exception: none exists at the start; the harness creates one every %v from %v after it, and deletes each %v after it is bound whole. "+
				"Without a bind, a run of %s ends only once every gang has arrived, after %v (--settle and the hold).", s.Name, s.ArrivalEvery, s.FirstArrival, s.Hold, s.Name, o.Settle+s.Hold))
		}
	}
	return append(out,
		repeats(o.Repeat),
		fmt.Sprintf("CPU time (the placer's whole process, every thread) and API writes are counted from the start until the API server has had no write for %v after the run, at most %v after it; peak RSS is the process's VmHWM.", quietWrites, o.Trailing),
	)
}

func repeats(n int) string {
	if n == 1 {
		return "Each placer ran each scenario once."
	}
	return fmt.Sprintf("Each placer ran each scenario %d times, the placers taking turns; in the scenario tables every figure is the median of its own runs, with the range.", n)
}
