package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/test/bench/measure"
)

// The run's times are the audit log's; a log with fewer binds than the
// watch saw has lost events and fails the run rather than time it short.
func TestStoredBinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		logged  []string // the pods whose binds the audit log has
		wantErr string
	}{
		{"every bind the watch saw is in the log", []string{"g-0", "g-1"}, ""},
		{"a bind the watch saw is missing from the log", []string{"g-0"}, "the audit log has 1 binds of the run where the harness's watch saw 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracker := measure.NewTracker(map[string]int{"g": 2}, nil)
			var pods []*corev1.Pod
			for _, name := range []string{"g-0", "g-1"} {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(name),
					Labels: map[string]string{kubeflowv1.JobNameLabel: "g"}}}
				tracker.OnAdd(pod, true)
				pods = append(pods, pod)
			}
			tracker.Start()
			var log strings.Builder
			for _, pod := range pods {
				bound := pod.DeepCopy()
				bound.Spec.NodeName = "node-0"
				tracker.OnUpdate(pod, bound)
			}
			for _, name := range tc.logged {
				fmt.Fprintf(&log, `{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","subresource":"binding","namespace":%q,"name":%q},"responseStatus":{"code":201},"stageTimestamp":%q}`+"\n",
					namespace, name, time.Now().Format(time.RFC3339Nano))
			}
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			stored, err := storedBinds(path, tracker, map[string]int{"g": 2})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("storedBinds: %v", err)
			case tc.wantErr == "" && stored.Throughput().Gangs != 1:
				t.Errorf("gangs bound whole = %d, want 1", stored.Throughput().Gangs)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
