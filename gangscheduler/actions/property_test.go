package actions_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// randomCluster builds a cluster from a seed: CPU and GPU nodes (some
// tainted or cordoned, some partly used by other schedulers' pods), and
// gangs of an optional pinned master plus workers with random requests,
// minimums, tolerations, host ports, priorities and queues, some already
// partly running. The initial state never over-commits a node, so the
// invariants are about what allocate adds.
func randomCluster(seed uint64, maxNodes, maxJobs int) cluster {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(n int) int { return r.IntN(n) }
	var c cluster
	type room struct{ cpu, gpu, pods int64 }
	free := map[string]*room{}

	nNodes := 1 + pick(max(maxNodes, 1))
	for i := range nNodes {
		n := st.MakeNode(fmt.Sprintf("node-%02d", i))
		cpu, gpu := int64(2+pick(15)), int64(0)
		if pick(2) == 0 {
			gpu = []int64{2, 4, 8}[pick(3)]
			n.Label("pool", "gpu")
		} else {
			n.Label("pool", "cpu")
		}
		pods := int64(2 + pick(10))
		n.Capacity(fmt.Sprint(cpu), "64Gi", gpu).Resource(corev1.ResourcePods, fmt.Sprint(pods))
		switch pick(10) {
		case 0:
			n.Taint("dedicated", "infra", corev1.TaintEffectNoSchedule)
		case 1:
			n.Taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoExecute)
		case 2:
			n.Unschedulable()
		}
		c.nodes = append(c.nodes, n.Obj())
		free[n.Name] = &room{cpu * 1000, gpu, pods}
	}
	// fit finds a node with room (in name order from a random start) and
	// takes it, for pods that are already placed.
	fit := func(milli, gpu int64) string {
		start := pick(len(c.nodes))
		for k := range c.nodes {
			n := c.nodes[(start+k)%len(c.nodes)]
			f := free[n.Name]
			if f.cpu >= milli && f.gpu >= gpu && f.pods >= 1 {
				f.cpu, f.gpu, f.pods = f.cpu-milli, f.gpu-gpu, f.pods-1
				return n.Name
			}
		}
		return ""
	}
	port9000 := map[string]bool{}
	for i := range pick(2 * nNodes) {
		milli, gpu := int64(100*(1+pick(20))), int64(pick(2))
		if node := fit(milli, gpu); node != "" {
			p := st.MakePod("other", fmt.Sprintf("other-%d", i)).Req(fmt.Sprintf("%dm", milli), "1Gi").Node(node).Phase(corev1.PodRunning)
			if gpu > 0 {
				p.GPU(gpu)
			}
			if pick(5) == 0 && !port9000[node] {
				p.HostPort("", "", 9000)
				port9000[node] = true
			}
			c.pods = append(c.pods, p.Obj())
		}
	}

	c.queues = []*api.QueueInfo{st.MakeQueue(api.DefaultQueue), st.MakeQueue("research"),
		{Name: "frozen", Weight: 1, State: api.QueueClosed}}
	t0 := time.Unix(1_700_000_000, 0)
	nJobs := 1 + pick(max(maxJobs, 1))
	for j := range nJobs {
		name := fmt.Sprintf("job-%02d", j)
		job := st.MakeJob("ns", name).Priority(int32(pick(3))).Created(t0.Add(time.Duration(pick(100)) * time.Second)).
			Queue([]api.QueueID{api.DefaultQueue, api.DefaultQueue, "research", "frozen"}[pick(4)])
		hasMaster := pick(2) == 0
		workers := 1 + pick(6)
		workerMilli := int64(100 * (1 + pick(40)))
		workerGPU := int64(0)
		if pick(2) == 0 {
			workerGPU = int64(1 + pick(4))
		}
		tolerate, hostPort := pick(4) == 0, pick(5) == 0
		add := func(p *st.PodWrapper, milli, gpu int64) {
			p.Job(name).Req(fmt.Sprintf("%dm", milli), "1Gi").Priority(int32(pick(2)))
			if gpu > 0 {
				p.GPU(gpu)
			}
			if tolerate {
				p.Toleration("dedicated", corev1.TolerationOpExists, "", "")
			}
			if hostPort {
				p.HostPort("", "", 2222)
			}
			// Some pods already run (their gang lost others), some finished.
			switch pick(8) {
			case 0:
				if hostPort {
					break // keep host ports to placements allocate checks
				}
				if node := fit(milli, gpu); node != "" {
					p.Node(node).Phase(corev1.PodRunning)
				}
			case 1:
				p.Node(c.nodes[0].Name).Phase(corev1.PodFailed)
			}
			c.pods = append(c.pods, p.Obj())
		}
		total := workers
		if hasMaster {
			total++
			m := st.MakePod("ns", name+"-master-0").Role("master")
			if pick(2) == 0 {
				m.NodeSelector("pool", "cpu")
			}
			add(m, int64(100*(1+pick(30))), 0)
			if pick(2) == 0 {
				job.MinTaskMember("master", 1)
			}
		}
		for w := range workers {
			add(st.MakePod("ns", fmt.Sprintf("%s-worker-%d", name, w)).Role("worker"), workerMilli, workerGPU)
		}
		if pick(3) == 0 {
			job.MinTaskMember("worker", int32(1+pick(workers)))
		}
		job.MinMember(int32(1 + pick(total+1))) // sometimes more than the pods: never valid
		c.jobs = append(c.jobs, job.Obj())
	}
	return c
}

