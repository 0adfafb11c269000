package demo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

func runningJob() jobRow {
	return jobRow{
		Namespace: "default", Kind: "TFJob", Name: "tf-mixed", Expected: 3, Gang: "Running",
		Pods: []podRow{
			{Name: "tf-mixed-chief-0", Role: "chief", Phase: "Running", Node: "cpu-1", NodeKind: kindCPU},
			{Name: "tf-mixed-worker-0", Role: "worker", Index: 0, Phase: "Running", Node: "gpu-1", NodeKind: kindGPU, GPUs: 2},
			{Name: "tf-mixed-worker-1", Role: "worker", Index: 1, Phase: "Running", Node: "gpu-1", NodeKind: kindGPU, GPUs: 2},
		},
	}
}

const tfKey = "TFJob default/tf-mixed"

func TestCheck(t *testing.T) {
	cases := []struct {
		name          string
		mutate        func(*jobRow)
		keys          []string
		wantDone      bool
		wantWaiting   []string // each must appear in the waiting text
		wantMisplaced []string // each must appear in the misplaced text
		wantFailed    []string // each must appear in the failed text
	}{
		{name: "every pod Running on the right kind of node", wantDone: true},
		{
			name:        "a job that does not exist yet",
			keys:        []string{tfKey, "MPIJob default/mpi-horovod"},
			wantWaiting: []string{"MPIJob default/mpi-horovod: not found"},
		},
		{
			name:        "pods not created yet",
			mutate:      func(j *jobRow) { j.Pods = j.Pods[:1] },
			wantWaiting: []string{tfKey + ": 1/3 pods Running"},
		},
		{
			name: "a bound pod not Running yet, and the gang not Running",
			mutate: func(j *jobRow) {
				j.Pods[2].Phase = "Scheduled"
				j.Gang, j.GangMessage = "Inqueue", "Scheduled: GangBound"
			},
			wantWaiting: []string{"2/3 pods Running", "tf-mixed-worker-1 Scheduled", "PodGroup Inqueue (Scheduled: GangBound)"},
		},
		{
			name:        "no PodGroup yet",
			mutate:      func(j *jobRow) { j.Gang = "" },
			wantWaiting: []string{"no PodGroup yet"},
		},
		{
			name:          "a CPU-only chief on a GPU node",
			mutate:        func(j *jobRow) { j.Pods[0].Node, j.Pods[0].NodeKind = "gpu-2", kindGPU },
			wantMisplaced: []string{"chief tf-mixed-chief-0 (no GPUs) is on gpu node gpu-2; want a cpu node"},
		},
		{
			name: "the job failed",
			mutate: func(j *jobRow) {
				j.Condition, j.ConditionReason, j.ConditionMessage = "Failed", "TFJobFailed", "chief exited with code 1"
			},
			wantFailed: []string{tfKey + ": Failed (TFJobFailed): chief exited with code 1"},
		},
		{
			name:        "the job restarting",
			mutate:      func(j *jobRow) { j.Condition, j.ConditionReason = "Restarting", "TFJobRestarting" },
			wantWaiting: []string{tfKey + ": Restarting (TFJobRestarting)"},
		},
		{
			name:          "a GPU worker on a CPU node",
			mutate:        func(j *jobRow) { j.Pods[1].Node, j.Pods[1].NodeKind = "cpu-3", kindCPU },
			wantMisplaced: []string{"worker tf-mixed-worker-0 (2 GPUs) is on cpu node cpu-3; want a gpu node"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := runningJob()
			if tc.mutate != nil {
				tc.mutate(&job)
			}
			keys := tc.keys
			if keys == nil {
				keys = []string{tfKey}
			}
			v := check(&snapshot{Jobs: []jobRow{job}}, keys)
			assertVerdict(t, v, wantVerdict{done: tc.wantDone, waiting: tc.wantWaiting, misplaced: tc.wantMisplaced, failed: tc.wantFailed})
		})
	}
}

