package podtopologyspread_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/podtopologyspread"
)

const (
	host = corev1.LabelHostname
	zone = corev1.LabelTopologyZone
)

// gpuNode is a node with 4 GPUs in zone z ("" for none): without a
// constraint the node order would pack a gang's 1-GPU pods onto one node.
func gpuNode(name, z string) *st.NodeWrapper {
	n := st.MakeNode(name).Capacity("16", "64Gi", 4)
	if z != "" {
		n.Label(zone, z)
	}
	return n
}

// workers are n pending 1-GPU pods of gang job, labelled job=<job>, with
// mutate applied to each.
func workers(job string, n int, mutate func(*st.PodWrapper)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := st.MakePod("ns", fmt.Sprintf("%s-%d", job, i)).Job(job).Req("1", "1Gi").GPU(1).Labels("job", job)
		if mutate != nil {
			mutate(p)
		}
		out = append(out, p.Obj())
	}
	return out
}

func running(name, on string, labels ...string) *corev1.Pod {
	return st.MakePod("ns", name).Req("1", "").Labels(labels...).Node(on).Phase(corev1.PodRunning).Obj()
}

func place(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, job *api.JobInfo) (map[string]string, *framework.Session) {
	t.Helper()
	ssn := framework.OpenSession(st.MustSnapshot(nodes, pods, []*api.JobInfo{job}), plugins.Default()...)
	ssn.Run(actions.NewAllocate())
	out := map[string]string{}
	for _, d := range ssn.Bindings() {
		out[d.Task.Name] = d.Node
	}
	return out, ssn
}

// perDomain counts the placed pods per value of key on their nodes, and
// the pods already running there that the test counts (those labelled
// job=g).
func perDomain(ssn *framework.Session, placed map[string]string, key string) map[string]int {
	out := map[string]int{}
	for _, n := range ssn.NodeList {
		if v, ok := n.Node.Labels[key]; ok {
			out[v] += 0
		}
	}
	for _, node := range placed {
		out[ssn.Nodes[node].Node.Labels[key]]++
	}
	return out
}

