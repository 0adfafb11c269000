// Package check holds the soak's invariant checkers. They read nothing
// themselves: the harness feeds them what its own watches of the API
// server deliver (pods, nodes, jobs, PodGroups), converted to the plain
// values below, and what it knows of the scheduler's leadership. Nothing
// here shares code with the operator or the scheduler under test, so that
// a bug there cannot hide itself here.
//
// Each invariant is checked as the events arrive, and some again at the
// end (Final). A violation is recorded once per occurrence, with the time
// it was seen.
package check

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// JobKey names a job for people.
type JobKey struct {
	Kind, Namespace, Name string
}

func (k JobKey) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// Pod is what the checkers read of a pod.
type Pod struct {
	UID, Namespace, Name string
	// RV is the pod's resourceVersion as a number: the API server's etcd
	// revision of the write that made this state (see Checker.Pod).
	RV uint64
	// JobUID is the controlling job's UID (the controller owner
	// reference), empty for a pod no job controls.
	JobUID string
	// Group is the scheduling.k8s.io/group-name annotation: the PodGroup,
	// in the pod's namespace.
	Group string
	// Role is the volcano.sh/task-spec annotation, the key of the
	// PodGroup's minTaskMember.
	Role string
	// ReplicaType and Index are the training.kubeflow.org labels that name
	// the member the pod is.
	ReplicaType, Index string
	// Generation is the troupe.dev/gang-generation label; a pod without it
	// is of generation 0, as the operator reads it.
	Generation int32
	Node       string
	Phase      corev1.PodPhase
	// Terminating: the pod has a deletionTimestamp.
	Terminating bool
	// ExitCode is the first terminated container's exit code, if any.
	ExitCode *int32
	// Disrupted: the pod has a DisruptionTarget condition that is True
	// (evicted, preempted, reclaimed, its node gone), for the reason
	// DisruptionReason.
	Disrupted        bool
	DisruptionReason string
	// Requests is what the pod asks of its node: kube-scheduler's
	// effective request (the larger of the containers' sum and any init
	// container, plus the pod overhead).
	Requests corev1.ResourceList
	// NodeSelector and Tolerations are the pod's: which nodes it may use
	// (see fit.go).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Gated: the pod has scheduling gates, so no scheduler may place it.
	Gated bool
}

// Terminal reports whether the pod has run its course.
func (p Pod) Terminal() bool { return p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed }

// Node is what the checkers read of a node.
type Node struct {
	Name        string
	Allocatable corev1.ResourceList
	// Labels, Taints and Unschedulable say which pods may use it.
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
}

// Job is what the checkers read of a TFJob, PyTorchJob or MPIJob.
type Job struct {
	UID string
	Key JobKey
	RV  uint64
	// GangRestart: spec.runPolicy.gangPolicy.restartPolicy is Gang.
	GangRestart bool
	// Elastic: a PyTorchJob whose elasticPolicy lets it run with fewer
	// workers than it has; the operator replaces a member above the
	// minimum alone, without a gang restart.
	Elastic bool
	// ElasticMinMember is, for an elastic job, the fewest members it runs
	// with (the master and elasticPolicy.minReplicas workers), and
	// ElasticMinWorkers the fewest workers; Worker0Hosts says worker 0
	// hosts the c10d rendezvous (no rdzvHost, backend c10d), so that the
	// others cannot run on without it. A member is replaced alone only
	// while the gang keeps those minimums and the member is a worker the
	// others do not depend on (docs/jobs.md).
	ElasticMinMember, ElasticMinWorkers int32
	Worker0Hosts                        bool
	// RestartPolicy is each replica type's restartPolicy, by the
	// lower-case replica type (as pods are labelled).
	RestartPolicy map[string]string
	// Generation, Restarts and Disruptions are status.gang's.
	Generation, Restarts, Disruptions int32
	// LastRestart is status.gang.lastRestart in words (trigger, member,
	// message): what the operator says caused the latest restart, for a
	// violation's report.
	LastRestart string
	// Running, Succeeded and Failed are the job's conditions that are
	// True; Reason is the Failed condition's reason.
	Running, Succeeded, Failed bool
	Reason                     string
	// TTL: runPolicy.ttlSecondsAfterFinished is set, so the operator
	// deletes the job some time after it finished.
	TTL bool
	// Deleting: the job has a deletionTimestamp.
	Deleting bool
}

// Finished reports whether the job has a verdict.
func (j Job) Finished() bool { return j.Succeeded || j.Failed }

// PodGroup is what the checkers read of a scheduling.troupe.dev PodGroup.
type PodGroup struct {
	Namespace, Name string
	// OwnerUID is the controlling job's UID.
	OwnerUID      string
	MinMember     int32
	MinTaskMember map[string]int32
}

// Violation is one broken invariant.
type Violation struct {
	Time      time.Time
	Invariant string
	Subject   string
	Message   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s: %s: %s", v.Time.UTC().Format("15:04:05.000"), v.Invariant, v.Subject, v.Message)
}

// The invariants, as violations name them.
const (
	OverCommit       = "over-commit"
	DoubleBind       = "double-bind"
	MixedGenerations = "mixed-generations"
	DuplicateMember  = "duplicate-member"
	PartialGang      = "partial-gang"
	StuckJob         = "stuck-job"
	LostJob          = "lost-job"
	LeakedPodGroup   = "leaked-podgroup"
	RestartCount     = "restart-count"
	UnhandledBreak   = "unhandled-break"
	ProcessCrashed   = "process-crashed"
	FailedWithoutWhy = "failed-without-reason"
	ReplacedAlone    = "replaced-alone"
	WaitedWithRoom   = "waited-with-room"
)

// ParseRV reads a resourceVersion as the number it is on a single etcd.
func ParseRV(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
