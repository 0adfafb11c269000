package differential

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The generated cases: a seed gives the same cases on every run, and each
// run without one takes a fresh seed, so that runs keep exploring. A
// failing generated case prints its seed.

const seedEnv = "TROUPE_DIFFERENTIAL_SEED"

var (
	seedFlag = flag.Uint64("differential.seed", 0,
		"seed of the generated cases; 0 takes $"+seedEnv+", or else a fresh seed")
	randomCasesFlag = flag.Int("differential.random-cases", 30, "how many generated cases to run")
)

// suiteSeed is the seed of this run's generated cases.
func suiteSeed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if v := os.Getenv(seedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err == nil && seed != 0 {
			return seed
		}
		panic(fmt.Sprintf("%s=%q: want a positive integer", seedEnv, v))
	}
	return uint64(time.Now().UnixNano())
}

// gen is the randomness of one generated case.
type gen struct{ *rand.Rand }

func (g gen) chance(p float64) bool { return g.Float64() < p }

func pick[T any](g gen, xs ...T) T { return xs[g.IntN(len(xs))] }

var (
	genApps  = []string{"web", "db", "cache"}
	genZones = []string{"z1", "z2", "z3"}
	genRacks = []string{"r1", "r2", "r3", "r4"}
	genPools = []string{"cpu", "gpu"}
	genTeams = []string{"ml", "web"}
)

// generate is case index of seed: 3 to 6 nodes with zone, rack and pool
// labels (some missing), capacities, taints and cordons; up to 7 pods
// already on them, with labels and some with required anti-affinity; and a
// pod with a random mixture of node selectors, required and preferred node
// affinity, tolerations, required and preferred pod affinity and
// anti-affinity, topology spread constraints, requests and host ports.
func generate(seed uint64, index int) scenario {
	g := gen{rand.New(rand.NewPCG(seed, uint64(index)))}
	sc := scenario{name: fmt.Sprintf("generated #%02d (seed %d)", index, seed), seed: seed, index: index}

	type room struct{ cpu, pods, gpus int }
	free := map[string]*room{}
	var names []string
	nNodes := 3 + g.IntN(4)
	for i := range nNodes {
		name := string(rune('a' + i))
		names = append(names, name)
		cpu := pick(g, 2, 4, 8)
		b := testutil.MakeNode(name).Capacity(strconv.Itoa(cpu), pick(g, "4Gi", "8Gi", "16Gi"))
		r := &room{cpu: cpu * 1000, pods: 110}
		// The first node always has room for the sync barrier's sentinels.
		if i > 0 && g.chance(0.15) {
			r.pods = 1 + g.IntN(3)
			b.Resource(corev1.ResourcePods, strconv.Itoa(r.pods))
		}
		if g.chance(0.85) {
			b.Label(zone, pick(g, genZones...))
		}
		if g.chance(0.6) {
			b.Label(rack, pick(g, genRacks...))
		}
		p := pick(g, genPools...)
		b.Label(pool, p)
		if p == "gpu" {
			r.gpus = 4
			b.GPU(4)
		}
		if g.chance(0.25) {
			b.Taint("dedicated", pick(g, "ml", "web"), pick(g, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule))
		}
		if g.chance(0.1) {
			b.Unschedulable()
		}
		if g.chance(0.05) {
			b.Unlabel(host)
		}
		sc.nodes = append(sc.nodes, b.Obj())
		free[name] = r
	}

	// Sometimes a second namespace, of a team, that some of the pods
	// already running are in (pod affinity terms may select it by label).
	var otherNS string
	if g.chance(0.3) {
		otherNS = "@team"
		sc.namespaces = map[string]map[string]string{otherNS: {"differential.troupe.dev/team": pick(g, genTeams...)}}
	}

	// Pods already running, only where they fit: a cluster a scheduler
	// could have made.
	for i := range g.IntN(8) {
		at := pick(g, names...)
		r := free[at]
		cpu := pick(g, 0, 0, 500, 1000)
		if r.pods < 1 || r.cpu < cpu || (at == "a" && r.pods < 3) {
			continue
		}
		r.pods--
		r.cpu -= cpu
		b := bg(fmt.Sprintf("bg%d", i), at).Label("app", pick(g, genApps...))
		if g.chance(0.4) {
			b.Label("tier", pick(g, "a", "b"))
		}
		if cpu > 0 {
			b.Request(corev1.ResourceCPU, fmt.Sprintf("%dm", cpu))
		}
		if r.gpus > 0 && g.chance(0.3) {
			r.gpus--
			b.Request(testutil.GPU, "1")
		}
		if g.chance(0.2) {
			b.PodAntiAffinity(testutil.PodTerm(pick(g, host, zone), app(pick(g, genApps...))).Obj())
		}
		if g.chance(0.1) {
			b.HostPort(8080, corev1.ProtocolTCP)
		}
		pod := b.Obj()
		if otherNS != "" && g.chance(0.3) {
			pod.Namespace = otherNS
		}
		sc.background = append(sc.background, pod)
	}

	myApp := pick(g, genApps...)
	p := subject().Label("app", myApp)
	if g.chance(0.4) {
		p.Label("tier", pick(g, "a", "b"))
	}
	if cpu := pick(g, 0, 0, 500, 1000, 2000); cpu > 0 {
		p.Request(corev1.ResourceCPU, fmt.Sprintf("%dm", cpu))
	}
	if g.chance(0.15) {
		p.Request(testutil.GPU, strconv.Itoa(1+g.IntN(2)))
	}
	if g.chance(0.2) {
		p.NodeSelector(pick(g, zone, pool), pick(g, append(genZones, genPools...)...))
	}
	if g.chance(0.25) {
		p.RequiredNodeAffinity(randomNodeTerm(g, names))
	}
	if g.chance(0.15) {
		p.PreferredNodeAffinity(int32(1+g.IntN(100)), randomNodeTerm(g, names))
	}
	if g.chance(0.35) {
		switch g.IntN(4) {
		case 0:
			p.Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
		case 1:
			p.Toleration(testutil.Tolerate("dedicated", "", ""))
		default:
			p.Toleration(testutil.Tolerate("dedicated", pick(g, "ml", "web"), pick(g, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, "")))
		}
	}
	if g.chance(0.1) {
		p.Toleration(testutil.Tolerate(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule))
	}
	if g.chance(0.3) {
		p.PodAffinity(randomPodTerm(g, myApp))
		if g.chance(0.2) {
			p.PodAffinity(randomPodTerm(g, myApp))
		}
	}
	if g.chance(0.3) {
		p.PodAntiAffinity(randomPodTerm(g, myApp))
	}
	if g.chance(0.15) {
		p.PreferredPodAffinity(int32(1+g.IntN(100)), randomPodTerm(g, myApp))
	}
	if g.chance(0.15) {
		p.PreferredPodAntiAffinity(int32(1+g.IntN(100)), randomPodTerm(g, myApp))
	}
	if g.chance(0.4) {
		// The API server refuses two constraints with the same key (and
		// whenUnsatisfiable).
		keys := []string{host, zone, zone, rack}
		first := pick(g, keys...)
		p.Spread(randomSpread(g, myApp, first))
		if second := pick(g, keys...); second != first && g.chance(0.4) {
			p.Spread(randomSpread(g, myApp, second))
		}
	}
	if g.chance(0.1) {
		p.HostPort(8080, corev1.ProtocolTCP)
	}
	sc.pod = p.Obj()
	return sc
}

