// Package queues holds what the gang scheduler does with Queue objects that
// is not scheduling itself.
package queues

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// DefaultQueue is the "default" Queue as the scheduler creates it.
func DefaultQueue() *schedulingv1alpha1.Queue {
	return &schedulingv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.DefaultQueueName},
		Spec: schedulingv1alpha1.QueueSpec{
			Weight: 1,
			State:  schedulingv1alpha1.QueueStateOpen,
		},
	}
}

// EnsureDefaultQueue creates the cluster's "default" Queue unless it already
// exists.
//
// A PodGroup that names no queue is defaulted to "default" by the API
// server; were that Queue missing, every such gang would wait forever with
// reason QueueNotFound. The scheduler calls this at start so that the queue
// exists without anyone creating it by hand. An existing default Queue is
// left exactly as it is: an administrator may have changed its weight,
// capability or state, and a restart of the scheduler must not undo that.
//
// c's scheme must know the scheduling.troupe.dev/v1alpha1 types.
func EnsureDefaultQueue(ctx context.Context, c client.Client) error {
	q := DefaultQueue()
	// Create first rather than Get first: one call in the common case, and
	// no window between the read and the write for another scheduler
	// replica to create it.
	err := c.Create(ctx, q)
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return fmt.Errorf("create the %q Queue: %w", schedulingv1alpha1.DefaultQueueName, err)
}