// checkSeed schedules a random cluster and checks the invariants, and that a
// second run decides exactly the same.
func checkSeed(t *testing.T, seed uint64, maxNodes, maxJobs int) {
	c := randomCluster(seed, maxNodes, maxJobs)
	ssn := schedule(t, c)
	checkInvariants(t, c, ssn.Bindings())
	again := schedule(t, c).Bindings()
	first := ssn.Bindings()
	if len(again) != len(first) {
		t.Fatalf("seed %d: %d then %d decisions", seed, len(first), len(again))
	}
	for i := range first {
		if first[i].Task.Key() != again[i].Task.Key() || first[i].Node != again[i].Node {
			t.Fatalf("seed %d: decision %d differs: %s@%s vs %s@%s", seed, i,
				first[i].Task.Key(), first[i].Node, again[i].Task.Key(), again[i].Node)
		}
	}
}

// TestAllocateRandomized runs the invariants over many random clusters. It
// also checks that the generator exercises both outcomes, so a scheduler
// that places nothing (or everything) could not pass unnoticed.
func TestAllocateRandomized(t *testing.T) {
	var placedGangs, refusedGangs int
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkSeed(t, seed, 12, 10) })
		c := randomCluster(seed, 12, 10)
		got := placed(schedule(t, c))
		for _, j := range c.jobs {
			if len(got[j.UID]) > 0 {
				placedGangs++
			} else {
				refusedGangs++
			}
		}
	}
	if placedGangs < 100 || refusedGangs < 100 {
		t.Errorf("generator too one-sided: %d gangs placed, %d not", placedGangs, refusedGangs)
	}
}

// FuzzAllocate: go test -fuzz=FuzzAllocate ./gangscheduler/actions/
// The seed corpus runs with every go test.
func FuzzAllocate(f *testing.F) {
	for _, s := range []struct {
		seed        uint64
		nodes, jobs uint8
	}{{1, 1, 2}, {2, 3, 5}, {3, 8, 8}, {4, 16, 16}, {5, 2, 12}, {6, 12, 3}} {
		f.Add(s.seed, s.nodes, s.jobs)
	}
	f.Fuzz(func(t *testing.T, seed uint64, nodes, jobs uint8) {
		checkSeed(t, seed, int(nodes%24), int(jobs%24))
	})
}