func randomNodeTerm(g gen, names []string) corev1.NodeSelectorTerm {
	switch g.IntN(6) {
	case 0:
		return testutil.NodeTerm(testutil.NodeReq(zone, corev1.NodeSelectorOpIn, pick(g, genZones...), pick(g, genZones...)))
	case 1:
		return testutil.NodeTerm(testutil.NodeReq(zone, corev1.NodeSelectorOpNotIn, pick(g, genZones...)))
	case 2:
		return testutil.NodeTerm(testutil.NodeReq(rack, corev1.NodeSelectorOpExists))
	case 3:
		return testutil.NodeTerm(testutil.NodeReq(rack, corev1.NodeSelectorOpDoesNotExist))
	case 4:
		return testutil.NodeTerm(testutil.NodeReq(pool, corev1.NodeSelectorOpIn, pick(g, genPools...)))
	default:
		return testutil.NodeNameTerm(pick(g, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn), pick(g, names...))
	}
}

// randomPodTerm selects pods of an app (often the pod's own, so that the
// first-pod rule comes up) over hostname, zone or rack, sometimes across
// namespaces.
func randomPodTerm(g gen, own string) corev1.PodAffinityTerm {
	sel := app(own)
	if g.chance(0.5) {
		sel = app(pick(g, genApps...))
	}
	t := testutil.PodTerm(pick(g, host, zone, zone, rack), sel)
	if g.chance(0.15) {
		t.Expr("tier", pick(g, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn), pick(g, "a", "b"))
	}
	if g.chance(0.1) {
		t.NamespaceSelector(map[string]string{"differential.troupe.dev/team": pick(g, genTeams...)})
	}
	return t.Obj()
}

func randomSpread(g gen, own, key string) corev1.TopologySpreadConstraint {
	sel := app(own)
	if g.chance(0.2) {
		sel = app(pick(g, genApps...))
	}
	s := testutil.MakeSpread(key, int32(1+g.IntN(2)), sel)
	// minDomains is only allowed with DoNotSchedule.
	anyway := g.chance(0.15)
	if !anyway && g.chance(0.2) {
		s.MinDomains(int32(2 + g.IntN(3)))
	}
	if g.chance(0.25) {
		s.NodeAffinityPolicy(pick(g, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore))
	}
	if g.chance(0.25) {
		s.NodeTaintsPolicy(pick(g, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore))
	}
	if g.chance(0.15) {
		s.MatchLabelKeys("tier")
	}
	if anyway {
		s.ScheduleAnyway()
	}
	return s.Obj()
}

// The generator is deterministic in its seed, and varied across seeds and
// indexes; every case it makes can run (its background pods are on its
// nodes, and one node has room for the sync barrier).
func TestGenerate(t *testing.T) {
	for i := range 50 {
		a, b := generate(42, i), generate(42, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("case %d of seed 42 differs between two calls", i)
		}
		names := map[string]bool{}
		for _, n := range a.nodes {
			names[n.Name] = true
		}
		for _, p := range a.background {
			if !names[p.Spec.NodeName] {
				t.Errorf("case %d: background pod %s is on %q, not a node of the case", i, p.Name, p.Spec.NodeName)
			}
		}
		keys := map[string]bool{}
		for _, c := range a.pod.Spec.TopologySpreadConstraints {
			if keys[c.TopologyKey] {
				t.Errorf("case %d: two spread constraints over %s, which the API server refuses", i, c.TopologyKey)
			}
			keys[c.TopologyKey] = true
		}
		onA := 0
		for _, p := range a.background {
			if p.Spec.NodeName == "a" {
				onA++
			}
		}
		if free := a.nodes[0].Status.Allocatable.Pods().Value() - int64(onA); free < 2 {
			t.Errorf("case %d: node a has room for %d more pods, the sync barrier needs 2", i, free)
		}
	}
	if reflect.DeepEqual(generate(1, 0), generate(2, 0)) || reflect.DeepEqual(generate(1, 0), generate(1, 1)) {
		t.Error("different seeds or indexes give the same case")
	}
}
