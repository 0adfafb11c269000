package differential

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/internal/placementcheck"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// gangCase is a gang that kube-scheduler cannot place whole (it places
// pods one by one), so troupe-scheduler's decision is judged by the
// checker alone: every member is checked as if placed last, with every
// other member already there.
type gangCase struct {
	name    string
	nodes   []*corev1.Node
	members []*corev1.Pod
	// storage is the case's claims, volumes, classes and CSINodes.
	storage storage
	// fits says whether the whole gang can be placed; if not, nothing
	// may be bound and the PodGroup must say Unschedulable.
	fits bool
	// refusal, if set, must be in the PodGroup's Unschedulable message.
	refusal string
}

// worker is a gang member asking for one GPU: troupe-scheduler bin-packs
// GPU pods, so a scheduler that ignored the gang's spreading rules would
// stack the members on one node and the case would catch it.
func worker(i int) *testutil.PodBuilder {
	return testutil.MakePod(fmt.Sprintf("worker-%d", i), "").Labels(app("trainer")).Request(testutil.GPU, "1")
}

func gpuNodes(names ...string) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range names {
		out = append(out, node(n).GPU(8).Obj())
	}
	return out
}

func gangCases() []gangCase {
	oneEach := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, worker(i).PodAntiAffinity(testutil.PodTerm(host, app("trainer")).Obj()).Obj())
		}
		return out
	}
	spread := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, worker(i).Spread(testutil.MakeSpread(host, 1, app("trainer")).Obj()).Obj())
		}
		return out
	}
	return []gangCase{
		{name: "3 workers, one per node by required anti-affinity, on 4 nodes: all bound, on 3 nodes",
			nodes: gpuNodes("a", "b", "c", "d"), members: oneEach(3), fits: true},
		{name: "4 workers spread by hostname with maxSkew 1 over 4 nodes: all bound, one per node",
			nodes: gpuNodes("a", "b", "c", "d"), members: spread(4), fits: true},
		{name: "3 workers, one per node, on only 2 nodes: none bound, the PodGroup Unschedulable",
			nodes: gpuNodes("a", "b"), members: oneEach(3), fits: false},
		{name: "2 workers sharing one ReadWriteOncePod claim: none bound, the gang refused",
			nodes: gpuNodes("a", "b"), fits: false, refusal: "whose access mode is ReadWriteOncePod",
			members: []*corev1.Pod{worker(0).Claim("once").Obj(), worker(1).Claim("once").Obj()},
			storage: storage{claims: claims(boundClaim("once").AccessModes(corev1.ReadWriteOncePod)), volumes: volumes(csiVolume("once"))}},
		{name: "2 workers with a CSI volume each, on nodes that attach one: one per node",
			nodes: gpuNodes("a", "b"), fits: true,
			members: []*corev1.Pod{worker(0).Claim("v0").Obj(), worker(1).Claim("v1").Obj()},
			storage: storage{claims: claims(boundClaim("v0"), boundClaim("v1")), volumes: volumes(csiVolume("v0"), csiVolume("v1")),
				csiNodes: csiNodes(st.MakeCSINode("a").Driver(csiDriver, 1), st.MakeCSINode("b").Driver(csiDriver, 1))}},
		// Not a difference in judgement but in means: kube-scheduler
		// would choose a node and have the claim provisioned there;
		// troupe-scheduler binds and provisions no volume, and says so.
		{name: "a worker whose claim is unbound and binds WaitForFirstConsumer: the gang refused, naming the field",
			nodes: gpuNodes("a"), fits: false, refusal: "spec.volumes[0].persistentVolumeClaim (late): claim \"late\" is not bound",
			members: []*corev1.Pod{worker(0).Claim("late").Obj()},
			storage: storage{classes: []*storagev1.StorageClass{st.MakeStorageClass("wffc", storagev1.VolumeBindingWaitForFirstConsumer)},
				claims: claims(st.MakePVC("", "late").Class("wffc"))}},
	}
}

func gangSpecs(ctx context.Context, s func() *schedulers) {
	for _, gc := range gangCases() {
		It(gc.name, func() { runGang(ctx, s(), gc) })
	}
}

func runGang(ctx context.Context, s *schedulers, gc gangCase) {
	mark := s.mark()
	r := setUp(ctx, s, scenario{name: gc.name, nodes: gc.nodes, storage: gc.storage})
	var members []*corev1.Pod
	for _, m := range gc.members {
		members = append(members, r.localize(m))
	}
	ds := troupeDecision(ctx, "gang", members...)

	var placedPods []*corev1.Pod
	for _, d := range ds {
		if d.placed {
			placedPods = append(placedPods, d.judged())
		}
	}
	var problems []string
	var viol []placementcheck.Violation
	final := r.with(placedPods...)
	for _, p := range placedPods {
		viol = append(viol, placementcheck.Check(final, p)...)
	}
	switch {
	case gc.fits && len(placedPods) != len(ds):
		problems = append(problems, fmt.Sprintf("the gang fits, and troupe-scheduler bound %d of its %d members", len(placedPods), len(ds)))
	case !gc.fits && len(placedPods) > 0:
		problems = append(problems, fmt.Sprintf("the gang cannot be placed whole, and troupe-scheduler bound %d of its %d members", len(placedPods), len(ds)))
	}
	if !gc.fits && ds[0].message == "" {
		problems = append(problems, "the gang cannot be placed whole, and its PodGroup does not say Unschedulable")
	}
	if gc.refusal != "" && !strings.Contains(ds[0].message, gc.refusal) {
		problems = append(problems, fmt.Sprintf("the PodGroup does not say %q", gc.refusal))
	}
	if len(viol) > 0 {
		problems = append(problems, "troupe-scheduler's placement breaks required rules (see the checker's violations)")
	}
	if len(problems) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gang case %q\n  namespace %s, nodes named %s<name>\nproblems:\n", gc.name, r.ns, r.prefix)
	for _, p := range problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	b.WriteString("troupe-scheduler:\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "  %s: %s\n", d.pod.Name, r.short(d))
	}
	r.writeViolations(&b, "troupe-scheduler's placement", viol)
	fmt.Fprintf(&b, "troupe PodGroup said: %s\n", orDash(ds[0].message))
	// The cluster as troupe-scheduler left it, members included.
	r.state = final
	b.WriteString(r.describeCluster())
	b.WriteString(r.describeStorage())
	b.WriteString("a member:\n")
	b.WriteString(indent(describePod(ds[0].asked), "    "))
	Fail(b.String() + s.logsSince(mark))
}