func skew(counts map[string]int) int {
	lo, hi := 1<<30, 0
	for _, n := range counts {
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi - lo
}

func TestDoNotSchedule(t *testing.T) {
	dns := corev1.DoNotSchedule
	hosts := func(n int) []*corev1.Node {
		var out []*corev1.Node
		for i := range n {
			out = append(out, gpuNode(fmt.Sprintf("n%d", i), "").Obj())
		}
		return out
	}
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		members int32
		// check judges the placement; nil wants nothing placed.
		check  func(t *testing.T, ssn *framework.Session, placed map[string]string)
		reason string
	}{
		{
			name:    "four workers, maxSkew 1 over hosts: one per host",
			nodes:   hosts(4),
			pods:    workers("g", 4, func(p *st.PodWrapper) { p.Spread(1, host, dns, nil, "job", "g") }),
			members: 4,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if s := skew(perDomain(ssn, placed, host)); s > 1 {
					t.Errorf("skew %d over hosts, want at most 1: %v", s, placed)
				}
			},
		},
		{
			name:    "maxSkew 2: at most two more on any host than on the emptiest",
			nodes:   hosts(2),
			pods:    workers("g", 4, func(p *st.PodWrapper) { p.Spread(2, host, dns, nil, "job", "g") }),
			members: 4,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if s := skew(perDomain(ssn, placed, host)); s > 2 {
					t.Errorf("skew %d, want at most 2: %v", s, placed)
				}
			},
		},
		{
			name:  "running pods of the selector count",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj()},
			pods: append([]*corev1.Pod{running("old-0", "a1", "job", "g"), running("old-1", "a1", "job", "g")},
				workers("g", 2, func(p *st.PodWrapper) { p.Spread(1, zone, dns, nil, "job", "g") })...),
			members: 2,
			check: func(t *testing.T, _ *framework.Session, placed map[string]string) {
				if placed["g-0"] != "b1" || placed["g-1"] != "b1" {
					t.Errorf("placed %v, want both in zone b (2 running in a)", placed)
				}
			},
		},
		{
			name:  "pods being deleted do not count",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj()},
			pods: append([]*corev1.Pod{
				st.MakePod("ns", "old").Req("1", "").Labels("job", "g").Node("a1").Phase(corev1.PodRunning).Terminating().Obj(),
			}, workers("g", 2, func(p *st.PodWrapper) { p.Spread(1, zone, dns, nil, "job", "g") })...),
			members: 2,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if c := perDomain(ssn, placed, zone); c["a"] != 1 || c["b"] != 1 {
					t.Errorf("placed %v, want one per zone", placed)
				}
			},
		},
		{
			name:    "a node without the topology key is never chosen",
			nodes:   []*corev1.Node{gpuNode("nokey", "").Obj()},
			pods:    workers("g", 1, func(p *st.PodWrapper) { p.Spread(1, zone, dns, nil, "job", "g") }),
			members: 1,
			reason:  string(podtopologyspread.ReasonNodeLabelNotMatch),
		},
		{
			// Found by the differential suite (seed 1795789386953851447):
			// a1 lacks the rack key, which only the ScheduleAnyway
			// constraint asks for. It still counts for the zone filter, as
			// in kube-scheduler: zone a holds 2 of the selector's pods and
			// zone b (whose node has no GPU) none, so a1 would make the
			// skew 3.
			name: "a key only ScheduleAnyway asks for does not take a node out of the filter's domains",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(),
				st.MakeNode("b1").Capacity("16", "64Gi", 0).Label(zone, "b").Label("example.com/rack", "r1").Obj()},
			pods: append([]*corev1.Pod{running("x-0", "a1", "job", "g"), running("x-1", "a1", "job", "g")},
				workers("g", 1, func(p *st.PodWrapper) {
					p.Spread(1, zone, dns, nil, "job", "g").Spread(1, "example.com/rack", corev1.ScheduleAnyway, nil, "job", "g")
				})...),
			members: 1,
			reason:  string(podtopologyspread.ReasonConstraintsNotMatch),
		},
		{
			// Two zones, minDomains 3: the global minimum counts as 0, so
			// no zone may take more than maxSkew, and a gang of 3 with
			// maxSkew 1 cannot be placed.
			name:  "minDomains above the domains: the minimum counts as 0",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj()},
			pods: workers("g", 3, func(p *st.PodWrapper) {
				p.Spread(1, zone, dns, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](3) }, "job", "g")
			}),
			members: 3,
			reason:  string(podtopologyspread.ReasonConstraintsNotMatch),
		},
		{
			name:  "minDomains met: two per zone fits",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj()},
			pods: workers("g", 4, func(p *st.PodWrapper) {
				p.Spread(1, zone, dns, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](2) }, "job", "g")
			}),
			members: 4,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if c := perDomain(ssn, placed, zone); c["a"] != 2 || c["b"] != 2 {
					t.Errorf("per zone %v, want 2 and 2", c)
				}
			},
		},
		{
			// Zone c's node does not match the pods' node selector: under
			// Honor (the default) it is no domain; under Ignore it is an
			// empty one that caps every other zone at maxSkew.
			name:  "nodeAffinityPolicy Honor: a domain the pod cannot use does not count",
			nodes: []*corev1.Node{gpuNode("a1", "a").Label("pool", "x").Obj(), gpuNode("b1", "b").Label("pool", "x").Obj(), gpuNode("c1", "c").Obj()},
			pods: workers("g", 4, func(p *st.PodWrapper) {
				p.NodeSelector("pool", "x").Spread(1, zone, dns, nil, "job", "g")
			}),
			members: 4,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if c := perDomain(ssn, placed, zone); c["a"] != 2 || c["b"] != 2 {
					t.Errorf("per zone %v, want 2 and 2", c)
				}
			},
		},
		{
			name:  "nodeAffinityPolicy Ignore: it does",
			nodes: []*corev1.Node{gpuNode("a1", "a").Label("pool", "x").Obj(), gpuNode("b1", "b").Label("pool", "x").Obj(), gpuNode("c1", "c").Obj()},
			pods: workers("g", 4, func(p *st.PodWrapper) {
				p.NodeSelector("pool", "x").Spread(1, zone, dns, func(c *corev1.TopologySpreadConstraint) {
					c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
				}, "job", "g")
			}),
			members: 4,
			reason:  string(podtopologyspread.ReasonConstraintsNotMatch),
		},
		{
			name: "nodeTaintsPolicy Ignore (the default): a tainted zone still counts",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj(),
				gpuNode("c1", "c").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()},
			pods:    workers("g", 4, func(p *st.PodWrapper) { p.Spread(1, zone, dns, nil, "job", "g") }),
			members: 4,
			reason:  string(podtopologyspread.ReasonConstraintsNotMatch),
		},
		{
			name: "nodeTaintsPolicy Honor: it does not",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj(),
				gpuNode("c1", "c").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()},
			pods: workers("g", 4, func(p *st.PodWrapper) {
				p.Spread(1, zone, dns, func(c *corev1.TopologySpreadConstraint) {
					c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
				}, "job", "g")
			}),
			members: 4,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if c := perDomain(ssn, placed, zone); c["a"] != 2 || c["b"] != 2 {
					t.Errorf("per zone %v, want 2 and 2", c)
				}
			},
		},
		{
			// matchLabelKeys narrows the selector to the pod's own value of
			// the key: another job's pods in zone a are not counted.
			name:  "matchLabelKeys: only pods with the same value count",
			nodes: []*corev1.Node{gpuNode("a1", "a").Obj(), gpuNode("b1", "b").Obj()},
			pods: append([]*corev1.Pod{running("x-0", "a1", "app", "train", "job", "x"), running("x-1", "a1", "app", "train", "job", "x")},
				workers("g", 2, func(p *st.PodWrapper) {
					p.Labels("app", "train").Spread(1, zone, dns, func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"job"} }, "app", "train")
				})...),
			members: 2,
			check: func(t *testing.T, ssn *framework.Session, placed map[string]string) {
				if c := perDomain(ssn, placed, zone); c["a"] != 1 || c["b"] != 1 {
					t.Errorf("per zone %v, want 1 and 1", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := st.MakeJob("ns", "g").MinMember(tt.members).Obj()
			placed, ssn := place(t, tt.nodes, tt.pods, job)
			if tt.check == nil {
				if len(placed) != 0 {
					t.Fatalf("placed %v, want nothing", placed)
				}
				if f := ssn.Unschedulable()[job.UID]; !strings.Contains(f.Message, tt.reason) {
					t.Errorf("finding %q, want it to say %q", f.Message, tt.reason)
				}
				return
			}
			if len(placed) != int(tt.members) {
				t.Fatalf("placed %v, want all %d: %+v", placed, tt.members, ssn.Unschedulable()[job.UID])
			}
			tt.check(t, ssn, placed)
		})
	}
}

// ScheduleAnyway spreads as a preference, outweighing GPU bin-packing,
// and still places the gang where the spread cannot be kept.
func TestScheduleAnyway(t *testing.T) {
	sa := corev1.ScheduleAnyway
	nodes := []*corev1.Node{gpuNode("n0", "").Obj(), gpuNode("n1", "").Obj()}
	placed, ssn := place(t, nodes, workers("g", 4, func(p *st.PodWrapper) { p.Spread(1, host, sa, nil, "job", "g") }),
		st.MakeJob("ns", "g").MinMember(4).Obj())
	if c := perDomain(ssn, placed, host); c["n0"] != 2 || c["n1"] != 2 {
		t.Errorf("per host %v (%v), want 2 and 2: the preference outweighs bin-packing", c, placed)
	}

	one := []*corev1.Node{gpuNode("n0", "").Obj()}
	placed, _ = place(t, one, workers("g", 4, func(p *st.PodWrapper) { p.Spread(1, host, sa, nil, "job", "g") }),
		st.MakeJob("ns", "g").MinMember(4).Obj())
	if got := slices.Sorted(maps.Values(placed)); len(got) != 4 {
		t.Errorf("placed %v, want all four on n0: ScheduleAnyway never refuses", placed)
	}
}
