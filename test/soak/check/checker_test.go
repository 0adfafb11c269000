package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// The checkers are fed event sequences as the watches would deliver them;
// each case says which invariants must be flagged (none for a sequence
// that keeps every promise), so that we know each checker can fail.

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// step is one event, at seconds after t0.
type step struct {
	at float64
	do func(c *Checker, t time.Time)
}

func at(s float64, do func(c *Checker, t time.Time)) step { return step{s, do} }

func pod(p Pod) func(*Checker, time.Time) { return func(c *Checker, t time.Time) { c.Pod(t, p) } }
func podGone(p Pod) func(*Checker, time.Time) {
	return func(c *Checker, t time.Time) { c.PodGone(t, p) }
}
func node(name, cpu, gpu string) func(*Checker, time.Time) {
	return func(c *Checker, t time.Time) {
		c.Node(t, Node{Name: name, Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), "nvidia.com/gpu": resource.MustParse(gpu)}})
	}
}
func nodeGone(name string, rv uint64) func(*Checker, time.Time) {
	return func(c *Checker, t time.Time) { c.NodeGone(t, name, rv) }
}
func job(j Job) func(*Checker, time.Time) { return func(c *Checker, t time.Time) { c.Job(t, j) } }
func group(g PodGroup) func(*Checker, time.Time) {
	return func(c *Checker, t time.Time) { c.PodGroup(t, g) }
}
func tick(c *Checker, t time.Time)  { c.Tick(t) }
func final(c *Checker, t time.Time) { c.Final(t) }

// A pod of job j1, gang g1, member worker-<index>, generation gen.
func member(name, index string, gen int32, rv uint64) Pod {
	return Pod{UID: name, Namespace: "soak", Name: name, RV: rv, JobUID: "j1", Group: "g1", Role: "worker",
		ReplicaType: "worker", Index: index, Generation: gen, Phase: corev1.PodPending,
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("4")}}
}

func (p Pod) on(n string) Pod { p.Node = n; return p }
func (p Pod) running(rv uint64) Pod {
	p.Phase, p.RV = corev1.PodRunning, rv
	return p
}
func (p Pod) failed(code int32, rv uint64) Pod {
	p.Phase, p.ExitCode, p.RV = corev1.PodFailed, &code, rv
	return p
}
func (p Pod) succeeded(rv uint64) Pod {
	p.Phase, p.RV = corev1.PodSucceeded, rv
	return p
}
func (p Pod) deleting(rv uint64) Pod {
	p.Terminating, p.RV = true, rv
	return p
}
func (p Pod) disrupted() Pod { p.Disrupted = true; return p }

var j1Key = JobKey{Kind: "PyTorchJob", Namespace: "soak", Name: "j1"}

// gangJob is j1 restarting as a whole gang, workers under ExitCode.
func gangJob(rv uint64, gen, restarts, disruptions int32) Job {
	return Job{UID: "j1", Key: j1Key, RV: rv, GangRestart: true, RestartPolicy: map[string]string{"worker": "ExitCode"},
		Generation: gen, Restarts: restarts, Disruptions: disruptions, Running: true}
}

func (j Job) failedWith(reason string) Job {
	j.Running, j.Failed, j.Reason = false, true, reason
	return j
}

var g1 = PodGroup{Namespace: "soak", Name: "g1", OwnerUID: "j1", MinMember: 3}

// twoRunning is a gang of three with two members bound and running on n1.
var twoRunning = []step{
	at(0, node("n1", "32", "8")), at(0, node("n2", "32", "8")), at(0, job(gangJob(1, 0, 0, 0))), at(0, group(g1)),
	at(0, pod(member("w0", "0", 0, 2).on("n1").running(5))),
	at(0, pod(member("w1", "1", 0, 3).on("n2").running(6))),
	at(0, pod(member("w2", "2", 0, 4))),
}

func seq(parts ...[]step) []step { return slices.Concat(parts...) }

// play feeds the steps to a new checker; it returns the checker and the
// invariants flagged, in order.
func play(cfg Config, steps []step) (*Checker, []string) {
	c := New(cfg)
	for _, s := range steps {
		s.do(c, t0.Add(time.Duration(s.at*float64(time.Second))))
	}
	var got []string
	for _, v := range c.violations {
		got = append(got, v.Invariant)
	}
	return c, got
}