// wantVerdict is what a verdict must hold: each text must appear in the
// verdict's list of that name, and a list with nothing wanted must be
// empty (but for waiting, which may say more).
type wantVerdict struct {
	done                       bool
	waiting, misplaced, failed []string
}

func assertVerdict(t *testing.T, v verdict, want wantVerdict) {
	t.Helper()
	if v.Done != want.done {
		t.Errorf("Done = %v, want %v (%+v)", v.Done, want.done, v)
	}
	for _, l := range []struct {
		name      string
		got, want []string
		strict    bool
	}{
		{"waiting", v.Waiting, want.waiting, false},
		{"misplaced", v.Misplaced, want.misplaced, true},
		{"failed", v.Failed, want.failed, true},
	} {
		got := strings.Join(l.got, "\n")
		for _, w := range l.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %q does not contain %q", l.name, got, w)
			}
		}
		if l.strict && len(l.want) == 0 && got != "" {
			t.Errorf("unexpected %s: %s", l.name, got)
		}
	}
}

// restartedJob is the gang-restart example as the demo wants it in the
// end: generation 1 after one restart for worker-1's exit code 137, its
// three pods of generation 1 Running on GPU nodes.
func restartedJob() jobRow {
	code := int32(137)
	pod := func(name, role string, idx int, node string) podRow {
		return podRow{Name: name, Role: role, Index: idx, Phase: "Running", Node: node, NodeKind: kindGPU, GPUs: 1, Generation: "1"}
	}
	return jobRow{
		Namespace: "default", Kind: "PyTorchJob", Name: "pytorch-gang", Expected: 3, Gang: "Running",
		Condition: "Running", GangRestarts: true, Generation: 1, Restarts: 1,
		LastRestart: &kubeflowv1.GangRestart{
			Time: metav1.NewTime(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)), Trigger: kubeflowv1.GangRestartOnMemberFailed,
			Member: "pytorch-gang-worker-1", ExitCode: &code, Message: "pod pytorch-gang-worker-1: container pytorch exited with retryable code 137",
		},
		Pods: []podRow{
			pod("pytorch-gang-master-0", "master", 0, "gpu-4"),
			pod("pytorch-gang-worker-0", "worker", 0, "gpu-4"),
			pod("pytorch-gang-worker-1", "worker", 1, "gpu-3"),
		},
	}
}

const gangKey = "PyTorchJob default/pytorch-gang"

