package interpodaffinity_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/interpodaffinity"
)

const (
	host = corev1.LabelHostname
	zone = corev1.LabelTopologyZone
)

// node is a node with 8 CPUs in zone z ("" for none).
func node(name, z string) *corev1.Node {
	n := st.MakeNode(name).Capacity("8", "32Gi", 0)
	if z != "" {
		n.Label(zone, z)
	}
	return n.Obj()
}

// running is a pod of no gang already on a node.
func running(name, on string, labels ...string) *st.PodWrapper {
	return st.MakePod("ns", name).Req("1", "1Gi").Labels(labels...).Node(on).Phase(corev1.PodRunning)
}

// member is a pending pod of gang job, labelled job=<job> and replica=<i>.
func member(job string, i int) *st.PodWrapper {
	return st.MakePod("ns", fmt.Sprintf("%s-%d", job, i)).Job(job).Req("1", "1Gi").
		Labels("job", job, "replica", fmt.Sprint(i))
}

// place runs allocate with the default plugins and returns pod -> node of
// its decisions, and the session.
func place(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, jobs ...*api.JobInfo) (map[string]string, *framework.Session) {
	t.Helper()
	snap := st.MustSnapshot(nodes, pods, jobs)
	snap.Namespaces = map[string]labels.Set{"ns": {"team": "a"}, "other": {"team": "b"}}
	ssn := framework.OpenSession(snap, plugins.Default()...)
	ssn.Run(actions.NewAllocate())
	out := map[string]string{}
	for _, d := range ssn.Bindings() {
		out[d.Task.Name] = d.Node
	}
	return out, ssn
}

func TestRequiredPodAffinityAndAntiAffinity(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		job   *api.JobInfo
		// want maps pod -> node, or pod -> "zone:<z>" for any node of the
		// zone; nil wants nothing placed.
		want   map[string]string
		reason string // in the session's finding when nothing is placed
	}{
		{
			name:  "one worker per host: anti-affinity among the gang's own members",
			nodes: []*corev1.Node{node("n1", ""), node("n2", ""), node("n3", "")},
			pods: []*corev1.Pod{
				member("g", 0).PodAntiAffinity(host, "job", "g").Obj(),
				member("g", 1).PodAntiAffinity(host, "job", "g").Obj(),
				member("g", 2).PodAntiAffinity(host, "job", "g").Obj(),
			},
			job:  st.MakeJob("ns", "g").MinMember(3).Obj(),
			want: map[string]string{"g-0": "n1", "g-1": "n2", "g-2": "n3"},
		},
		{
			name:  "one worker per host with too few hosts: the gang binds nothing",
			nodes: []*corev1.Node{node("n1", ""), node("n2", "")},
			pods: []*corev1.Pod{
				member("g", 0).PodAntiAffinity(host, "job", "g").Obj(),
				member("g", 1).PodAntiAffinity(host, "job", "g").Obj(),
				member("g", 2).PodAntiAffinity(host, "job", "g").Obj(),
			},
			job:    st.MakeJob("ns", "g").MinMember(3).Obj(),
			reason: string(interpodaffinity.ReasonAntiAffinity),
		},
		{
			name:  "anti-affinity to a running pod",
			nodes: []*corev1.Node{node("n1", ""), node("n2", "")},
			pods:  []*corev1.Pod{running("db", "n1", "app", "db").Obj(), member("g", 0).PodAntiAffinity(host, "app", "db").Obj()},
			job:   st.MakeJob("ns", "g").Obj(),
			want:  map[string]string{"g-0": "n2"},
		},
		{
			name:  "a running pod's anti-affinity keeps the pods it selects off its zone (symmetry)",
			nodes: []*corev1.Node{node("a1", "a"), node("a2", "a"), node("b1", "b")},
			pods:  []*corev1.Pod{running("loner", "a1").PodAntiAffinity(zone, "job", "g").Obj(), member("g", 0).Obj()},
			job:   st.MakeJob("ns", "g").Obj(),
			want:  map[string]string{"g-0": "b1"},
		},
		{
			name:   "symmetry with nowhere else to go",
			nodes:  []*corev1.Node{node("a1", "a")},
			pods:   []*corev1.Pod{running("loner", "a1").PodAntiAffinity(zone, "job", "g").Obj(), member("g", 0).Obj()},
			job:    st.MakeJob("ns", "g").Obj(),
			reason: string(interpodaffinity.ReasonExistingAntiAffinity),
		},
		{
			name:  "affinity to a running pod's zone",
			nodes: []*corev1.Node{node("a1", "a"), node("b1", "b"), node("b2", "b")},
			pods:  []*corev1.Pod{running("cache", "b2", "app", "cache").Obj(), member("g", 0).PodAffinity(zone, "app", "cache").Obj()},
			job:   st.MakeJob("ns", "g").Obj(),
			want:  map[string]string{"g-0": "zone:b"},
		},
		{
			name:  "a gang with affinity to itself: the first member anywhere, the others in its zone",
			nodes: []*corev1.Node{node("a1", "a"), node("b1", "b"), node("b2", "b")},
			pods: []*corev1.Pod{
				member("g", 0).Req("6", "").PodAffinity(zone, "job", "g").Obj(),
				member("g", 1).Req("6", "").PodAffinity(zone, "job", "g").Obj(),
			},
			job: st.MakeJob("ns", "g").MinMember(2).Obj(),
			// a1 is first by name but cannot take both: the first member
			// goes there and the second finds no room in zone a. Greedy
			// placement does not search other zones for the first member;
			// the gang waits (see the package's documented limit).
			reason: string(interpodaffinity.ReasonAffinity),
		},
		{
			name:  "a gang with affinity to itself that fits in the first zone",
			nodes: []*corev1.Node{node("a1", "a"), node("a2", "a"), node("b1", "b")},
			pods: []*corev1.Pod{
				member("g", 0).Req("6", "").PodAffinity(zone, "job", "g").Obj(),
				member("g", 1).Req("6", "").PodAffinity(zone, "job", "g").Obj(),
			},
			job:  st.MakeJob("ns", "g").MinMember(2).Obj(),
			want: map[string]string{"g-0": "zone:a", "g-1": "zone:a"},
		},
		{
			name:   "affinity that nothing matches, not even the pod itself",
			nodes:  []*corev1.Node{node("a1", "a")},
			pods:   []*corev1.Pod{member("g", 0).PodAffinity(zone, "app", "nothing").Obj()},
			job:    st.MakeJob("ns", "g").Obj(),
			reason: string(interpodaffinity.ReasonAffinity),
		},
		{
			name:  "affinity needs the topology key on the node",
			nodes: []*corev1.Node{node("nokey", ""), node("a1", "a")},
			pods:  []*corev1.Pod{running("cache", "a1", "app", "cache").Obj(), member("g", 0).PodAffinity(zone, "app", "cache").Obj()},
			job:   st.MakeJob("ns", "g").Obj(),
			want:  map[string]string{"g-0": "a1"},
		},
		{
			name:  "a term selects pods of other namespaces by their labels (namespaceSelector)",
			nodes: []*corev1.Node{node("a1", "a"), node("b1", "b")},
			pods: []*corev1.Pod{
				st.MakePod("other", "db").Req("1", "").Labels("app", "db").Node("a1").Phase(corev1.PodRunning).Obj(),
				func() *corev1.Pod {
					p := member("g", 0).Obj()
					term := st.AffinityTerm(zone, "app", "db")
					term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
					return p
				}(),
			},
			job:  st.MakeJob("ns", "g").Obj(),
			want: map[string]string{"g-0": "b1"},
		},
		{
			name:  "a term without namespaces selects only its own namespace",
			nodes: []*corev1.Node{node("a1", "a")},
			pods: []*corev1.Pod{
				st.MakePod("other", "db").Req("1", "").Labels("app", "db").Node("a1").Phase(corev1.PodRunning).Obj(),
				member("g", 0).PodAntiAffinity(zone, "app", "db").Obj(),
			},
			job:  st.MakeJob("ns", "g").Obj(),
			want: map[string]string{"g-0": "a1"},
		},
		{
			// The class leaves labels out; a running pod's anti-affinity
			// that selects one replica must not keep the other off.
			name:  "members of one class with different labels are judged apart",
			nodes: []*corev1.Node{node("n1", "")},
			pods:  []*corev1.Pod{running("picky", "n1").PodAntiAffinity(host, "replica", "0").Obj(), member("g", 0).Obj(), member("g", 1).Obj()},
			job:   st.MakeJob("ns", "g").MinMember(1).Obj(),
			want:  map[string]string{"g-1": "n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ssn := place(t, tt.nodes, tt.pods, tt.job)
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("placed %v, want nothing", got)
				}
				if f := ssn.Unschedulable()[tt.job.UID]; !strings.Contains(f.Message, tt.reason) {
					t.Errorf("finding %q, want it to say %q", f.Message, tt.reason)
				}
				return
			}
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.want))) {
				t.Fatalf("placed %v, want %v", got, tt.want)
			}
			for pod, want := range tt.want {
				if z, ok := strings.CutPrefix(want, "zone:"); ok {
					if ssn.Nodes[got[pod]].Node.Labels[zone] != z {
						t.Errorf("%s on %s, want zone %s", pod, got[pod], z)
					}
				} else if got[pod] != want {
					t.Errorf("%s on %s, want %s", pod, got[pod], want)
				}
			}
		})
	}
}

