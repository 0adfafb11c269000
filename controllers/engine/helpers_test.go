package engine_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// operatorFixture is one spec's namespace, its TFJobs and the operator the
// spec starts (start), with the options it needs; the operator is stopped
// after the spec.
type operatorFixture struct {
	ctx  context.Context
	ns   string
	op   *testutil.Operator
	jobs *tfJobs
}

// newOperatorFixture makes the fixture afresh before each spec of the
// container it is called in.
func newOperatorFixture() *operatorFixture {
	f := &operatorFixture{}
	BeforeEach(func() {
		f.ctx = context.Background()
		f.ns = newNamespace(f.ctx)
		f.jobs = &tfJobs{ctx: f.ctx, ns: f.ns}
		DeferCleanup(func() {
			if f.op != nil {
				Expect(f.op.Stop()).To(Succeed())
				f.op = nil
			}
		})
	})
	return f
}

// start runs the operator for TFJobs with options.
func (f *operatorFixture) start(options ...testutil.OperatorOption) {
	var err error
	f.op, err = testutil.StartOperator(suite.Env.Config, []string{"tfjob"}, options...)
	Expect(err).NotTo(HaveOccurred())
}

// tfJobs drives the TFJobs of one spec's namespace: it reads them, waits
// for their conditions and pods, and plays the kubelet for their pods.
type tfJobs struct {
	ctx context.Context
	ns  string
}

func (j *tfJobs) get(g Gomega, name string) *kubeflowv1.TFJob {
	job := &kubeflowv1.TFJob{}
	g.ExpectWithOffset(1, suite.Client.Get(j.ctx, client.ObjectKey{Namespace: j.ns, Name: name}, job)).To(Succeed())
	return job
}

// live lists the job's pods that are not terminating.
func (j *tfJobs) live(g Gomega, name string) []corev1.Pod {
	pods, err := testutil.JobPods(j.ctx, suite.Client, j.ns, name)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return testutil.Live(pods)
}

// livePods waits for exactly n pods of the job that are not terminating.
func (j *tfJobs) livePods(name string, n int) []corev1.Pod {
	var live []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		live = j.live(g, name)
		g.Expect(live).To(HaveLen(n))
	}).Should(Succeed())
	return live
}

// livePodsBetween waits until the job has from min to max pods that are
// not terminating, and the same pods for a second.
func (j *tfJobs) livePodsBetween(name string, min, max int) []corev1.Pod {
	uids := func(pods []corev1.Pod) []types.UID {
		out := make([]types.UID, len(pods))
		for i := range pods {
			out[i] = pods[i].UID
		}
		return out
	}
	var live []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		live = j.live(g, name)
		g.Expect(len(live)).To(And(BeNumerically(">=", min), BeNumerically("<=", max)))
	}).Should(Succeed())
	ConsistentlyWithOffset(1, func(g Gomega) {
		g.Expect(uids(j.live(g, name))).To(ConsistOf(uids(live)))
	}, time.Second).Should(Succeed())
	return live
}

func (j *tfJobs) runAll(pods []corev1.Pod) {
	for i := range pods {
		ExpectWithOffset(1, testutil.SetPodPhase(j.ctx, suite.Client, &pods[i], corev1.PodRunning)).To(Succeed())
	}
}

// expectCondition waits until the job has ctype true with reason.
func (j *tfJobs) expectCondition(name string, ctype kubeflowv1.JobConditionType, reason string) *kubeflowv1.TFJob {
	var job *kubeflowv1.TFJob
	EventuallyWithOffset(1, func(g Gomega) {
		job = j.get(g, name)
		c := testutil.Condition(&job.Status, ctype)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v, gang: %+v", job.Status.Conditions, job.Status.Gang)
		g.Expect(c.Status).To(Equal(corev1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}).Should(Succeed())
	return job
}
