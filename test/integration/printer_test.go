package integration

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// What `kubectl get pytorchjobs` shows, read as kubectl reads it: the API
// server's Table of the CRD's printer columns. A job whose gang waits must
// not read "GangScheduled", as upstream's last-condition column does.
var _ = Describe("kubectl get: the job's state", Ordered, func() {
	ctx := context.Background()

	BeforeAll(func() {
		op, err := testutil.StartOperatorWithFlags(suite.Env.Config, []string{"--gang-scheduler-name=troupe"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(op.Stop)
		s, err := testutil.StartScheduler(suite.Env.Config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Stop)
	})

	// table is the API server's Table of the namespace's PyTorchJobs:
	// each job's name mapped to its cells by column name.
	table := func(g Gomega, ns string) map[string]map[string]any {
		cs, err := kubernetes.NewForConfig(suite.Env.Config)
		g.Expect(err).NotTo(HaveOccurred())
		raw, err := cs.RESTClient().Get().AbsPath("/apis/kubeflow.org/v1/namespaces", ns, "pytorchjobs").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var t metav1.Table
		g.Expect(json.Unmarshal(raw, &t)).To(Succeed())
		out := map[string]map[string]any{}
		for _, row := range t.Rows {
			cells := map[string]any{}
			for i, col := range t.ColumnDefinitions {
				cells[col.Name] = row.Cells[i]
			}
			out[cells["Name"].(string)] = cells
		}
		return out
	}

	It("shows GangPending for a gang that waits, Running once it runs, and whole-gang restarts", func() {
		f := newFixture(ctx, "printer")
		f.node("cpu", "cpu", 0)
		f.node("gpu", "gpu", 8)
		f.job("waits", 5, "2", nil) // 10 GPUs: more than the node has
		f.job("runs", 2, "2", nil)

		Eventually(func(g Gomega) {
			rows := table(g, f.ns)
			g.Expect(rows).To(HaveKeyWithValue("waits", HaveKeyWithValue("State", "GangPending")))
			g.Expect(rows["waits"]).To(HaveKey("Restarts"))
		}, 30*time.Second).Should(Succeed())

		f.whole("runs", 3, f.ns+"-gpu")
		for _, p := range f.live(Default, "runs") {
			Expect(testutil.SetPodPhase(ctx, suite.Client, &p, corev1.PodRunning)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(table(g, f.ns)).To(HaveKeyWithValue("runs", HaveKeyWithValue("State", "Running")))
		}, 30*time.Second).Should(Succeed())
	})
})
