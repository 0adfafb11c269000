// Package metrics holds the scheduler's Prometheus metrics. They are
// registered once, on controller-runtime's registry, so the manager's
// metrics endpoint serves them beside the client and workqueue metrics.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	namespace = "troupe"
	subsystem = "scheduler"
)

// Bind results, the values of the binds_total label.
const (
	BindSuccess = "success"
	BindError   = "error"
)

// StatusGone is the status_writes_total result of a write whose PodGroup
// or Queue was deleted since the snapshot; the others are success and
// error.
const StatusGone = "gone"

// Gang states, the values of the gangs gauge's label. A partial gang is
// also counted as pending.
const (
	GangPending   = "pending"
	GangScheduled = "scheduled"
	GangPartial   = "partial"
)

// SpreadBuckets are the bounds of the gang bind spreads' histograms, in
// seconds: round figures, so that a grace such as the partial-gang
// benchmark's 2 s is one of them.
var SpreadBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30}

var (
	// CycleDuration is the time of one whole cycle: snapshot, session,
	// binds and status writes.
	CycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "cycle_duration_seconds",
		Help:    "Duration of a scheduling cycle: snapshot, actions, binds and status writes.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	// DecisionDuration is the part of a cycle before any API call: the
	// snapshot and the session. It shows what a cycle costs as the backlog
	// grows, without the binds, whose time is the API server's.
	DecisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "decision_duration_seconds",
		Help:    "Duration of a scheduling cycle's snapshot and session, before its binds and status writes.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	})
	// SnapshotDuration is the first part of a decision: copying the
	// cache into the cycle's snapshot. It grows with the nodes and pods
	// that exist (and, most, with the nodes that changed since the last
	// cycle), where the rest of the decision grows with the pods placed.
	SnapshotDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "snapshot_duration_seconds",
		Help:    "Duration of a scheduling cycle's snapshot of the cache, the first part of its decision.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	})
	// DecisionCPU is the CPU time of the decisions (snapshot and
	// session), where the platform tells it (Linux). Unlike their
	// duration it leaves out the time the decision waited for a CPU,
	// which on a busy node is the neighbours' doing.
	DecisionCPU = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "decision_cpu_seconds_total",
		Help: "CPU time of the scheduling cycles' snapshots and sessions (Linux only).",
	})
	// Cycles counts cycles run.
	Cycles = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "cycles_total",
		Help: "Scheduling cycles run.",
	})
	// BindDuration is the latency of one pods/binding request.
	BindDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "bind_duration_seconds",
		Help:    "Latency of one pods/binding request.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	// GangBindRequestSpread and GangBindAnswerSpread are, for each gang
	// whose binds of one cycle all succeeded, the time from its first
	// bind request to its last, and from the answer to its first bind to
	// the answer to its last. There is no bind of a whole gang in
	// Kubernetes, only one per pod, so for the second of these the API
	// server shows the gang partly bound. The first is the scheduler's
	// doing (a gang's binds queued behind others'); the second, once the
	// first is small, the API server's: the spread of its latency.
	GangBindRequestSpread = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "gang_bind_request_spread_seconds",
		Help:    "Per gang whose binds of one cycle all succeeded: time from its first bind request to its last.",
		Buckets: SpreadBuckets,
	})
	GangBindAnswerSpread = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "gang_bind_answer_spread_seconds",
		Help:    "Per gang whose binds of one cycle all succeeded: time from the answer to its first bind to the answer to its last, in which the API server showed it partly bound.",
		Buckets: SpreadBuckets,
	})
	// Binds counts bind requests by result.
	Binds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "binds_total",
		Help: "Bind requests by result (success, error).",
	}, []string{"result"})
	// Gangs is the number of gangs by state after the last cycle: pending
	// (not yet minMember bound), scheduled (minMember bound or running)
	// and partial (some members bound, the gang not whole; these are
	// pending too).
	Gangs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "gangs",
		Help: "Gangs after the last cycle by state: pending (not minMember bound yet), scheduled, partial (some members bound, the gang not whole; also counted as pending).",
	}, []string{"state"})
	// PartialGangReclaims counts partial gangs whose members on nodes the
	// scheduler deleted: reason Reclaimed (not completed within the grace
	// period) or Preempted (the rest of a gang a member of which was
	// preempted).
	PartialGangReclaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "partial_gang_reclaims_total",
		Help: "Partial gangs whose bound members the scheduler deleted, by reason: Reclaimed (not completed within the grace period) or Preempted (a member was preempted).",
	}, []string{"reason"})
	// PredicateEvaluations counts static predicate evaluations: at most
	// one per (equivalence class, node) per cycle, however many pods.
	PredicateEvaluations = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "predicate_evaluations_total",
		Help: "Static predicate evaluations (at most one per equivalence class and node per cycle).",
	})
	// Preemptions counts victim gangs: gangs whose pods the scheduler
	// deleted to make room for a starving gang of higher priority.
	Preemptions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "preemptions_total",
		Help: "Gangs preempted: their pods deleted to make room for a gang of higher priority.",
	})
	// FencedCycles counts cycles that committed nothing because the
	// replica's lease was too old to be sure it still led.
	FencedCycles = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "fenced_cycles_total",
		Help: "Cycles that committed nothing: this replica had not renewed its leader lease within the renew deadline.",
	})
	// HeldNodes is the number of nodes waiting gangs held in the last
	// cycle (the reservation plugin), and HoldingGangs the gangs that held
	// them: capacity kept idle for the gangs that wait longest.
	HeldNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "held_nodes",
		Help: "Nodes held in the last cycle by gangs that waited long enough (the reservation plugin): what is idle on them is kept from younger or lower-priority gangs.",
	})
	HoldingGangs = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "holding_gangs",
		Help: "Gangs that held nodes in the last cycle (the reservation plugin).",
	})
	// CachesSynced is when the informers had listed every watched object
	// and the pod handler had derived the tasks of the pods listed, as Unix
	// time. The first cycle starts then, so the time from it to a
	// backlog's first bind is the first cycle's own latency, apart from
	// the API server's lists (the benchmarks report it).
	CachesSynced = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "caches_synced_timestamp_seconds",
		Help: "Unix time at which the informers had listed every watched object, the pods' tasks were derived, and the first cycle could start; 0 until then.",
	})
	// StatusWriteLag is, for each PodGroup or Queue status write that
	// lands, the time since the oldest decision it carries was handed to
	// the writer: how far what a user reads (kubectl get podgroup) lags
	// what the scheduler decided. The statuses of a cycle are handed over
	// once its binds have returned, so the binds' own time is not in it.
	StatusWriteLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "status_write_lag_seconds",
		Help:    "Per PodGroup or Queue status write landed: time since the oldest decision it carries was handed to the status writer.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120},
	})
	// StatusWrites counts PodGroup and Queue status writes by result.
	StatusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "status_writes_total",
		Help: "PodGroup and Queue status writes by kind and result (success, error, gone: deleted since the snapshot).",
	}, []string{"kind", "result"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(CycleDuration, DecisionDuration, SnapshotDuration, DecisionCPU, Cycles, BindDuration, GangBindRequestSpread, GangBindAnswerSpread, Binds, Gangs, PredicateEvaluations, Preemptions, PartialGangReclaims, StatusWrites, StatusWriteLag, FencedCycles, HeldNodes, HoldingGangs, CachesSynced)
}