func TestCheckRestart(t *testing.T) {
	want := restartWant{Key: gangKey, Member: "pytorch-gang-worker-1", ExitCode: 137}
	generation := func(gen string) func(*jobRow) {
		return func(j *jobRow) {
			for i := range j.Pods {
				j.Pods[i].Generation = gen
			}
		}
	}
	notRestarted := func(j *jobRow) {
		j.Generation, j.Restarts, j.LastRestart = 0, 0, nil
		generation("0")(j)
	}
	cases := []struct {
		name   string
		mutate func(*jobRow)
		want   wantVerdict
	}{
		{name: "generation 1 after the member's failure, every pod of it Running", want: wantVerdict{done: true}},
		{name: "not restarted yet", mutate: notRestarted, want: wantVerdict{waiting: []string{gangKey + ": no gang restart yet (generation 0)"}}},
		{
			name: "decided, and the old gang torn down",
			mutate: func(j *jobRow) {
				j.Condition, j.ConditionReason, j.Gang, j.Pods = "Restarting", "MemberFailed", "", nil
			},
			want: wantVerdict{waiting: []string{"0/3 pods Running", "Restarting (MemberFailed)", "no PodGroup yet"}},
		},
		{
			name: "decided, the old gang still Terminating",
			mutate: func(j *jobRow) {
				generation("0")(j)
				for i := range j.Pods {
					j.Pods[i].Phase = "Terminating"
				}
			},
			want: wantVerdict{waiting: []string{"0/3 pods Running", "3 pods of generation 0 left"}},
		},
		{
			// Every pod Running on the right node is not enough: one is of
			// the old gang.
			name: "a pod of generation 0 Running beside generation 1",
			mutate: func(j *jobRow) {
				j.Pods = append(j.Pods, podRow{Name: "pytorch-gang-worker-1-old", Role: "worker", Index: 1, Phase: "Running", Node: "gpu-1", NodeKind: kindGPU, GPUs: 1, Generation: "0"})
			},
			want: wantVerdict{waiting: []string{gangKey + ": 1 pod of generation 0 left"}},
		},
		{
			name:   "a pod without a generation label",
			mutate: func(j *jobRow) { j.Pods[0].Generation = "" },
			want:   wantVerdict{waiting: []string{"1 pod without a generation label"}},
		},
		{
			name:   "restarted twice",
			mutate: func(j *jobRow) { j.Generation, j.Restarts = 2, 2 },
			want:   wantVerdict{failed: []string{gangKey + ": restarted 2 times (2 restarts, 0 disruptions; generation 2), want once"}},
		},
		{
			name:   "restarted for another member",
			mutate: func(j *jobRow) { j.LastRestart.Member = "pytorch-gang-master-0" },
			want:   wantVerdict{failed: []string{`MemberFailed of "pytorch-gang-master-0" with exit code 137`, `want generation 1 after 1 restart for MemberFailed of "pytorch-gang-worker-1" with exit code 137`}},
		},
		{
			name: "restarted for another exit code",
			mutate: func(j *jobRow) {
				code := int32(143)
				j.LastRestart.ExitCode = &code
			},
			want: wantVerdict{failed: []string{"with exit code 143"}},
		},
		{
			name: "restarted for a disruption, not the failure",
			mutate: func(j *jobRow) {
				j.Restarts, j.Disruptions = 0, 1
				j.LastRestart.Trigger, j.LastRestart.ExitCode = kubeflowv1.GangRestartOnMemberEvicted, nil
			},
			want: wantVerdict{failed: []string{"after 0 restarts and 1 disruptions, the last for MemberEvicted", "exit code none"}},
		},
		{
			name: "the job failed instead",
			mutate: func(j *jobRow) {
				notRestarted(j)
				j.Condition, j.ConditionReason, j.ConditionMessage = "Failed", "MaxRestartsExceeded", "3 gang restarts reached maxRestarts"
			},
			want: wantVerdict{waiting: []string{"no gang restart yet"}, failed: []string{gangKey + ": Failed (MaxRestartsExceeded): 3 gang restarts reached maxRestarts"}},
		},
		{
			name:   "generation 1 placed on a CPU node",
			mutate: func(j *jobRow) { j.Pods[2].Node, j.Pods[2].NodeKind = "cpu-1", kindCPU },
			want:   wantVerdict{misplaced: []string{"worker pytorch-gang-worker-1 (1 GPU) is on cpu node cpu-1; want a gpu node"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := restartedJob()
			if tc.mutate != nil {
				tc.mutate(&job)
			}
			assertVerdict(t, checkRestart(&snapshot{Jobs: []jobRow{runningJob(), job}}, want), tc.want)
		})
	}

	t.Run("the job does not exist", func(t *testing.T) {
		assertVerdict(t, checkRestart(&snapshot{Jobs: []jobRow{runningJob()}}, want), wantVerdict{waiting: []string{gangKey + ": not found"}})
	})
}

func TestVerdictAnd(t *testing.T) {
	done := verdict{Done: true}
	waiting := verdict{Waiting: []string{"a"}}
	failed := verdict{Failed: []string{"b"}}
	for _, tc := range []struct {
		name string
		a, b verdict
		want wantVerdict
	}{
		{"both done", done, done, wantVerdict{done: true}},
		{"one waiting", done, waiting, wantVerdict{waiting: []string{"a"}}},
		{"one failed", waiting, failed, wantVerdict{waiting: []string{"a"}, failed: []string{"b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { assertVerdict(t, tc.a.and(tc.b), tc.want) })
	}
}

func TestRender(t *testing.T) {
	pending := jobRow{Namespace: "team-a", Kind: "PyTorchJob", Name: "ddp", Expected: 2, Gang: "Pending", GangMessage: "Unschedulable: 0/7 nodes fit",
		Pods: []podRow{{Name: "ddp-master-0", Role: "master", Phase: "Pending", GPUs: 2}}}
	snap := &snapshot{
		Time: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Nodes: []nodeRow{
			{Name: "cpu-1", Kind: kindCPU, Ready: true},
			{Name: "gpu-1", Kind: kindGPU, Ready: true, GPUs: 8},
			{Name: "gpu-2", Kind: kindGPU, Ready: true, NotReady: true, GPUs: 8},
		},
		Jobs: []jobRow{runningJob(), pending},
	}
	out := render(snap, view{Kubeconfig: "/tmp/x/kubeconfig", Interactive: true, Notes: []string{"hello"}})
	assertRendered(t, out,
		"nodes: 1 cpu, 2 gpu (2 Ready)   GPUs requested: 4/16   15:04:05",
		"JOB                    PODGROUP  ROLE    POD                PHASE    NODE   KIND",
		"TFJob tf-mixed         Running   chief   tf-mixed-chief-0   Running  cpu-1  cpu",
		"                                 worker  tf-mixed-worker-1  Running  gpu-1  gpu",
		"PyTorchJob team-a/ddp  Pending   master  ddp-master-0       Pending  -      -",
		"1/2 gangs Running. Waiting:",
		"PyTorchJob team-a/ddp: 0/2 pods Running; ddp-master-0 Pending; PodGroup Pending (Unschedulable: 0/7 nodes fit)",
		"Note: hello",
		"export KUBECONFIG=/tmp/x/kubeconfig",
		"Ctrl-C stops the cluster.",
	)

	done := render(&snapshot{Time: snap.Time, Nodes: snap.Nodes, Jobs: []jobRow{runningJob()}}, view{})
	if !strings.Contains(done, "All 1 gangs Running (3 pods)") || strings.Contains(done, "Ctrl-C") {
		t.Errorf("unexpected output for a running cluster without a kubeconfig:\n%s", done)
	}
	if strings.Contains(done, "gen ") || strings.Contains(done, "gang restart") {
		t.Errorf("a job without gangPolicy.restartPolicy Gang shows a generation:\n%s", done)
	}
}

func assertRendered(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
}

// A job that restarts as a whole gang shows its generation and restarts
// under its name, and its last restart under the table; one without pods
// yet shows them too.
func TestRenderGangRestarts(t *testing.T) {
	waiting := jobRow{Namespace: "default", Kind: "PyTorchJob", Name: "gang-b", Expected: 2, GangRestarts: true,
		Condition: "Restarting", ConditionReason: "MemberEvicted", Generation: 3, Restarts: 1, Disruptions: 2}
	failing := restartedJob()
	failing.Name = "gang-c"
	failing.Condition, failing.ConditionReason, failing.ConditionMessage = "Failed", "MaxRestartsExceeded", "3 gang restarts reached maxRestarts (3)"
	snap := &snapshot{Time: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Jobs: []jobRow{restartedJob(), waiting, failing}}
	out := render(snap, view{Story: []string{"[ 12.0s] failing pytorch-gang-worker-1 with exit code 137 (kwok chaos stage)"}})
	assertRendered(t, out,
		"PyTorchJob pytorch-gang            Running   master  pytorch-gang-master-0  Running  gpu-4  gpu",
		"  gen 1, 1 restart                           worker  pytorch-gang-worker-0  Running  gpu-4  gpu",
		"                                             worker  pytorch-gang-worker-1  Running  gpu-3  gpu",
		"PyTorchJob gang-b                  -         -       (no pods yet)",
		"\n  gen 3, 1 restart, 2 disruptions  ",
		"PyTorchJob default/gang-b: 0/2 pods Running; Restarting (MemberEvicted); no PodGroup yet",
		"FAILED PyTorchJob default/gang-c: Failed (MaxRestartsExceeded): 3 gang restarts reached maxRestarts (3)",
		"Last gang restart of PyTorchJob pytorch-gang, at 15:04:05: MemberFailed: pod pytorch-gang-worker-1: container pytorch exited with retryable code 137",
		"\n[ 12.0s] failing pytorch-gang-worker-1 with exit code 137 (kwok chaos stage)\n",
	)
}

// topologyJob is the topology example as the demo wants it: 8 members of
// one GPU, in block-1, 4 in rack-1 and 4 in rack-2, its PodGroup saying
// the rules are kept; nodes are labelled as localcluster.Nodes labels
// them.
func topologyJob() (jobRow, map[string]map[string]string) {
	labels := map[string]map[string]string{}
	for _, n := range localcluster.Nodes(0, 8) {
		labels[n.Name] = n.Labels
	}
	job := jobRow{
		Namespace: "default", Kind: "PyTorchJob", Name: "pytorch-topology", Expected: 8, Gang: "Running",
		Topology: &topologyRule{
			Levels: []levelRule{
				{Level: "block", Label: localcluster.BlockLabel, Policy: schedulingv1alpha1.TopologyPack},
				{Level: "rack", Label: localcluster.RackLabel, Policy: schedulingv1alpha1.TopologyPartition, Partitions: 2},
			},
			Satisfied: "True", Message: "every rule kept",
		},
	}
	for i, node := range []string{"gpu-1", "gpu-1", "gpu-2", "gpu-2", "gpu-3", "gpu-3", "gpu-4", "gpu-4"} {
		role := "worker"
		if i == 0 {
			role = "master"
		}
		job.Pods = append(job.Pods, podRow{Name: fmt.Sprintf("pytorch-topology-%s-%d", role, i), Role: role, Index: i, Phase: "Running",
			Node: node, NodeKind: kindGPU, GPUs: 1, Place: placeOf(labels[node])})
	}
	return job, labels
}

const topologyKey = "PyTorchJob default/pytorch-topology"

func TestCheckTopology(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*jobRow)
		want   wantVerdict
	}{
		{name: "one block, two racks of four", want: wantVerdict{done: true}},
		{name: "a member in the other block", mutate: func(j *jobRow) { j.Pods[7].Node = "gpu-5" },
			want: wantVerdict{misplaced: []string{topologyKey + ": level block: members in block-1: 7, block-2: 1; the required rule packs them into one",
				"level rack: members in rack-1: 4, rack-2: 3, rack-3: 1; the required rule partitions them into 2"}}},
		{name: "one block but racks of five and three", mutate: func(j *jobRow) { j.Pods[4].Node = "gpu-2" },
			want: wantVerdict{misplaced: []string{"level rack: members in rack-1: 5, rack-2: 3"}}},
		{name: "placed right, but the scheduler has not said so yet", mutate: func(j *jobRow) { j.Topology.Satisfied, j.Topology.Message = "", "" },
			want: wantVerdict{waiting: []string{topologyKey + `: PodGroup TopologySatisfied ""`}}},
		{name: "not all bound: the placement is not judged yet", mutate: func(j *jobRow) { j.Pods[7].Node, j.Pods[7].Phase = "", "Pending" },
			want: wantVerdict{waiting: []string{"7/8 pods Running"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, labels := topologyJob()
			if tc.mutate != nil {
				tc.mutate(&job)
			}
			v := check(&snapshot{Jobs: []jobRow{job}, nodeLabels: labels}, []string{topologyKey})
			assertVerdict(t, v, tc.want)
		})
	}
}

func TestRenderShowsTheTopology(t *testing.T) {
	job, labels := topologyJob()
	out := render(&snapshot{Jobs: []jobRow{job}, nodeLabels: labels}, view{})
	for _, want := range []string{"pytorch-topology-worker-7  Running  gpu-4  gpu block-1/rack-2", "pytorch-topology placed by its topology rule"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
}
