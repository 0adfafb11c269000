package binder

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
)

// Nominate writes each decision's node as its pod's status.nominatedNodeName
// (framework.Session.Nominate), or clears it for a decision without a node,
// and returns one error (nil on success) per decision, in the same order.
// It is kube-scheduler's write for a preemptor: one status patch per pod,
// carrying the UID the session saw, so that a pod recreated under the same
// name is not the one nominated. A pod gone is no error: there is nothing
// left to nominate.
func (b *Binder) Nominate(ctx context.Context, nominations []framework.Decision) []error {
	errs := make([]error, len(nominations))
	parallel.ForEach(len(nominations), b.workers, func(i int) { errs[i] = b.nominate(ctx, nominations[i]) })
	return errs
}

func (b *Binder) nominate(ctx context.Context, d framework.Decision) error {
	pod := d.Task.Pod
	var node any // null clears the field in a merge patch
	if d.Node != "" {
		node = d.Node
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"nominatedNodeName": node},
	})
	if err != nil {
		return err
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	err = b.client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, data))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nominate %s for %s/%s: %w", d.Node, pod.Namespace, pod.Name, err)
	}
	return nil
}
