package api_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// Reserve takes what is asked, as far as it is idle, of every resource,
// pod slots too; reservations and a hold add up; Unhold gives back all of
// it.
func TestNodeReserve(t *testing.T) {
	ask := func(cpu string, gpus int64) *api.Resource {
		q := resource.MustParse(cpu)
		return &api.Resource{MilliCPU: q.MilliValue(), Pods: 1, Scalars: map[corev1.ResourceName]int64{st.GPU: gpus}}
	}
	tests := []struct {
		name string
		// used is what a running pod takes of a node of 8 CPUs and 4 GPUs.
		usedCPU  string
		usedGPUs int64
		reserve  []*api.Resource
		hold     bool
		// wantCPU and wantGPUs are what stays idle.
		wantCPU  int64
		wantGPUs int64
	}{{
		name: "what is asked, when it is idle", usedCPU: "2", usedGPUs: 1,
		reserve: []*api.Resource{ask("2", 2)}, wantCPU: 4000, wantGPUs: 1,
	}, {
		name: "no more than is idle", usedCPU: "2", usedGPUs: 3,
		reserve: []*api.Resource{ask("1", 2)}, wantCPU: 5000, wantGPUs: 0,
	}, {
		name: "none of what an over-committed node lacks", usedCPU: "1", usedGPUs: 5,
		reserve: []*api.Resource{ask("1", 2)}, wantCPU: 6000, wantGPUs: -1,
	}, {
		name: "reservations add up", usedCPU: "2", usedGPUs: 0,
		reserve: []*api.Resource{ask("1", 1), ask("2", 2)}, wantCPU: 3000, wantGPUs: 1,
	}, {
		name: "a hold after a reservation takes the rest", usedCPU: "2", usedGPUs: 1,
		reserve: []*api.Resource{ask("1", 1)}, hold: true, wantCPU: 0, wantGPUs: 0,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := api.NewNodeInfo(st.MakeNode("n").Capacity("8", "8Gi", 4).Obj())
			pod := st.MakePod("ns", "p").Req(tt.usedCPU, "1Gi").GPU(tt.usedGPUs).Node("n").Obj()
			if err := n.AddTask(api.NewTaskInfo("", pod)); err != nil {
				t.Fatal(err)
			}
			before := n.Idle.Clone()
			for _, r := range tt.reserve {
				n.Reserve(r, nil)
			}
			if tt.hold {
				n.Hold("ns/big")
			}
			if n.Idle.MilliCPU != tt.wantCPU || n.Idle.Scalar(st.GPU) != tt.wantGPUs {
				t.Errorf("idle %v, want %dm CPU and %d GPUs", n.Idle, tt.wantCPU, tt.wantGPUs)
			}
			if want := before.Pods - int64(len(tt.reserve)); n.Idle.Pods != want {
				t.Errorf("idle %v: %d pod slots, want %d (one per reservation)", n.Idle, n.Idle.Pods, want)
			}
			if !tt.hold && n.Idle.Memory != before.Memory {
				t.Errorf("idle %v: memory (not asked) changed from %v", n.Idle, before)
			}
			if want := tt.hold; (n.HeldFor != "") != want {
				t.Errorf("held for %q; a reservation holds the node for no one", n.HeldFor)
			}
			if !n.Reserved() {
				t.Error("Reserved() is false after a reservation")
			}
			n.Unhold()
			if !n.Idle.Equal(&before) || n.Reserved() || n.HeldFor != "" {
				t.Errorf("after Unhold: idle %v, held for %q; want %v as before, nothing held", n.Idle, n.HeldFor, before)
			}
		})
	}
}

// A reservation takes the member's host ports too, even when it takes no
// resource, and Unhold gives them back.
func TestNodeReservePorts(t *testing.T) {
	n := api.NewNodeInfo(st.MakeNode("n").Capacity("8", "8Gi", 0).Obj())
	port := []corev1.ContainerPort{{ContainerPort: 2222, HostPort: 2222, Protocol: corev1.ProtocolTCP}}
	n.Reserve(&api.Resource{}, port)
	if !n.Reserved() || !n.PortsConflict(port) {
		t.Fatalf("after a reservation of host port 2222: Reserved() = %v, the port conflicts = %v; want both", n.Reserved(), n.PortsConflict(port))
	}
	other := []corev1.ContainerPort{{ContainerPort: 2223, HostPort: 2223, Protocol: corev1.ProtocolTCP}}
	if n.PortsConflict(other) {
		t.Error("a port not reserved conflicts")
	}
	n.Unhold()
	if n.Reserved() || n.PortsConflict(port) {
		t.Errorf("after Unhold: Reserved() = %v, the port conflicts = %v; want neither", n.Reserved(), n.PortsConflict(port))
	}
}

// A stand-in nominated to a node is among its occupants, after its tasks,
// and not among its tasks; Unhold forgets it.
func TestNodeAddStandIn(t *testing.T) {
	n := api.NewNodeInfo(st.MakeNode("n").Capacity("8", "8Gi", 0).Obj())
	running := api.NewTaskInfo("", st.MakePod("ns", "running").Req("1", "1Gi").Node("n").Phase(corev1.PodRunning).Obj())
	if err := n.AddTask(running); err != nil {
		t.Fatal(err)
	}
	waiting := api.NewTaskInfo("ns/j", st.MakePod("ns", "waiting").Job("j").Req("2", "1Gi").Obj())
	standIn := waiting.StandInOn(n.Name, api.Resource{MilliCPU: 1000})
	if standIn.UID == waiting.UID || standIn.Pod != waiting.Pod || standIn.NodeName != "n" || standIn.Status != api.Allocated || !standIn.StandIn || waiting.StandIn ||
		standIn.Resreq.MilliCPU != 1000 || waiting.NodeName != "" || waiting.Status != api.Pending {
		t.Fatalf("stand-in %+v of %+v: want a copy on n with a UID of its own, asking 1000m, the task unchanged", standIn, waiting)
	}
	idle := n.Idle
	n.AddStandIn(standIn)
	if got := slices.Collect(n.Occupants()); !slices.Equal(got, []*api.TaskInfo{running, standIn}) || len(n.Tasks) != 1 || !n.Reserved() || !n.Idle.Equal(&idle) {
		t.Errorf("after AddStandIn: occupants %v, %d tasks, reserved %t, idle %v; want the running task and the stand-in, 1 task, reserved, idle unchanged",
			got, len(n.Tasks), n.Reserved(), n.Idle)
	}
	n.Unhold()
	if got := slices.Collect(n.Occupants()); !slices.Equal(got, []*api.TaskInfo{running}) || n.Reserved() {
		t.Errorf("after Unhold: occupants %v, reserved %t; want the running task alone, nothing reserved", got, n.Reserved())
	}
}
