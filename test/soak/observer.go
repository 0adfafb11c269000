package soak

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/test/soak/check"
)

// moment is something the chaos may aim a kill at.
type moment int

const (
	// momentBind: a pod was bound; the scheduler may be in the middle of
	// a gang's commit.
	momentBind moment = iota
	// momentGangRestart: the operator stored a gang restart; the teardown
	// and the next generation follow.
	momentGangRestart
)

// observer is the harness's own view of the cluster: informers on pods,
// nodes, jobs, PodGroups and the leader Leases, feeding the checkers
// (independently of the code under test), the driver's view and the
// chaos's aim.
type observer struct {
	cache   cache.Cache
	checker *check.Checker
	moments chan moment
	// onLease hears every change of a leader Lease.
	onLease func(t time.Time, lease *coordinationv1.Lease)
	// onPod hears every pod change, for the driver's tally of its faults.
	onPod func(old, cur *corev1.Pod)
}

func newObserver(cfg *rest.Config, checker *check.Checker) (*observer, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme:           scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{leaseNamespace: {}}},
		},
	})
	if err != nil {
		return nil, err
	}
	return &observer{cache: c, checker: checker, moments: make(chan moment, 64),
		onLease: func(time.Time, *coordinationv1.Lease) {}, onPod: func(_, _ *corev1.Pod) {}}, nil
}

// jobKinds are the job kinds the soak runs, with an empty object of each.
var jobKinds = []struct {
	kind string
	obj  func() client.Object
}{
	{kubeflowv1.TFJobKind, func() client.Object { return &kubeflowv1.TFJob{} }},
	{kubeflowv1.PyTorchJobKind, func() client.Object { return &kubeflowv1.PyTorchJob{} }},
	{kubeflowv1.MPIJobKind, func() client.Object { return &kubeflowv1.MPIJob{} }},
}

// start registers the handlers, starts the informers and waits for their
// first lists.
func (o *observer) start(ctx context.Context) error {
	add := func(obj client.Object, h toolscache.ResourceEventHandlerFuncs) error {
		inf, err := o.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		_, err = inf.AddEventHandler(h)
		return err
	}
	err := add(&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				o.checker.Pod(time.Now(), check.FromPod(p))
				o.onPod(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, _ := oldObj.(*corev1.Pod)
			p, ok := newObj.(*corev1.Pod)
			if !ok {
				return
			}
			o.checker.Pod(time.Now(), check.FromPod(p))
			o.onPod(old, p)
			if old != nil && old.Spec.NodeName == "" && p.Spec.NodeName != "" {
				o.aim(momentBind)
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := unwrap(obj).(*corev1.Pod); ok {
				o.checker.PodGone(time.Now(), check.FromPod(p))
			}
		},
	})
	if err != nil {
		return err
	}
	err = add(&corev1.Node{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				o.checker.Node(time.Now(), check.FromNode(n))
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				o.checker.Node(time.Now(), check.FromNode(n))
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := unwrap(obj).(*corev1.Node); ok {
				o.checker.NodeGone(time.Now(), n.Name, check.ParseRV(n.ResourceVersion))
			}
		},
	})
	if err != nil {
		return err
	}
	for _, jk := range jobKinds {
		kind := jk.kind
		upsert := func(oldObj, obj any) {
			j, ok := obj.(check.TrainingJob)
			if !ok {
				return
			}
			cur := check.FromJob(kind, j)
			o.checker.Job(time.Now(), cur)
			if old, ok := oldObj.(check.TrainingJob); ok && check.FromJob(kind, old).Generation < cur.Generation {
				o.aim(momentGangRestart)
			}
		}
		err := add(jk.obj(), toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { upsert(nil, obj) },
			UpdateFunc: upsert,
			DeleteFunc: func(obj any) {
				if j, ok := unwrap(obj).(check.TrainingJob); ok {
					o.checker.JobGone(time.Now(), string(j.GetUID()))
				}
			},
		})
		if err != nil {
			return err
		}
	}
	err = add(&schedulingv1alpha1.PodGroup{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if g, ok := obj.(*schedulingv1alpha1.PodGroup); ok {
				o.checker.PodGroup(time.Now(), check.FromPodGroup(g))
			}
		},
		UpdateFunc: func(_, obj any) {
			if g, ok := obj.(*schedulingv1alpha1.PodGroup); ok {
				o.checker.PodGroup(time.Now(), check.FromPodGroup(g))
			}
		},
		DeleteFunc: func(obj any) {
			if g, ok := unwrap(obj).(*schedulingv1alpha1.PodGroup); ok {
				o.checker.PodGroupGone(time.Now(), g.Namespace, g.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	lease := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			o.onLease(time.Now(), l)
		}
	}
	err = add(&coordinationv1.Lease{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    lease,
		UpdateFunc: func(_, obj any) { lease(obj) },
	})
	if err != nil {
		return err
	}
	go func() { _ = o.cache.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !o.cache.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the soak's watches did not sync within a minute")
	}
	return nil
}

// aim offers a moment to the chaos, never blocking the watch.
func (o *observer) aim(m moment) {
	select {
	case o.moments <- m:
	default:
	}
}

// unwrap returns the last known state of a deleted object.
func unwrap(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
