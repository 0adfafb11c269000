package actions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/reservation"
)

// A large gang that has waited holds the nodes it lacks from the gangs
// after it, which are placed elsewhere or wait; without the plugin, or
// before the gang has waited long enough, they take those nodes.
func TestAllocateHolds(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	rackKey := "example.com/rack"
	racks := &api.TopologyInfo{Name: "racks", Levels: []api.TopologyLevel{{Name: "rack", NodeLabel: rackKey}}}
	rackNode := func(name, rack string) *corev1.Node {
		return st.MakeNode(name).Capacity("64", "256Gi", 8).Label(rackKey, rack).Obj()
	}
	busy := func(node string, gpus int64) *corev1.Pod {
		return st.MakePod("other", "used-"+node).GPU(gpus).Node(node).Phase(corev1.PodRunning).Obj()
	}
	packed := &api.TopologyPolicy{Topology: "racks", Rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Required: true}}}
	// No room places a gang whose policy its topology cannot express.
	noLevel := &api.TopologyPolicy{Topology: "racks", Rules: []api.LevelRule{{Level: "row", Kind: api.RulePack, Required: true}}}
	noTopology := &api.TopologyPolicy{Topology: "rows", Rules: []api.LevelRule{{Level: "row", Kind: api.RulePack}}}
	// job is a gang of its pods' count, created in order, waiting since
	// waited before now; topo its policy, nil for none.
	job := func(name string, n int, created int, waited time.Duration, topo *api.TopologyPolicy) *api.JobInfo {
		j := st.MakeJob("ns", name).MinMember(int32(n)).Created(now.Add(-time.Hour + time.Duration(created)*time.Second)).
			WaitingSince(now.Add(-waited)).Obj()
		j.Topology = topo
		return j
	}
	// bigWithPolicy is rack ra of a1 (half busy) and a2, a gang big of two
	// 8-GPU workers with policy topo that has waited, and a younger gang
	// small of one 4-GPU pod: big would hold both nodes, if it held.
	bigWithPolicy := func(topo *api.TopologyPolicy) cluster {
		return cluster{now: now, topologies: []*api.TopologyInfo{racks},
			nodes: []*corev1.Node{rackNode("a1", "ra"), rackNode("a2", "ra")},
			pods:  slices.Concat([]*corev1.Pod{busy("a1", 4)}, gpuGang("big", 2, 8), gpuGang("small", 1, 4)),
			jobs:  []*api.JobInfo{job("big", 2, 0, time.Minute, topo), job("small", 1, 1, 0, nil)}}
	}
	withReservation := func(after time.Duration, gangs int) []framework.Plugin {
		return append(plugins.Default(), reservation.New(reservation.Config{After: &metav1.Duration{Duration: after}, Gangs: ptr.To(gangs)}))
	}
	n1, _ := gpuNode("n1", 4, 0)
	n2, _ := gpuNode("n2", 4, 0)
	n3, _ := gpuNode("n3", 4, 0)
	n4, _ := gpuNode("n4", 4, 0)
	// bigAndSmall is n1 (2 of its 4 GPUs taken) and n2, a gang big of
	// workers with 4 GPUs each that has waited waited, and a younger
	// gang small of one pod with 2 GPUs (small is the pod, if given).
	bigAndSmall := func(workers int, waited time.Duration, small ...*corev1.Pod) cluster {
		if small == nil {
			small = gpuGang("small", 1, 2)
		}
		return cluster{nodes: []*corev1.Node{n1, n2}, now: now,
			pods: slices.Concat([]*corev1.Pod{busy("n1", 2)}, gpuGang("big", workers, 4), small),
			jobs: []*api.JobInfo{job("big", workers, 0, waited, nil), job("small", 1, 1, 0, nil)}}
	}

	tests := []struct {
		name    string
		c       cluster
		plugins []framework.Plugin
		// wantPlaced are the gangs placed; wantHolds the nodes each holds.
		wantPlaced []api.JobID
		wantHolds  map[api.JobID][]string
		// wantHeldMessage: the small gang's message names the hold.
		wantHeldMessage bool
	}{{
		name:       "without the plugin the small gang takes the room the large one waits for",
		c:          bigAndSmall(2, time.Minute),
		plugins:    plugins.Default(),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{},
	}, {
		name:            "the large gang that waited holds both nodes: the small one waits, told why",
		c:               bigAndSmall(2, time.Minute),
		plugins:         withReservation(5*time.Second, 1),
		wantHolds:       map[api.JobID][]string{"ns/big": {"n1", "n2"}},
		wantHeldMessage: true,
	}, {
		name:       "not waited long enough: no hold",
		c:          bigAndSmall(2, 4*time.Second),
		plugins:    withReservation(5*time.Second, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{},
	}, {
		name:       "a gang larger than the nodes could ever hold holds nothing: the small one is placed",
		c:          bigAndSmall(3, time.Minute),
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{},
	}, {
		name:       "a pod that requests nothing still runs on a held node",
		c:          bigAndSmall(2, time.Minute, makeGang("small", 1, func(*st.PodWrapper) {})...),
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{"ns/big": {"n1", "n2"}},
	}, {
		name: "one gang holds at a time: the second waiting gang leaves n3 to the small one",
		c: cluster{nodes: []*corev1.Node{n1, n2, n3, n4}, now: now,
			pods: slices.Concat([]*corev1.Pod{busy("n1", 2), busy("n3", 2)}, gpuGang("big1", 3, 4), gpuGang("big2", 1, 4), gpuGang("small", 1, 2)),
			jobs: []*api.JobInfo{job("big1", 3, 0, time.Minute, nil), job("big2", 1, 1, time.Minute, nil), job("small", 1, 2, 0, nil)}},
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{"ns/big1": {"n1", "n2", "n4"}},
	}, {
		name: "two may hold: the second holds n3, and the small one waits",
		c: cluster{nodes: []*corev1.Node{n1, n2, n3, n4}, now: now,
			pods: slices.Concat([]*corev1.Pod{busy("n1", 2), busy("n3", 2)}, gpuGang("big1", 3, 4), gpuGang("big2", 1, 4), gpuGang("small", 1, 2)),
			jobs: []*api.JobInfo{job("big1", 3, 0, time.Minute, nil), job("big2", 1, 1, time.Minute, nil), job("small", 1, 2, 0, nil)}},
		plugins:         withReservation(0, 2),
		wantHolds:       map[api.JobID][]string{"ns/big1": {"n1", "n2", "n4"}, "ns/big2": {"n3"}},
		wantHeldMessage: true,
	}, {
		name: "rack packed: the large gang holds the rack closest to fitting it, the small one goes to the other",
		c: cluster{now: now, topologies: []*api.TopologyInfo{racks},
			nodes: []*corev1.Node{rackNode("a1", "ra"), rackNode("a2", "ra"), rackNode("b1", "rb"), rackNode("b2", "rb")},
			pods:  slices.Concat([]*corev1.Pod{busy("a1", 8), busy("b1", 8), busy("b2", 4)}, gpuGang("big", 2, 8), gpuGang("small", 1, 4)),
			jobs:  []*api.JobInfo{job("big", 2, 0, time.Minute, packed), job("small", 1, 1, 0, packed)}},
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{"ns/big": {"a1", "a2"}},
	}, {
		name:       "a gang whose policy names a level its topology lacks holds nothing: no room would place it",
		c:          bigWithPolicy(noLevel),
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{},
	}, {
		name:       "a gang whose topology does not exist holds nothing",
		c:          bigWithPolicy(noTopology),
		plugins:    withReservation(0, 1),
		wantPlaced: []api.JobID{"ns/small"},
		wantHolds:  map[api.JobID][]string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ssn := run(t, tt.c, tt.plugins, actions.NewAllocate())
			checkInvariants(t, tt.c, ssn.Bindings())
			got := placed(ssn)
			for _, id := range tt.wantPlaced {
				if got[id] == nil {
					t.Errorf("%s not placed; placed %v; unschedulable %v", id, got, ssn.Unschedulable())
				}
			}
			if len(got) != len(tt.wantPlaced) {
				t.Errorf("placed %v, want only %v", got, tt.wantPlaced)
			}
			if holds := ssn.Holds(); fmt.Sprint(holds) != fmt.Sprint(tt.wantHolds) {
				t.Errorf("holds = %v, want %v", holds, tt.wantHolds)
			}
			if msg := ssn.Unschedulable()["ns/small"].Message; strings.Contains(msg, string(framework.ReasonHeld)) != tt.wantHeldMessage {
				t.Errorf("small's message %q, want it to name the hold: %v", msg, tt.wantHeldMessage)
			}
		})
	}
}

