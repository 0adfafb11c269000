package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// ChaosLabel puts a Running pod through kwok's
	// pod-container-running-failed stage (hack/kwok.sh copies it from
	// kwok's module): about a second later kwok ends its containers with
	// the exit code of ChaosExitCodeAnnotation and sets the pod Failed.
	// The stage selects on this label, so no other pod is touched; it
	// also skips pods being deleted and pods not Running.
	ChaosLabel              = "pod-container-running-failed.stage.kwok.x-k8s.io"
	ChaosExitCodeAnnotation = ChaosLabel + "/exit-code"
)

// FailPod labels and annotates the pod for kwok's chaos stage, in one
// write, so that the exit code is in place when the label selects the
// pod. The pod's resourceVersion is a precondition when it is set, so
// that a pod changed since the caller read it (deleted and recreated,
// moved on) is not failed by mistake; the conflict is returned.
func FailPod(ctx context.Context, c client.Client, pod *corev1.Pod, exitCode int32) error {
	meta := map[string]any{
		"labels":      map[string]string{ChaosLabel: "true"},
		"annotations": map[string]string{ChaosExitCodeAnnotation: strconv.Itoa(int(exitCode))},
	}
	if pod.ResourceVersion != "" {
		meta["resourceVersion"] = pod.ResourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("fail pod %s/%s through kwok's chaos stage: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
