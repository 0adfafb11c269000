// Package placer holds the schedulers the benchmark measures, one small
// type each: how the gangs are written for it (its dialect), what it needs
// in the cluster first, and how it starts as its own OS process with the
// client settings every placer shares.
package placer

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/test/bench/nullbinder"
)

// Placer is one scheduler under test.
type Placer interface {
	// Name is the placer's name in flags and tables.
	Name() string
	// Dialect writes the gangs for this placer as the operator's backend
	// for it would.
	Dialect() Dialect
	// Prepare installs what the placer needs before the gangs exist
	// (CRDs, a default queue), as the harness's user.
	Prepare(ctx context.Context, cfg *rest.Config) error
	// Start starts the placer against the cluster of env.
	Start(ctx context.Context, env Env) (Process, error)
}

// Dialect is the part of an integrations.Backend that writes a gang:
// its PodGroup and the marks on its pods.
type Dialect interface {
	// PodGroupType is an empty PodGroup of the dialect; nil if it has
	// none.
	PodGroupType() client.Object
	SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec integrations.GangSpec) (integrations.GangState, error)
	DecoratePod(pod *corev1.Pod, group, role string)
}

// Env is what every placer is started with: the same cluster, the same
// client settings.
type Env struct {
	// Kubeconfig is a file with an admin user of the run's API server.
	Kubeconfig string
	// Client is the client settings; BindWorkers only for the placers
	// that have such a setting.
	nullbinder.Client
	// LogFile receives the placer's output.
	LogFile string
	// Topology says that the scenario's gangs carry a topology policy, for
	// placers that turn on what keeps it (Volcano's network-topology-aware
	// plugin).
	Topology bool
}

// Process is a running placer.
type Process interface {
	// Pid is the process to read CPU time from.
	Pid() int
	// Stop ends it and waits.
	Stop() error
}

// Metered is a process that serves Prometheus metrics the harness reads
// during the run (Troupe's cycle times).
type Metered interface {
	MetricsURL() string
}

// Profiled is a process that serves Go's pprof endpoints.
type Profiled interface {
	PprofURL() string
}

// stopTimeout is how long a placer gets to stop after SIGTERM.
const stopTimeout = 10 * time.Second