// elasticRunning is twoRunning for a job that is elastic (with a
// minimum of min workers, no master, worker 0 hosting the rendezvous) or
// not (min 0).
func elasticRunning(min int32) []step {
	j := gangJob(1, 0, 0, 0)
	j.Elastic, j.ElasticMinMember, j.ElasticMinWorkers, j.Worker0Hosts = min > 0, min, min, true
	steps := slices.Clone(twoRunning)
	steps[2] = at(0, job(j))
	return steps
}

// replacedAlone: worker <index> (w<index>, running) fails, goes, and
// comes back as a new pod of the same generation; the gang is not
// restarted.
func replacedAlone(index string) []step {
	name := "w" + index
	n := map[string]string{"0": "n1", "1": "n2"}[index]
	return []step{
		at(1, pod(member(name, index, 0, 10).on(n).failed(137, 10))),
		at(1, podGone(member(name, index, 0, 11).on(n).failed(137, 11))),
		at(2, pod(func() Pod { p := member(name, index, 0, 12); p.UID = name + "-again"; return p }())),
		at(3, final),
	}
}

func TestCheckers(t *testing.T) {
	cfg := Config{PartialGrace: 10 * time.Second, PartialMargin: 5 * time.Second, WaitLimit: 10 * time.Second}
	cases := []struct {
		name  string
		steps []step
		want  []string // the invariants flagged, in order
	}{
		// Over-commit.
		{
			name: "two pods that fit a node",
			steps: []step{at(0, node("n1", "8", "8")),
				at(1, pod(member("w0", "0", 0, 1).on("n1").running(2))), at(1, pod(member("w1", "1", 0, 3).on("n1").running(4)))},
		},
		{
			name: "a third pod over the node's GPUs",
			steps: []step{at(0, node("n1", "32", "8")),
				at(1, pod(member("w0", "0", 0, 1).on("n1"))), at(1, pod(member("w1", "1", 0, 2).on("n1"))), at(1, pod(member("w2", "2", 0, 3).on("n1")))},
			want: []string{OverCommit},
		},
		{
			name: "a terminating pod still holds its node",
			steps: []step{at(0, node("n1", "32", "4")),
				at(1, pod(member("w0", "0", 0, 1).on("n1").running(2).deleting(3))), at(2, pod(member("w1", "1", 0, 4).on("n1")))},
			want: []string{OverCommit},
		},
		{
			name: "a finished pod does not",
			steps: []step{at(0, node("n1", "32", "4")),
				at(1, pod(member("w0", "0", 0, 1).on("n1").succeeded(2))), at(2, pod(member("w1", "1", 0, 4).on("n1")))},
		},
		{
			name: "pods bound to a deleted node count once it is back",
			steps: []step{at(0, node("n1", "32", "4")), at(1, pod(member("w0", "0", 0, 1).on("n1").running(2))),
				at(2, nodeGone("n1", 3)), at(3, pod(member("w1", "1", 0, 4).on("n1"))), at(4, node("n1", "32", "4"))},
			want: []string{OverCommit},
		},
		{
			name: "one over-commit is reported once, and again when it recurs",
			steps: []step{at(0, node("n1", "32", "4")),
				at(1, pod(member("w0", "0", 0, 1).on("n1"))), at(1, pod(member("w1", "1", 0, 2).on("n1"))),
				at(2, pod(member("w2", "2", 0, 3))),
				at(3, podGone(member("w1", "1", 0, 4).on("n1"))),
				at(4, pod(member("w3", "3", 0, 5).on("n1")))},
			want: []string{OverCommit, OverCommit},
		},

		// Double bind.
		{
			name:  "a pod keeps its node",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).on("n1"))), at(1, pod(member("w0", "0", 0, 1).on("n1").running(2)))},
		},
		{
			name:  "a pod that moved was bound twice",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).on("n1"))), at(1, pod(member("w0", "0", 0, 2).on("n2")))},
			want:  []string{DoubleBind},
		},

		// Generations.
		{
			name: "generation 1 after generation 0 is gone",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).failed(137, 2))), at(1, podGone(member("w0", "0", 0, 3).failed(137, 3))),
				at(2, pod(member("w0b", "0", 1, 4)))},
		},
		{
			name:  "generation 1 beside a failed pod of generation 0",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).failed(137, 2))), at(2, pod(member("w1b", "1", 1, 4)))},
			want:  []string{MixedGenerations},
		},

		// Members.
		{
			name:  "a replacement beside its failed predecessor",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).on("n1").failed(1, 2))), at(1, pod(member("w0-b", "0", 0, 3)))},
		},
		{
			name:  "two live pods for one member",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).on("n1").running(2))), at(1, pod(member("w0-b", "0", 0, 3)))},
			want:  []string{DuplicateMember},
		},
		{
			name: "a terminating pod on a node may still run",
			steps: []step{at(0, pod(member("w0", "0", 0, 1).on("n1").running(2).deleting(3))), at(1, pod(member("w0-b", "0", 0, 4))),
				at(2, pod(member("w0-c", "0", 0, 5).deleting(6))), at(2, podGone(member("w0-c", "0", 0, 7).deleting(7)))},
			want: []string{DuplicateMember},
		},

		// Partial gangs.
		{
			name:  "two of three bound past grace and margin",
			steps: seq(twoRunning, []step{at(10, tick), at(16, tick)}),
			want:  []string{PartialGang},
		},
		{
			name:  "completed within the grace",
			steps: seq(twoRunning, []step{at(10, tick), at(12, pod(member("w2", "2", 0, 7).on("n2"))), at(30, tick)}),
		},
		{
			name:  "reclaimed within the grace",
			steps: seq(twoRunning, []step{at(11, pod(member("w0", "0", 0, 7).on("n1").running(5).deleting(7))), at(11, pod(member("w1", "1", 0, 8).on("n2").running(6).deleting(8))), at(30, tick)}),
		},
		{
			name: "no scheduler led for most of it",
			steps: seq(twoRunning, []step{at(2, func(c *Checker, t time.Time) { c.SchedulerDown(t) }),
				at(20, func(c *Checker, t time.Time) { c.SchedulerUp(t) }), at(25, tick),
				at(26, func(c *Checker, t time.Time) { c.SchedulerDown(t) }), at(40, tick)}),
		},
		{
			name: "a scheduler led long enough between two failovers",
			steps: seq(twoRunning, []step{at(2, func(c *Checker, t time.Time) { c.SchedulerDown(t) }),
				at(5, func(c *Checker, t time.Time) { c.SchedulerUp(t) }), at(19, tick)}),
			want: []string{PartialGang},
		},
		{
			name: "a failed member the gang cannot do without is its controller's to handle",
			steps: seq(twoRunning, []step{at(1, podGone(member("w2", "2", 0, 8))),
				at(1, pod(member("w1", "1", 0, 9).on("n2").failed(1, 9))), at(30, tick)}),
		},
		{
			name: "a role below its minTaskMember",
			steps: []step{at(0, node("n1", "32", "8")), at(0, job(gangJob(1, 0, 0, 0))),
				at(0, group(PodGroup{Namespace: "soak", Name: "g1", OwnerUID: "j1", MinMember: 1, MinTaskMember: map[string]int32{"worker": 1, "master": 1}})),
				at(0, pod(member("w0", "0", 0, 2).on("n1").running(3))), at(20, tick)},
			want: []string{PartialGang},
		},
		{
			name:  "the PodGroup is gone: a gang restart's teardown",
			steps: seq(twoRunning, []step{at(1, func(c *Checker, t time.Time) { c.PodGroupGone(t, "soak", "g1") }), at(30, tick)}),
		},
		{
			name:  "the job has finished",
			steps: seq(twoRunning, []step{at(1, job(gangJob(9, 0, 0, 0).failedWith("MaxRestartsExceeded"))), at(30, tick)}),
		},

		// Restart counts.
		{
			name: "a retryable failure, one restart",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(2, job(gangJob(12, 1, 1, 0))), at(3, final)}),
		},
		{
			name: "a retryable failure counted as a disruption",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(2, job(gangJob(12, 1, 0, 1))), at(3, final)}),
			want: []string{RestartCount},
		},
		{
			name: "a failure after the decision does not count",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").running(5).deleting(10))),
				at(2, job(gangJob(12, 1, 0, 1))), at(2, pod(member("w1", "1", 0, 15).on("n2").failed(137, 15))), at(3, final)}),
		},
		{
			name: "counting a failure after the decision",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").running(5).deleting(10))),
				at(2, job(gangJob(12, 1, 1, 1))), at(2, pod(member("w1", "1", 0, 15).on("n2").failed(137, 15))), at(3, final)}),
			want: []string{RestartCount},
		},
		{
			name: "a member torn down, then failed, is no break",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(2, job(gangJob(12, 1, 1, 0))),
				at(2, pod(member("w1", "1", 0, 13).on("n2").running(6).deleting(13))),
				at(2, pod(member("w1", "1", 0, 14).on("n2").deleting(13).failed(137, 14))), at(3, final)}),
		},
		{
			name: "a member deleted while it ran, then failed, breaks once",
			steps: seq(twoRunning, []step{at(1, pod(member("w1", "1", 0, 10).on("n2").running(6).deleting(10))),
				at(1, pod(member("w1", "1", 0, 11).on("n2").deleting(10).failed(137, 11))),
				at(2, job(gangJob(12, 1, 1, 0))), at(3, final)}),
			want: []string{RestartCount},
		},
		{
			name:  "a restart without a break",
			steps: seq(twoRunning, []step{at(2, job(gangJob(12, 1, 1, 0))), at(3, final)}),
			want:  []string{RestartCount},
		},
		{
			name: "a permanent failure restarted the gang",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(1, 10))),
				at(2, job(gangJob(12, 1, 1, 0))), at(3, final)}),
			want: []string{RestartCount},
		},
		{
			name: "a failure and an eviction in one generation: either count",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(1, pod(member("w1", "1", 0, 11).on("n2").running(6).disrupted().deleting(11))),
				at(2, job(gangJob(12, 1, 0, 1))), at(3, final)}),
		},
		{
			name: "a deleted node breaks its members",
			steps: seq(twoRunning, []step{at(1, nodeGone("n1", 10)),
				at(2, job(gangJob(12, 1, 0, 1))), at(3, final)}),
		},
		{
			name: "a member bound to a node already deleted breaks with it",
			steps: seq(twoRunning, []step{at(0, node("n3", "32", "8")), at(1, nodeGone("n3", 9)), at(1, pod(member("w2", "2", 0, 10).on("n3"))),
				at(2, job(gangJob(12, 1, 0, 1))), at(3, final)}),
		},
		{
			name: "a break in the last generation left alone",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(3, final)}),
			want: []string{UnhandledBreak},
		},
		{
			name:  "an elastic member replaced alone owes no restart",
			steps: seq(elasticRunning(1), replacedAlone("1")),
		},
		{
			name:  "a member of a job that is not elastic replaced alone still owes a restart",
			steps: seq(elasticRunning(0), replacedAlone("1")),
			want:  []string{ReplacedAlone, UnhandledBreak},
		},
		{
			// The gang's later restart does not cover the member it ran
			// on without: restart counts alone would pass.
			name: "a member of a job that is not elastic replaced alone, the gang restarted later for another break",
			steps: seq(elasticRunning(0), replacedAlone("1")[:3], []step{
				at(3, pod(member("w0", "0", 0, 13).on("n1").failed(137, 13))),
				at(4, job(gangJob(14, 1, 1, 0))),
				at(5, final)}),
			want: []string{ReplacedAlone},
		},
		{
			// Worker 0 and worker 1 ran, worker 2 waited: without worker 1
			// the gang kept 1 of its minimum of 2.
			name:  "an elastic member replaced alone below the gang's minimum",
			steps: seq(elasticRunning(2), replacedAlone("1")),
			want:  []string{ReplacedAlone, UnhandledBreak},
		},
		{
			name:  "an elastic gang's worker 0, which hosts the rendezvous, replaced alone",
			steps: seq(elasticRunning(1), replacedAlone("0")),
			want:  []string{ReplacedAlone, UnhandledBreak},
		},
		{
			// Both running workers go with their node and are replaced
			// alone: each is judged without the other, so neither kept
			// the minimum of 1 (judged one after the other, the first
			// would count the second).
			name: "two elastic members on a deleted node replaced alone",
			steps: seq(func() []step {
				steps := elasticRunning(1)
				steps[4] = at(0, pod(member("w0", "0", 0, 2).on("n2").running(5)))
				return steps
			}(), []step{
				at(0, func(c *Checker, t time.Time) {
					j := c.jobs["j1"].cur
					j.Worker0Hosts = false
					c.Job(t, j)
				}),
				at(1, nodeGone("n2", 10)),
				at(1, podGone(member("w0", "0", 0, 11).on("n2").running(11))),
				at(1, podGone(member("w1", "1", 0, 12).on("n2").running(12))),
				at(2, pod(func() Pod { p := member("w0", "0", 0, 13); p.UID = "w0-again"; return p }())),
				at(2, pod(func() Pod { p := member("w1", "1", 0, 14); p.UID = "w1-again"; return p }())),
				at(3, final)}),
			want: []string{ReplacedAlone, ReplacedAlone, UnhandledBreak},
		},
		{
			name: "a break in the last generation that failed the job",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(2, job(gangJob(12, 0, 0, 0).failedWith("MaxRestartsExceeded"))), at(3, func(c *Checker, t time.Time) { c.PodGroupGone(t, "soak", "g1") }), at(3, final)}),
		},

		{
			name: "a deleted job's counts are checked too",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(2, job(gangJob(12, 1, 0, 1))), at(3, func(c *Checker, t time.Time) { c.JobGone(t, "j1"); c.PodGroupGone(t, "soak", "g1") }), at(4, final)}),
			want: []string{RestartCount},
		},
		{
			name: "a deleted job may leave a break of its last generation",
			steps: seq(twoRunning, []step{at(1, pod(member("w0", "0", 0, 10).on("n1").failed(137, 10))),
				at(3, func(c *Checker, t time.Time) { c.JobGone(t, "j1"); c.PodGroupGone(t, "soak", "g1") }), at(4, final)}),
		},

		// The end.
		{
			name:  "a job that never ran",
			steps: []step{at(0, job(Job{UID: "j2", Key: JobKey{Kind: "TFJob", Namespace: "soak", Name: "j2"}, RV: 1})), at(1, final)},
			want:  []string{StuckJob},
		},
		{
			name: "a job gone that nobody deleted",
			steps: []step{at(0, func(c *Checker, t time.Time) { c.Created("j2", JobKey{Kind: "TFJob", Namespace: "soak", Name: "j2"}) }),
				at(0, job(Job{UID: "j2", Key: JobKey{Kind: "TFJob", Namespace: "soak", Name: "j2"}, RV: 1, Running: true})),
				at(1, func(c *Checker, t time.Time) { c.JobGone(t, "j2") }), at(2, final)},
			want: []string{LostJob},
		},
		{
			name: "jobs gone by the driver's hand or their TTL",
			steps: []step{at(0, func(c *Checker, t time.Time) {
				c.Created("j2", JobKey{Name: "j2"})
				c.Created("j3", JobKey{Name: "j3"})
			}),
				at(0, job(Job{UID: "j2", Key: JobKey{Name: "j2"}, RV: 1, Running: true})),
				at(0, job(Job{UID: "j3", Key: JobKey{Name: "j3"}, RV: 2, Succeeded: true, TTL: true})),
				at(1, func(c *Checker, t time.Time) { c.Deleted("j2"); c.JobGone(t, "j2"); c.JobGone(t, "j3") }), at(2, final)},
		},
		{
			name:  "a job created and never seen",
			steps: []step{at(0, func(c *Checker, t time.Time) { c.Created("j2", JobKey{Name: "j2"}) }), at(2, final)},
			want:  []string{LostJob},
		},
		{
			name: "the PodGroup of a finished job",
			steps: []step{at(0, job(Job{UID: "j1", Key: j1Key, RV: 1, Succeeded: true})), at(0, group(g1)),
				at(2, final)},
			want: []string{LeakedPodGroup},
		},
		{
			name:  "a Failed condition without a reason",
			steps: []step{at(0, job(Job{UID: "j1", Key: j1Key, RV: 1, Failed: true}))},
			want:  []string{FailedWithoutWhy},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, got := play(cfg, tc.steps)
			if !slices.Equal(got, tc.want) {
				var lines []string
				for _, v := range c.Violations() {
					lines = append(lines, v.String())
				}
				t.Errorf("flagged %v, want %v:\n%s", got, tc.want, strings.Join(lines, "\n"))
			}
		})
	}
}

