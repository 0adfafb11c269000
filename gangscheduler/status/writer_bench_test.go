package status_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/rest"
	clientevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/status"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// BenchmarkWriterPodGroups is how many PodGroup status writes a real API
// server takes a second through the Writer at a few widths: what
// --status-write-workers trades. An op is every one of 500 PodGroups
// written, its phase flipped.
//
//	go test ./gangscheduler/status -run '^$' -bench WriterPodGroups -benchtime 5x
func BenchmarkWriterPodGroups(b *testing.B) {
	env, err := testutil.StartEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side limit: the API server's rate is measured
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ns, err := testutil.CreateNamespace(ctx, c, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const podGroups = 500
	writes := make([]status.PodGroupWrite, podGroups)
	for i := range writes {
		pg := testutil.MakePodGroup(fmt.Sprintf("pg-%d", i), ns.Name).Obj()
		if err := c.Create(ctx, pg); err != nil {
			b.Fatal(err)
		}
		writes[i] = status.PodGroupWrite{PodGroup: pg, Old: pg.Status}
	}
	// flipped is a status other than old, so that every write is sent.
	flipped := func(old schedulingv1alpha1.PodGroupStatus) schedulingv1alpha1.PodGroupStatus {
		if old.Phase == schedulingv1alpha1.PodGroupInqueue {
			return schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning}
		}
		return schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupInqueue}
	}
	for _, workers := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			w := status.NewWriter(c, clientevents.NewFakeRecorder(0), status.WriterOptions{Workers: workers})
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			go func() { _ = w.Start(wctx) }()
			for b.Loop() {
				for i := range writes {
					writes[i].Update = status.Update{Status: flipped(writes[i].Old)}
				}
				w.Write(writes, nil, nil)
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				for i := range writes {
					writes[i].Old = writes[i].Update.Status
				}
			}
			b.ReportMetric(float64(podGroups*b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
