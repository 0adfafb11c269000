package jobmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

var jobsDesc = prometheus.NewDesc("troupe_jobs",
	"Jobs the leading operator runs, by state (status.state): GangPending counts the jobs waiting for their gang to be placed.",
	[]string{labelNamespace, labelFramework, labelState}, nil)

// jobStates is the jobs gauge: the state each job had after the last pass
// over it, summed by namespace, framework and state when scraped. Kept per
// job rather than as a gauge moved up and down, so that a pass that saw a
// job twice, or a job deleted while its state changed, cannot skew it.
type jobStates struct {
	mu sync.Mutex
	// states maps framework, then job, to its state.
	states map[string]map[types.NamespacedName]kubeflowv1.JobState
}

func (j *jobStates) set(framework string, job types.NamespacedName, state kubeflowv1.JobState) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.states == nil {
		j.states = map[string]map[types.NamespacedName]kubeflowv1.JobState{}
	}
	if j.states[framework] == nil {
		j.states[framework] = map[types.NamespacedName]kubeflowv1.JobState{}
	}
	j.states[framework][job] = state
}

// forget drops a job and reports whether it was there.
func (j *jobStates) forget(framework string, job types.NamespacedName) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.states[framework][job]
	delete(j.states[framework], job)
	return ok
}

// Describe implements prometheus.Collector.
func (j *jobStates) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

// Collect implements prometheus.Collector.
func (j *jobStates) Collect(ch chan<- prometheus.Metric) {
	type key struct {
		namespace, framework string
		state                kubeflowv1.JobState
	}
	counts := map[key]int{}
	j.mu.Lock()
	for framework, jobs := range j.states {
		for job, state := range jobs {
			counts[key{job.Namespace, framework, state}]++
		}
	}
	j.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k.namespace, k.framework, string(k.state))
	}
}
