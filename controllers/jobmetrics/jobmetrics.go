// Package jobmetrics holds the operator's Prometheus metrics about the jobs
// it runs: training-operator's job counters under their upstream names and
// labels (so existing dashboards keep working), and Troupe's own on gangs.
//
// The counters count what the operator decided, once, in the pass whose
// status write stored it: a Recorder compares the status a pass read with
// the one it wrote. Only the leading replica runs passes, so only it counts;
// a counter starts from zero in a new leader, as every Prometheus counter
// does in a new process (rate() and increase() handle the reset).
//
// The jobs gauge is read from what the leader's passes saw last, so a
// standby replica reports no jobs, and a new leader reports every job once
// it has reconciled it (it reconciles every job at start).
package jobmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// Label names: training-operator's for its counters.
const (
	labelNamespace = "job_namespace"
	labelFramework = "framework"
	labelTrigger   = "trigger"
	labelState     = "state"
)

var (
	created = newJobCounter("training_operator_jobs_created_total",
		"Jobs created: counted when the operator first marks a job Created.")
	deleted = newJobCounter("training_operator_jobs_deleted_total",
		"Jobs deleted: counted when the operator sees a job it ran gone.")
	successful = newJobCounter("training_operator_jobs_successful_total",
		"Jobs that succeeded.")
	failed = newJobCounter("training_operator_jobs_failed_total",
		"Jobs that failed for good.")
	restarted = newJobCounter("training_operator_jobs_restarted_total",
		"Job restarts: each time a job's Restarting condition turns true (members restarted one by one), and each whole-gang restart.")
	gangRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "troupe_gang_restarts_total",
		Help: "Whole-gang restarts (gangPolicy.restartPolicy Gang), by the trigger that caused them: MemberFailed, MemberEvicted, NodeLost, GangBroken.",
	}, []string{labelNamespace, labelFramework, labelTrigger})
	gangRunning = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "troupe_job_gang_running_seconds",
		Help: "Seconds from a gang-scheduled job's creation until its gang first ran: the GangScheduled condition turned true (minMember members running or done).",
		// From a second (an idle cluster) to hours (a queue).
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	}, []string{labelNamespace, labelFramework})
	jobs = &jobStates{}
)

func newJobCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{labelNamespace, labelFramework})
}

func init() {
	ctrlmetrics.Registry.MustRegister(created, deleted, successful, failed, restarted, gangRestarts, gangRunning, jobs)
}

// Recorder records the metrics of one framework's jobs.
type Recorder struct {
	framework string
	// gangs maps each job this process has met to whether its gang has
	// run, so that only a gang's first run is observed, and only when this
	// process saw it wait.
	gangs sync.Map
}

// gangRecord is what a Recorder keeps of a job's gang.
type gangRecord struct {
	// uid tells a job from an earlier one of the same name.
	uid types.UID
	ran bool
}

// NewRecorder records the jobs of the framework named as training-operator
// names it ("tensorflow", "pytorch", "mpi": kubeflowv1.*FrameworkName).
func NewRecorder(framework string) *Recorder {
	return &Recorder{framework: framework}
}

// Observed records one pass over a job: before is the status the pass
// read, after the one it stored (the same when it wrote nothing). A nil
// Recorder records nothing.
func (r *Recorder) Observed(job types.NamespacedName, uid types.UID, createdAt time.Time, before, after *kubeflowv1.JobStatus, now time.Time) {
	if r == nil {
		return
	}
	jobs.set(r.framework, job, after.State)
	ns := job.Namespace
	if turnedTrue(before, after, kubeflowv1.JobCreated) {
		created.WithLabelValues(ns, r.framework).Inc()
	}
	if turnedTrue(before, after, kubeflowv1.JobSucceeded) {
		successful.WithLabelValues(ns, r.framework).Inc()
	}
	if turnedTrue(before, after, kubeflowv1.JobFailed) {
		failed.WithLabelValues(ns, r.framework).Inc()
	}
	gangRestarted := gangGeneration(after) > gangGeneration(before)
	if gangRestarted {
		trigger := ""
		if after.Gang.LastRestart != nil {
			trigger = string(after.Gang.LastRestart.Trigger)
		}
		gangRestarts.WithLabelValues(ns, r.framework, trigger).Inc()
	}
	if gangRestarted || turnedTrue(before, after, kubeflowv1.JobRestarting) {
		restarted.WithLabelValues(ns, r.framework).Inc()
	}
	r.observeGangRunning(job, uid, createdAt, before, after, now)
}

// observeGangRunning observes the time to a job's first whole gang. A job
// this process meets with its gang already running, or with a Running
// condition (it ran under an earlier leader), is marked without being
// observed: its first run was before this process knew it.
func (r *Recorder) observeGangRunning(job types.NamespacedName, uid types.UID, createdAt time.Time, before, after *kubeflowv1.JobStatus, now time.Time) {
	v, met := r.gangs.Load(job)
	met = met && v.(gangRecord).uid == uid
	switch {
	case met && v.(gangRecord).ran:
	case !met && (isTrue(before, kubeflowv1.JobGangScheduled) || condition(before, kubeflowv1.JobRunning) != nil):
		r.gangs.Store(job, gangRecord{uid: uid, ran: true})
	case isTrue(after, kubeflowv1.JobGangScheduled):
		r.gangs.Store(job, gangRecord{uid: uid, ran: true})
		gangRunning.WithLabelValues(job.Namespace, r.framework).Observe(now.Sub(createdAt).Seconds())
	case !met:
		r.gangs.Store(job, gangRecord{uid: uid})
	}
}

// Deleted records that a job this process ran is gone. A nil Recorder
// records nothing.
func (r *Recorder) Deleted(job types.NamespacedName) {
	if r == nil {
		return
	}
	r.gangs.Delete(job)
	if jobs.forget(r.framework, job) {
		deleted.WithLabelValues(job.Namespace, r.framework).Inc()
	}
}

func gangGeneration(s *kubeflowv1.JobStatus) int32 {
	if s.Gang == nil {
		return 0
	}
	return s.Gang.Generation
}

func turnedTrue(before, after *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) bool {
	return !isTrue(before, ctype) && isTrue(after, ctype)
}

func isTrue(s *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) bool {
	c := condition(s, ctype)
	return c != nil && c.Status == corev1.ConditionTrue
}

func condition(s *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) *kubeflowv1.JobCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ctype {
			return &s.Conditions[i]
		}
	}
	return nil
}
