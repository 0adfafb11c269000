package integrations

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// SyncPodGroup creates the job's PodGroup pg (an empty object of the
// backend's type, named after the job) or, when it exists, applies set to
// it and writes it back only if that changed it. set must touch only the
// fields the backend owns, so that fields a scheduler's webhook or another
// tool fills in are left alone, and a server-side default never looks like
// a change to undo. A PodGroup of the job's name that another object
// controls is never adopted.
func SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, pg client.Object, set func()) error {
	return SyncOwned(ctx, c, owner, ref, pg, func() error { set(); return nil })
}

// SyncOwned is SyncPodGroup for any object the backend keeps per job
// (named after it), with a set that may refuse the object as it finds it.
// Errors name the object's kind.
func SyncOwned(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, obj client.Object, set func() error) error {
	obj.SetName(owner.GetName())
	obj.SetNamespace(owner.GetNamespace())
	_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
		if obj.GetResourceVersion() == "" {
			obj.SetOwnerReferences([]metav1.OwnerReference{ref})
		} else if !metav1.IsControlledBy(obj, owner) {
			return fmt.Errorf("it exists and is not controlled by this job")
		}
		return set()
	})
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", kindOf(c, obj), owner.GetNamespace(), owner.GetName(), err)
	}
	return nil
}

// kindOf is obj's kind as c's scheme knows it ("PodGroup" or "Workload").
func kindOf(c client.Client, obj client.Object) string {
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// DeletePodGroup deletes the job's PodGroup of pg's type, if the job
// controls one.
func DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object, pg client.Object) error {
	if err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: owner.GetName()}, pg); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(pg, owner) {
		return nil
	}
	uid := pg.GetUID()
	return client.IgnoreNotFound(c.Delete(ctx, pg, client.Preconditions{UID: &uid}))
}

// CheckServed fails, naming what to install, when the cluster does not
// serve the PodGroup kind gvk.
func CheckServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind, install string) error {
	if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		return fmt.Errorf("the cluster does not serve %s (%s): install %s: %w", gvk.Kind, gvk.GroupVersion(), install, err)
	}
	return nil
}

// UserSchedulerName returns the schedulerName a pod spec chose itself.
// default-scheduler counts as no choice: manifests exported from a cluster
// carry it, and its owner never meant to opt out of gang scheduling.
func UserSchedulerName(spec *corev1.PodSpec) (string, bool) {
	n := spec.SchedulerName
	return n, n != "" && n != corev1.DefaultSchedulerName
}

// SetSchedulerName sends the pod to the backend's scheduler, unless the
// user chose another (the engine warns about that once per job).
func SetSchedulerName(pod *corev1.Pod, name string) {
	if _, chosen := UserSchedulerName(&pod.Spec); !chosen {
		pod.Spec.SchedulerName = name
	}
}
