package bench

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/testutil"
	"github.com/troupe-ml/troupe/test/bench/placer"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// namespace holds every gang of a run.
const namespace = "bench"

// setupParallelism is how many creates the harness keeps in flight. Setup
// is not measured; it only has to be quick.
const setupParallelism = 32

// createNodes registers the scenario's nodes, Ready and without the
// not-ready taint, as a kubelet and the node lifecycle controller would
// leave them.
func createNodes(ctx context.Context, c *cluster, s scenario.Scenario) error {
	return inParallel(ctx, s.NodeObjects(), func(ctx context.Context, n *corev1.Node) error {
		if err := testutil.CreateReadyNode(ctx, c.client, n); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		return nil
	})
}

// createBackground binds the scenario's background pods, in a namespace
// of their own (scenario.Scenario.BusyPerRack).
func createBackground(ctx context.Context, c *cluster, s scenario.Scenario) error {
	pods := s.BackgroundPods()
	if len(pods) == 0 {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scenario.BackgroundNamespace}}
	if err := c.client.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	return inParallel(ctx, pods, func(ctx context.Context, p *corev1.Pod) error {
		if err := c.client.Create(ctx, p); err != nil {
			return fmt.Errorf("background pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// createNamespace creates the namespace of the gangs.
func createNamespace(ctx context.Context, c *cluster) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.client.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	return nil
}

// createTopology creates the Topology a scenario's topology policy names,
// for every placer alike (each API server has every placer's CRDs).
func createTopology(ctx context.Context, c *cluster, s scenario.Scenario) error {
	if s.Topology == nil {
		return nil
	}
	if err := c.client.Create(ctx, scenario.TopologyObject()); err != nil {
		return fmt.Errorf("create Topology: %w", err)
	}
	return nil
}

// hyperNodePlacer is a placer that places by HyperNodes (Volcano).
type hyperNodePlacer interface {
	HyperNodes(topology *schedulingv1alpha1.Topology, nodes []corev1.Node) ([]client.Object, error)
}

// createHyperNodes writes, for a placer that places by HyperNodes and a
// scenario with a topology policy, the HyperNodes of the scenario's nodes,
// as the operator's generator would have.
func createHyperNodes(ctx context.Context, c *cluster, s scenario.Scenario, p placer.Placer) error {
	hp, ok := p.(hyperNodePlacer)
	if !ok || s.Topology == nil {
		return nil
	}
	topology := &schedulingv1alpha1.Topology{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(scenario.TopologyObject()), topology); err != nil {
		return fmt.Errorf("read the Topology: %w", err)
	}
	var nodes []corev1.Node
	for _, n := range s.NodeObjects() {
		nodes = append(nodes, *n)
	}
	objs, err := hp.HyperNodes(topology, nodes)
	if err != nil {
		return err
	}
	return inParallel(ctx, objs, func(ctx context.Context, o client.Object) error {
		if err := c.client.Create(ctx, o); err != nil {
			return fmt.Errorf("HyperNode %s: %w", o.GetName(), err)
		}
		return nil
	})
}

// createGangs creates the scenario's gangs, numbered from first, in the
// placer's dialect: each PodGroup through the backend's own SyncPodGroup,
// then its pods. It returns each gang's size.
func createGangs(ctx context.Context, c *cluster, s scenario.Scenario, dialect placer.Dialect, first int) (map[string]int, error) {
	sizes := map[string]int{}
	gangs := make([]scenario.Gang, s.Gangs)
	for i := range s.Gangs {
		gangs[i] = s.Gang(first+i, namespace, dialect)
		sizes[gangs[i].Name] = len(gangs[i].Pods)
	}
	return sizes, writeGangs(ctx, c.client, dialect, gangs)
}

// writeGangs creates gangs through cl, in dialect: every PodGroup
// through the backend's own SyncPodGroup, then every pod.
func writeGangs(ctx context.Context, cl client.Client, dialect placer.Dialect, gangs []scenario.Gang) error {
	err := inParallel(ctx, gangs, func(ctx context.Context, gang scenario.Gang) error {
		if _, err := dialect.SyncPodGroup(ctx, cl, gang.Owner, gang.Ref, gang.Spec); err != nil {
			return fmt.Errorf("gang %s: %w", gang.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	for _, gang := range gangs {
		pods = append(pods, gang.Pods...)
	}
	return inParallel(ctx, pods, func(ctx context.Context, pod *corev1.Pod) error {
		if err := cl.Create(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		return nil
	})
}

// inParallel calls fn on every item, setupParallelism at a time, and
// returns the first error; after one, the items not started are skipped.
func inParallel[T any](ctx context.Context, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, setupParallelism)
	var wg sync.WaitGroup
	for _, item := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, item); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}
