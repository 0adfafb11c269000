package bench

import (
	"context"
	"errors"
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

// The run's times are the audit log's. The log is written in batches, so
// it may trail the watch for a moment; a log with fewer binds than the
// watch saw after that has lost events and fails the run rather than time
// it short.
func TestStoredBinds(t *testing.T) {
	defer func(d time.Duration) { auditCatchUp = d }(auditCatchUp)
	auditCatchUp = 2 * time.Second
	for _, tc := range []struct {
		name    string
		logged  []string // the pods whose binds the audit log has
		late    []string // those written to it half a second later
		wantErr string
	}{
		{"every bind the watch saw is in the log", []string{"g-0", "g-1"}, nil, ""},
		{"the log catches up with the watch", []string{"g-0"}, []string{"g-1"}, ""},
		{"a bind the watch saw never reaches the log", []string{"g-0"}, nil, "the audit log has 1 binds of the run where the harness's watch saw 2, 2s after"},
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
			for _, pod := range pods {
				bound := pod.DeepCopy()
				bound.Spec.NodeName = "node-0"
				tracker.OnUpdate(pod, bound)
			}
			lines := func(names []string) []byte {
				var log strings.Builder
				for _, name := range names {
					fmt.Fprintf(&log, `{"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","subresource":"binding","namespace":%q,"name":%q},"responseStatus":{"code":201},"stageTimestamp":%q}`+"\n",
						namespace, name, time.Now().Format(metav1.RFC3339Micro))
				}
				return []byte(log.String())
			}
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, lines(tc.logged), 0o644); err != nil {
				t.Fatal(err)
			}
			written := make(chan error, 1)
			go func() {
				time.Sleep(500 * time.Millisecond)
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err == nil {
					_, err = f.Write(lines(tc.late))
					err = errors.Join(err, f.Close())
				}
				written <- err
			}()
			stored, err := storedBinds(context.Background(), path, tracker, map[string]int{"g": 2})
			if werr := <-written; werr != nil {
				t.Fatal(werr)
			}
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
