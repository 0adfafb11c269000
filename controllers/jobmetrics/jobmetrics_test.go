package jobmetrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// status builds a job status from condition types that are true ("+")
// or false ("-"), e.g. status("+Created", "-GangScheduled").
func status(conditions ...string) *kubeflowv1.JobStatus {
	s := &kubeflowv1.JobStatus{}
	for _, c := range conditions {
		st := corev1.ConditionTrue
		if c[0] == '-' {
			st = corev1.ConditionFalse
		}
		s.Conditions = append(s.Conditions, kubeflowv1.JobCondition{Type: kubeflowv1.JobConditionType(c[1:]), Status: st})
	}
	return s
}

func withGang(s *kubeflowv1.JobStatus, generation int32, trigger kubeflowv1.GangRestartTrigger) *kubeflowv1.JobStatus {
	s.Gang = &kubeflowv1.GangStatus{Generation: generation}
	if trigger != "" {
		s.Gang.LastRestart = &kubeflowv1.GangRestart{Trigger: trigger}
	}
	return s
}

// counts reads every counter of a namespace.
func counts(ns, framework string) map[string]float64 {
	return map[string]float64{
		"created":    testutil.ToFloat64(created.WithLabelValues(ns, framework)),
		"deleted":    testutil.ToFloat64(deleted.WithLabelValues(ns, framework)),
		"successful": testutil.ToFloat64(successful.WithLabelValues(ns, framework)),
		"failed":     testutil.ToFloat64(failed.WithLabelValues(ns, framework)),
		"restarted":  testutil.ToFloat64(restarted.WithLabelValues(ns, framework)),
		"gangFailed": testutil.ToFloat64(gangRestarts.WithLabelValues(ns, framework, string(kubeflowv1.GangRestartOnMemberFailed))),
		"gangLost":   testutil.ToFloat64(gangRestarts.WithLabelValues(ns, framework, string(kubeflowv1.GangRestartOnNodeLost))),
	}
}

func TestObservedCountsTransitionsOnce(t *testing.T) {
	tests := []struct {
		name string
		// passes are the statuses a job goes through, one pass each: the
		// first is the status read by the first pass.
		passes []*kubeflowv1.JobStatus
		want   map[string]float64
	}{
		{
			name:   "created once, however many passes keep it",
			passes: []*kubeflowv1.JobStatus{status(), status("+Created"), status("+Created"), status("+Created", "+Running")},
			want:   map[string]float64{"created": 1},
		},
		{
			name:   "a pass that changed nothing counts nothing",
			passes: []*kubeflowv1.JobStatus{status("+Created", "+Running"), status("+Created", "+Running")},
			want:   map[string]float64{},
		},
		{
			name:   "succeeded",
			passes: []*kubeflowv1.JobStatus{status("+Created", "+Running"), status("+Created", "-Running", "+Succeeded"), status("+Created", "-Running", "+Succeeded")},
			want:   map[string]float64{"successful": 1},
		},
		{
			name:   "failed",
			passes: []*kubeflowv1.JobStatus{status("+Created", "+Running"), status("+Created", "-Running", "+Failed")},
			want:   map[string]float64{"failed": 1},
		},
		{
			name: "each time Restarting turns true is a restart",
			passes: []*kubeflowv1.JobStatus{
				status("+Created", "+Running"), status("+Created", "-Running", "+Restarting"), status("+Created", "-Running", "+Restarting"),
				status("+Created", "+Running", "-Restarting"), status("+Created", "-Running", "+Restarting"),
			},
			want: map[string]float64{"restarted": 2},
		},
		{
			name: "a gang restart counts once as a restart and once by its trigger, even while Restarting stays true",
			passes: []*kubeflowv1.JobStatus{
				withGang(status("+Created", "+Running"), 0, ""),
				withGang(status("+Created", "-Running", "+Restarting"), 1, kubeflowv1.GangRestartOnMemberFailed),
				withGang(status("+Created", "-Running", "+Restarting"), 2, kubeflowv1.GangRestartOnNodeLost),
				withGang(status("+Created", "-Running", "+Restarting"), 2, kubeflowv1.GangRestartOnNodeLost),
			},
			want: map[string]float64{"restarted": 2, "gangFailed": 1, "gangLost": 1},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("transitions-%d", i)
			r := NewRecorder("pytorch")
			job := types.NamespacedName{Namespace: ns, Name: "job"}
			for p := 1; p < len(tc.passes); p++ {
				r.Observed(job, "uid", time.Now(), tc.passes[p-1], tc.passes[p], time.Now())
			}
			got := counts(ns, "pytorch")
			for k, v := range got {
				if v != tc.want[k] {
					t.Errorf("%s = %v, want %v (all: %v)", k, v, tc.want[k], got)
				}
			}
		})
	}
}