// Over random clusters, with every gang allowed to hold at once: no gang
// commits a task that requests anything onto a node another gang holds
// at that moment, no gang is partial, and holds happen.
func TestAllocateHoldsRandomized(t *testing.T) {
	holding := append(plugins.Default(), reservation.New(reservation.Config{After: &metav1.Duration{}, Gangs: ptr.To(2)}))
	var holds, placements int
	for seed := range uint64(300) {
		c := randomCluster(seed, 12, 10)
		jobs := make([]*api.JobInfo, len(c.jobs))
		for i, j := range c.jobs {
			cp := *j
			cp.Tasks = nil
			jobs[i] = &cp
		}
		ssn := framework.OpenSession(st.MustSnapshot(c.nodes, c.pods, jobs, c.queues...), holding...)
		ssn.OnCommit(func(ds []framework.Decision) {
			held := ssn.Holds()
			for _, d := range ds {
				placements++
				requests := d.Task.Resreq
				requests.Pods = 0
				if requests.IsZero() {
					continue
				}
				for holder, nodes := range held {
					if holder != d.Task.Job && slices.Contains(nodes, d.Node) {
						t.Errorf("seed %d: %s placed on %s, which %s holds", seed, d.Task.Key(), d.Node, holder)
					}
				}
			}
		})
		ssn.Run(actions.NewAllocate())
		checkInvariants(t, c, ssn.Bindings())
		holds += len(ssn.Holds())
	}
	if holds < 50 || placements < 100 {
		t.Errorf("generator too one-sided: %d holds, %d placements", holds, placements)
	}
}

