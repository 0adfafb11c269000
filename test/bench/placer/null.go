package placer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/test/bench/nullbinder"
)

// Null is the logic-free binder (package nullbinder), run by re-executing
// Exe (the benchmark's own binary) with the subcommand Subcommand, with
// BindWorkers binds in flight (0: the harness's Env.BindWorkers). The
// harness sweeps it over several: the best is the ceiling.
type Null struct {
	Exe        string
	Subcommand string
	// BindWorkers, if set, names it null-<BindWorkers> and overrides the
	// Env's.
	BindWorkers int
}

// NullName is the null binder's name, and its names' prefix
// (null-<binds in flight>).
const NullName = "null"

func (n Null) Name() string {
	if n.BindWorkers > 0 {
		return fmt.Sprintf("%s-%d", NullName, n.BindWorkers)
	}
	return NullName
}

// Dialect marks the pods as for any PodGroup backend, without a PodGroup:
// the null binder reads neither.
func (Null) Dialect() Dialect { return nullDialect{} }

func (Null) Prepare(context.Context, *rest.Config) error { return nil }

func (n Null) Start(_ context.Context, env Env) (Process, error) {
	if n.BindWorkers > 0 {
		env.BindWorkers = n.BindWorkers
	}
	return startProc("null binder", n.Exe, []string{
		n.Subcommand,
		"--kubeconfig=" + env.Kubeconfig,
		fmt.Sprintf("--kube-api-qps=%v", env.QPS),
		fmt.Sprintf("--kube-api-burst=%d", env.Burst),
		fmt.Sprintf("--bind-workers=%d", env.BindWorkers),
	}, env.LogFile)
}

// nullDialect makes no PodGroup and sends the pods to the null binder.
type nullDialect struct{}

func (nullDialect) PodGroupType() client.Object { return nil }

func (nullDialect) SyncPodGroup(context.Context, client.Client, metav1.Object, metav1.OwnerReference, integrations.GangSpec) (integrations.GangState, error) {
	return integrations.GangState{Admitted: true}, nil
}

func (nullDialect) DecoratePod(pod *corev1.Pod, group, role string) {
	integrations.Annotate(pod, group, role)
	integrations.SetSchedulerName(pod, nullbinder.SchedulerName)
}