func TestDeletedCountsJobsThisProcessRan(t *testing.T) {
	r := NewRecorder("tensorflow")
	ran := types.NamespacedName{Namespace: "deleted", Name: "ran"}
	r.Observed(ran, "uid", time.Now(), status(), status("+Created"), time.Now())
	r.Deleted(ran)
	r.Deleted(ran) // the pass that deleted it, then the event of its deletion
	r.Deleted(types.NamespacedName{Namespace: "deleted", Name: "never-seen"})
	if got := testutil.ToFloat64(deleted.WithLabelValues("deleted", "tensorflow")); got != 1 {
		t.Errorf("deleted = %v, want 1: once per job this process ran", got)
	}
}

func TestGangRunningObservesTheFirstRunOnly(t *testing.T) {
	created := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		passes []*kubeflowv1.JobStatus
		// want is the observed seconds, one per observation.
		want []float64
	}{
		{
			name:   "first run, after waiting",
			passes: []*kubeflowv1.JobStatus{status(), status("+Created", "-GangScheduled"), status("+Created", "+GangScheduled", "+Running")},
			want:   []float64{20},
		},
		{
			name: "the master runs before the gang is whole",
			passes: []*kubeflowv1.JobStatus{
				status("+Created", "-GangScheduled"), status("+Created", "-GangScheduled", "+Running"), status("+Created", "+GangScheduled", "+Running"),
			},
			want: []float64{20},
		},
		{
			name: "a gang whole again after a restart is not a first run",
			passes: []*kubeflowv1.JobStatus{
				status("+Created", "-GangScheduled"), status("+Created", "+GangScheduled", "+Running"),
				status("+Created", "-GangScheduled", "-Running", "+Restarting"), status("+Created", "+GangScheduled", "+Running", "-Restarting"),
			},
			want: []float64{10},
		},
		{
			name:   "met running: it ran before this process knew it",
			passes: []*kubeflowv1.JobStatus{status("+Created", "+GangScheduled", "+Running"), status("+Created", "+GangScheduled", "+Running")},
		},
		{
			name:   "met broken after it ran under an earlier leader",
			passes: []*kubeflowv1.JobStatus{status("+Created", "-GangScheduled", "-Running", "+Restarting"), status("+Created", "+GangScheduled", "+Running")},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("gang-running-%d", i)
			r := NewRecorder("mpi")
			job := types.NamespacedName{Namespace: ns, Name: "job"}
			for p := 1; p < len(tc.passes); p++ {
				r.Observed(job, "uid", created, tc.passes[p-1], tc.passes[p], created.Add(time.Duration(p)*10*time.Second))
			}
			got := histogram(t, ns, "mpi")
			if got.GetSampleCount() != uint64(len(tc.want)) {
				t.Fatalf("%d observations, want %d", got.GetSampleCount(), len(tc.want))
			}
			var sum float64
			for _, w := range tc.want {
				sum += w
			}
			if got.GetSampleSum() != sum {
				t.Errorf("observed %v s in all, want %v", got.GetSampleSum(), sum)
			}
		})
	}
}

func TestJobsGaugeByState(t *testing.T) {
	r := NewRecorder("pytorch")
	for i, state := range []kubeflowv1.JobState{kubeflowv1.JobStateGangPending, kubeflowv1.JobStateGangPending, kubeflowv1.JobStateRunning} {
		s := status("+Created")
		s.State = state
		r.Observed(types.NamespacedName{Namespace: "gauge", Name: fmt.Sprint(i)}, types.UID(fmt.Sprint(i)), time.Now(), status(), s, time.Now())
	}
	r.Deleted(types.NamespacedName{Namespace: "gauge", Name: "2"})
	pending := gauge(t, "gauge", "pytorch", kubeflowv1.JobStateGangPending)
	running := gauge(t, "gauge", "pytorch", kubeflowv1.JobStateRunning)
	if pending != 2 || running != 0 {
		t.Errorf("GangPending %v, Running %v; want 2 and 0 (the running job was deleted)", pending, running)
	}
}

// histogram reads the gang-running histogram of a namespace.
func histogram(t *testing.T, ns, framework string) interface {
	GetSampleCount() uint64
	GetSampleSum() float64
} {
	t.Helper()
	for _, m := range gather(t, "troupe_job_gang_running_seconds") {
		if hasLabels(m.GetLabel(), ns, framework) {
			return m.GetHistogram()
		}
	}
	return &emptyHistogram{}
}

type emptyHistogram struct{}

func (emptyHistogram) GetSampleCount() uint64 { return 0 }
func (emptyHistogram) GetSampleSum() float64  { return 0 }

// gauge reads the jobs gauge for one namespace, framework and state.
func gauge(t *testing.T, ns, framework string, state kubeflowv1.JobState) float64 {
	t.Helper()
	for _, m := range gather(t, "troupe_jobs") {
		if hasLabels(m.GetLabel(), ns, framework) && labelValue(m.GetLabel(), labelState) == string(state) {
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func gather(t *testing.T, name string) []*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(gangRunning, jobs)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func hasLabels(labels []*dto.LabelPair, ns, framework string) bool {
	return labelValue(labels, labelNamespace) == ns && labelValue(labels, labelFramework) == framework
}

func labelValue(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