// Preferred terms choose among the feasible nodes, outweighing the node
// order's packing: toward the pods a term prefers, away from those its
// anti-affinity avoids, and toward the pods whose own terms prefer it.
func TestPreferredPodAffinity(t *testing.T) {
	nodes := []*corev1.Node{node("a1", "a"), node("b1", "b"), node("c1", "c")}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want string // zone of g-0
	}{
		{"prefers the cache's zone", []*corev1.Pod{running("cache", "b1", "app", "cache").Obj(), member("g", 0).PreferredPodAffinity(50, zone, "app", "cache").Obj()}, "b"},
		{"avoids the noisy zones", []*corev1.Pod{
			running("noisy-a", "a1", "app", "noisy").Obj(), running("noisy-b", "b1", "app", "noisy").Obj(),
			member("g", 0).PreferredPodAffinity(-50, zone, "app", "noisy").Obj(),
		}, "c"},
		{"goes where a running pod's preference wants it (symmetry)", []*corev1.Pod{
			running("hub", "c1").PreferredPodAffinity(80, zone, "job", "g").Obj(), member("g", 0).Obj(),
		}, "c"},
		{"goes where a running pod's required affinity selects it (hard pod affinity weight)", []*corev1.Pod{
			running("hub", "b1").PodAffinity(zone, "job", "g").Obj(), member("g", 0).Obj(),
		}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ssn := place(t, nodes, tt.pods, st.MakeJob("ns", "g").Obj())
			if z := ssn.Nodes[got["g-0"]].Node.Labels[zone]; z != tt.want {
				t.Errorf("g-0 on %s (zone %s), want zone %s", got["g-0"], z, tt.want)
			}
		})
	}
}
