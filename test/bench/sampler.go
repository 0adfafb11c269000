package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/report"
)

// Troupe's metrics the harness reads (gangscheduler/metrics).
const (
	troupePrefix      = "troupe_scheduler_"
	troupeCycles      = troupePrefix + "cycles_total"
	troupeCycleTotal  = troupePrefix + "cycle_duration_seconds_sum"
	troupeDecisions   = troupePrefix + "decision_duration_seconds_sum"
	troupeDecisionCPU = troupePrefix + "decision_cpu_seconds_total"
	// troupeAnswerSpread is the histogram of how far apart the answers to
	// a gang's binds came back.
	troupeAnswerSpread = troupePrefix + "gang_bind_answer_spread_seconds"
	troupeBinds        = troupePrefix + "binds_total"
)

var httpClient = &http.Client{Timeout: 5 * time.Second}

// get reads url's body.
func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// scrape reads a Prometheus endpoint.
func scrape(ctx context.Context, url string) ([]measure.Sample, error) {
	raw, err := get(ctx, url)
	if err != nil {
		return nil, err
	}
	return measure.ParseText(bytes.NewReader(raw))
}

// cycleSample is the cycles run between two scrapes of Troupe's metrics.
func cycleSample(at time.Duration, backlog int, last, cur []measure.Sample) report.CycleSample {
	delta := func(name string) float64 { return measure.Sum(cur, name, nil) - measure.Sum(last, name, nil) }
	return report.CycleSample{At: at, Backlog: backlog, Cycles: delta(troupeCycles), CycleSeconds: delta(troupeCycleTotal),
		DecisionSeconds: delta(troupeDecisions), DecisionCPUSeconds: delta(troupeDecisionCPU), Binds: delta(troupeBinds)}
}

// troupeCounters are Troupe's own counters, each summed over its labels
// (histograms by their _sum and _count).
func troupeCounters(samples []measure.Sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if strings.HasPrefix(s.Name, troupePrefix) && !strings.HasSuffix(s.Name, "_bucket") {
			out[strings.TrimPrefix(s.Name, troupePrefix)] += s.Value
		}
	}
	return out
}

// answeredApart is how many gangs troupe-scheduler saw answered further
// apart than grace, by the buckets of its gang_bind_answer_spread_seconds
// histogram, from its smallest finite bound at or above grace; nil when
// the samples have no such bound (another placer, or a grace beyond every
// bound).
func answeredApart(samples []measure.Sample, grace time.Duration) *report.AnsweredApart {
	var out *report.AnsweredApart
	total := measure.Sum(samples, troupeAnswerSpread+"_count", nil)
	for _, s := range samples {
		if s.Name != troupeAnswerSpread+"_bucket" {
			continue
		}
		bound, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil || math.IsInf(bound, 1) {
			continue // +Inf holds every gang: it tells none apart
		}
		at := time.Duration(bound * float64(time.Second))
		if at < grace || (out != nil && at >= out.Bound) {
			continue
		}
		out = &report.AnsweredApart{Gangs: total - s.Value, Bound: at}
	}
	return out
}

// cachesSynced is when the placer's caches had synced, from the clock's
// start, by troupe-scheduler's caches_synced_timestamp_seconds among its
// counters (Unix time, from the same machine's clock); 0 when the placer
// does not say.
func cachesSynced(start time.Time, counters map[string]float64) time.Duration {
	at := counters["caches_synced_timestamp_seconds"]
	if at <= 0 {
		return 0
	}
	return time.Unix(0, int64(at*float64(time.Second))).Sub(start)
}

// profiler takes back-to-back CPU profiles of a placer over its pprof
// endpoint for as long as the run lasts; pprof merges them into one view.
type profiler struct {
	dir   string
	stopC chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	files []string
	err   error
}

// profileSlice is one profile's length: short, so that little of the last
// one falls after the run.
const profileSlice = 2 * time.Second

func startProfiler(ctx context.Context, pprofURL, dir string) *profiler {
	p := &profiler{dir: dir, stopC: make(chan struct{})}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.err = err
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		url := fmt.Sprintf("%s/profile?seconds=%d", pprofURL, int(profileSlice/time.Second))
		for i := 0; ; i++ {
			select {
			case <-p.stopC:
				return
			case <-ctx.Done():
				return
			default:
			}
			raw, err := get(ctx, url)
			p.mu.Lock()
			if err != nil {
				p.err = err
			} else {
				f := filepath.Join(dir, fmt.Sprintf("cpu-%03d.pprof", i))
				if err := os.WriteFile(f, raw, 0o644); err != nil {
					p.err = err
				} else {
					p.files = append(p.files, f)
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// stop waits for the profile under way and returns the top of all of
// them, as `go tool pprof -top` prints it.
func (p *profiler) stop(ctx context.Context) string {
	close(p.stopC)
	p.wg.Wait()
	if len(p.files) == 0 {
		return fmt.Sprintf("no profile: %v", p.err)
	}
	args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, p.files...)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof: %v\n%s", err, out)
	}
	return fmt.Sprintf("%s\n(profiles: %s/cpu-*.pprof)", strings.TrimSpace(string(out)), p.dir)
}