// A restart without a break names what the operator said caused it, so
// that a violation can be told from a cause the checkers do not see.
func TestRestartViolationSaysTheOperatorsCause(t *testing.T) {
	c := New(Config{PartialGrace: time.Minute})
	restarted := gangJob(12, 1, 0, 1)
	restarted.LastRestart = "GangBroken : the gang ran partial for longer than its budget"
	for _, s := range seq(twoRunning, []step{at(2, job(restarted)), at(3, final)}) {
		s.do(c, t0.Add(time.Duration(s.at*float64(time.Second))))
	}
	vs := c.Violations()
	if len(vs) != 1 || !strings.Contains(vs[0].Message, "the operator said: GangBroken : the gang ran partial") {
		t.Errorf("violations %v, want one restart-count violation naming the operator's stated cause", vs)
	}
}

// The longest partial time is measured without the time no scheduler led.
func TestLongestPartial(t *testing.T) {
	c := New(Config{PartialGrace: time.Minute})
	for _, s := range seq(twoRunning, []step{
		at(2, func(c *Checker, t time.Time) { c.SchedulerDown(t) }),
		at(6, func(c *Checker, t time.Time) { c.SchedulerUp(t) }),
		at(9, pod(member("w2", "2", 0, 7).on("n2"))),
	}) {
		s.do(c, t0.Add(time.Duration(s.at*float64(time.Second))))
	}
	st := c.Stats()
	if st.LongestPartial != 9*time.Second || st.LongestPartialLed != 5*time.Second || st.LongestPartialGang != "soak/g1" {
		t.Errorf("longest partial %v (%v led) of %q, want 9s (5s led) of soak/g1", st.LongestPartial, st.LongestPartialLed, st.LongestPartialGang)
	}
}

