package hypernodes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations/volcano"
)

// Generator keeps the HyperNodes of one Topology in line with it and with
// the nodes' labels: it creates the missing ones, rewrites the changed
// ones and deletes every HyperNode labelled as Troupe's that it does not
// want (another Topology's, a domain whose nodes are gone). It is the
// Volcano backend's volcano.HyperNodeSource.
type Generator struct {
	client   client.Client
	topology string

	mu sync.Mutex
	// written is the generation of the Topology whose HyperNodes were
	// last written whole; 0 before, and once it is gone.
	written int64
}

var _ volcano.HyperNodeSource = (*Generator)(nil)

// New returns a generator of the HyperNodes of the Topology named
// topology, reading and writing through c (a manager's client).
func New(c client.Client, topology string) *Generator {
	return &Generator{client: c, topology: topology}
}

// Topology names the Topology the HyperNodes are generated from.
func (g *Generator) Topology() string { return g.topology }

// Tiers reads the Topology from the client's cache: see
// volcano.HyperNodeSource.
func (g *Generator) Tiers(ctx context.Context) (map[string]int, string, bool, error) {
	t := &schedulingv1alpha1.Topology{}
	if err := g.client.Get(ctx, client.ObjectKey{Name: g.topology}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", false, fmt.Errorf("Topology %q: %w", g.topology, volcano.ErrNoTopology)
		}
		return nil, "", false, err
	}
	tiers, nodeLevel, err := Tiers(t)
	if err != nil {
		return nil, "", false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return tiers, nodeLevel, g.written == t.Generation, nil
}

// SetupWithManager runs the generator in mgr: on a change of its Topology,
// of any node, or of a HyperNode labelled as Troupe's.
func (g *Generator) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: g.topology}}}
	})
	troupes := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[TopologyLabel]
		return ok
	})
	// Only what moves a node in or out of a domain: being there, and its
	// labels.
	nodeMoves := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("volcano-hypernodes").
		For(&schedulingv1alpha1.Topology{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == g.topology
		}))).
		Watches(&corev1.Node{}, one, builder.WithPredicates(nodeMoves)).
		Watches(&topologyv1alpha1.HyperNode{}, one, builder.WithPredicates(troupes)).
		Complete(g)
}

// Reconcile writes the HyperNodes of the Topology (none when it is gone).
func (g *Generator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != g.topology {
		return ctrl.Result{}, nil
	}
	t := &schedulingv1alpha1.Topology{}
	var want []topologyv1alpha1.HyperNode
	switch err := g.client.Get(ctx, req.NamespacedName, t); {
	case apierrors.IsNotFound(err):
		t = nil
	case err != nil:
		return ctrl.Result{}, err
	default:
		var nodes corev1.NodeList
		if err := g.client.List(ctx, &nodes); err != nil {
			return ctrl.Result{}, err
		}
		if want, err = Desired(t, nodes.Items); err != nil {
			// Retrying cannot fix the Topology; its next change comes
			// here again.
			ctrl.LoggerFrom(ctx).Error(err, "no Volcano HyperNodes for this Topology")
			want = nil
		}
	}
	if err := g.apply(ctx, want); err != nil {
		return ctrl.Result{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written = 0
	if t != nil {
		g.written = t.Generation
	}
	return ctrl.Result{}, nil
}

// apply makes the HyperNodes labelled as Troupe's exactly want: stale ones
// go first, so that a domain that moved is never a member of two parents
// for long, then changed ones are rewritten and missing ones created.
func (g *Generator) apply(ctx context.Context, want []topologyv1alpha1.HyperNode) error {
	var have topologyv1alpha1.HyperNodeList
	if err := g.client.List(ctx, &have, client.HasLabels{TopologyLabel}); err != nil {
		return err
	}
	byName := map[string]*topologyv1alpha1.HyperNode{}
	for i := range want {
		byName[want[i].Name] = &want[i]
	}
	var errs []error
	existing := map[string]*topologyv1alpha1.HyperNode{}
	for i := range have.Items {
		hn := &have.Items[i]
		if _, ok := byName[hn.Name]; !ok {
			errs = append(errs, client.IgnoreNotFound(g.client.Delete(ctx, hn, client.Preconditions{UID: &hn.UID})))
			continue
		}
		existing[hn.Name] = hn
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		w := byName[name]
		hn, ok := existing[name]
		if !ok {
			errs = append(errs, client.IgnoreAlreadyExists(g.client.Create(ctx, w)))
			continue
		}
		if equality.Semantic.DeepEqual(hn.Spec, w.Spec) && maps.Equal(hn.Labels, w.Labels) &&
			maps.Equal(hn.Annotations, w.Annotations) && equality.Semantic.DeepEqual(hn.OwnerReferences, w.OwnerReferences) {
			continue
		}
		hn.Spec, hn.Labels, hn.Annotations, hn.OwnerReferences = w.Spec, w.Labels, w.Annotations, w.OwnerReferences
		errs = append(errs, g.client.Update(ctx, hn))
	}
	return errors.Join(errs...)
}