// Enqueue admits a gang that does not fit the nodes as they are when it
// may hold nodes, so that allocate holds them; without the plugin it
// stays Pending and the younger gang takes the room.
func TestEnqueueAdmitsAGangToHold(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	n1, used := gpuNode("n1", 4, 2)
	n2, _ := gpuNode("n2", 4, 0)
	c := cluster{nodes: []*corev1.Node{n1, n2}, now: now,
		pods: slices.Concat([]*corev1.Pod{used}, gpuGang("big", 2, 4), gpuGang("small", 1, 2)),
		jobs: []*api.JobInfo{
			st.MakeJob("ns", "big").MinMember(2).Created(now.Add(-time.Hour)).WaitingSince(now.Add(-time.Minute)).Obj(),
			st.MakeJob("ns", "small").Created(now.Add(-time.Second)).Obj(),
		}}
	tooBig := c
	tooBig.pods = slices.Concat([]*corev1.Pod{used}, gpuGang("big", 3, 4), gpuGang("small", 1, 2))
	tooBig.jobs = []*api.JobInfo{
		st.MakeJob("ns", "big").MinMember(3).Created(now.Add(-time.Hour)).WaitingSince(now.Add(-time.Minute)).Obj(),
		st.MakeJob("ns", "small").Created(now.Add(-time.Second)).Obj(),
	}
	tests := []struct {
		name         string
		c            cluster
		plugins      []framework.Plugin
		wantHolds    string
		wantPlaced   []api.JobID
		wantAdmitted []api.JobID
	}{{
		name:         "without the plugin: big is not admitted, small is placed",
		c:            c,
		plugins:      plugins.Default(),
		wantHolds:    "map[]",
		wantPlaced:   []api.JobID{"ns/small"},
		wantAdmitted: []api.JobID{"ns/small"},
	}, {
		name:         "with it: big is admitted and holds both nodes, small is admitted and waits",
		c:            c,
		plugins:      append(plugins.Default(), reservation.New(reservation.Config{})),
		wantHolds:    "map[ns/big:[n1 n2]]",
		wantAdmitted: []api.JobID{"ns/big", "ns/small"},
	}, {
		name:         "a gang the nodes could never hold is not admitted: it takes none of its queue's budget",
		c:            tooBig,
		plugins:      append(plugins.Default(), reservation.New(reservation.Config{})),
		wantHolds:    "map[]",
		wantPlaced:   []api.JobID{"ns/small"},
		wantAdmitted: []api.JobID{"ns/small"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ssn := run(t, tt.c, tt.plugins, actions.NewEnqueue(), actions.NewAllocate())
			checkInvariants(t, tt.c, ssn.Bindings())
			if got := fmt.Sprint(ssn.Holds()); got != tt.wantHolds {
				t.Errorf("holds = %s, want %s", got, tt.wantHolds)
			}
			got := placed(ssn)
			if len(got) != len(tt.wantPlaced) {
				t.Errorf("placed %v, want %v", got, tt.wantPlaced)
			}
			for _, id := range tt.wantPlaced {
				if got[id] == nil {
					t.Errorf("%s not placed: %v", id, ssn.Unschedulable()[id])
				}
			}
			if admitted := ssn.Admitted(); !slices.Equal(sortedIDs(admitted), tt.wantAdmitted) {
				t.Errorf("admitted %v, want %v", admitted, tt.wantAdmitted)
			}
		})
	}
}

func sortedIDs(ids []api.JobID) []api.JobID { return slices.Sorted(slices.Values(ids)) }