func TestFromPod(t *testing.T) {
	ctrl := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "j-worker-1", Namespace: "soak", UID: "u1", ResourceVersion: "42",
			Labels: map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1",
				"troupe.dev/gang-generation": "2"},
			Annotations:     map[string]string{"scheduling.k8s.io/group-name": "j", "volcano.sh/task-spec": "worker"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "PyTorchJob", Name: "j", UID: "ju", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "gpu-1",
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}},
			Containers: []corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("2")}}},
				{Name: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed,
			Conditions:        []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}},
	}
	got := FromPod(p)
	cpu, gpu := got.Requests[corev1.ResourceCPU], got.Requests["nvidia.com/gpu"]
	if got.RV != 42 || got.JobUID != "ju" || got.Group != "j" || got.Role != "worker" || got.ReplicaType != "worker" || got.Index != "1" ||
		got.Generation != 2 || got.Node != "gpu-1" || got.ExitCode == nil || *got.ExitCode != 137 || !got.Disrupted ||
		cpu.String() != "3" || gpu.String() != "2" {
		t.Errorf("FromPod = %+v (cpu %s, gpu %s)", got, cpu.String(), gpu.String())
	}
}

func TestFromJobElastic(t *testing.T) {
	backend := kfv1.BackendETCD
	host := "rdzv.example"
	cases := []struct {
		name                string
		policy              *kubeflowv1.ElasticPolicy
		elastic, hosts      bool
		minMember, minWorks int32
	}{
		{name: "not elastic"},
		{name: "down to 1 of 3 workers, worker 0 hosting c10d", policy: &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](1)},
			elastic: true, hosts: true, minMember: 2, minWorks: 1},
		{name: "a rendezvous host elsewhere", policy: &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](2), RDZVHost: &host},
			elastic: true, minMember: 3, minWorks: 2},
		{name: "the etcd backend", policy: &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](2), RDZVBackend: &backend},
			elastic: true, minMember: 3, minWorks: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pt := &kubeflowv1.PyTorchJob{}
			pt.Spec.PyTorchReplicaSpecs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
				kubeflowv1.PyTorchJobReplicaTypeMaster: {Replicas: ptr.To[int32](1)},
				kubeflowv1.PyTorchJobReplicaTypeWorker: {Replicas: ptr.To[int32](3)},
			}
			pt.Spec.ElasticPolicy = tc.policy
			j := FromJob("PyTorchJob", pt)
			if j.Elastic != tc.elastic || j.Worker0Hosts != tc.hosts || j.ElasticMinMember != tc.minMember || j.ElasticMinWorkers != tc.minWorks {
				t.Errorf("elastic %v, worker 0 hosts %v, minimum %d (%d workers); want %v, %v, %d (%d)",
					j.Elastic, j.Worker0Hosts, j.ElasticMinMember, j.ElasticMinWorkers, tc.elastic, tc.hosts, tc.minMember, tc.minWorks)
			}
		})
	}
}
