package localcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// PoolLabel names a node's pool, as managed node pools label them:
	// PoolCPU or PoolGPU.
	PoolLabel = "node-pool"
	PoolCPU   = "cpu"
	PoolGPU   = "gpu"
	// GPUPresentLabel is what NVIDIA's GPU feature discovery sets.
	GPUPresentLabel = "nvidia.com/gpu.present"
	GPUResource     = corev1.ResourceName("nvidia.com/gpu")
	// KwokAnnotation marks the nodes kwok manages (KwokArgs runs it with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake).
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokSelector   = KwokAnnotation + "=fake"
)

// The GPU nodes' network tree, as a cluster's topology labels would
// describe it: racks of NodesPerRack nodes, blocks of RacksPerBlock racks
// (the Topology of examples/pytorchjob-topology.yaml names these labels).
const (
	BlockLabel    = "topology.example.com/block"
	RackLabel     = "topology.example.com/rack"
	NodesPerRack  = 2
	RacksPerBlock = 2
)

// GPUTaint keeps pods that do not tolerate it off the GPU nodes, as GPU
// node pools are usually tainted.
var GPUTaint = corev1.Taint{Key: string(GPUResource), Value: "present", Effect: corev1.TaintEffectNoSchedule}

// Nodes returns the simulated nodes cpu-1.. and gpu-1..: CPUNode and
// GPUNode shapes, the GPU nodes in racks and blocks in order (gpu-1 and
// gpu-2 in rack-1 of block-1, gpu-3 and gpu-4 in rack-2 of block-1, ...).
func Nodes(cpuNodes, gpuNodes int) []*corev1.Node {
	var nodes []*corev1.Node
	for i := range cpuNodes {
		nodes = append(nodes, CPUNode(fmt.Sprintf("cpu-%d", i+1)))
	}
	for i := range gpuNodes {
		n := GPUNode(fmt.Sprintf("gpu-%d", i+1))
		rack := i / NodesPerRack
		n.Labels[RackLabel] = fmt.Sprintf("rack-%d", rack+1)
		n.Labels[BlockLabel] = fmt.Sprintf("block-%d", rack/RacksPerBlock+1)
		nodes = append(nodes, n)
	}
	return nodes
}

// CPUNode is a CPU-only node (16 CPU, 64Gi) labelled node-pool=cpu.
func CPUNode(name string) *corev1.Node { return makeNode(name, PoolCPU, "16", "64Gi", 0) }

// GPUNode is a GPU node (32 CPU, 256Gi, 8 GPUs) labelled node-pool=gpu and
// nvidia.com/gpu.present=true and tainted nvidia.com/gpu=present:NoSchedule.
func GPUNode(name string) *corev1.Node {
	n := makeNode(name, PoolGPU, "32", "256Gi", 8)
	n.Labels[GPUPresentLabel] = "true"
	n.Spec.Taints = []corev1.Taint{GPUTaint}
	return n
}

func makeNode(name, pool, cpu, memory string, gpus int64) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(cpu),
		corev1.ResourceMemory:           resource.MustParse(memory),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	if gpus > 0 {
		res[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
				PoolLabel:              pool,
				"type":                 "kwok",
			},
			Annotations: map[string]string{KwokAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
}

// CreateNodes registers the nodes as kubelets would, with their capacity
// in the status; kwok then reports them Ready and keeps them so.
func CreateNodes(ctx context.Context, c client.Client, nodes []*corev1.Node) error {
	for _, n := range nodes {
		want := n.Status
		if err := c.Create(ctx, n); err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		// Admission may drop the status of a new object; kwok keeps
		// whatever capacity it finds, so make sure it is there.
		if len(n.Status.Allocatable) == 0 {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
					return err
				}
				n.Status.Capacity, n.Status.Allocatable = want.Capacity, want.Allocatable
				return c.Status().Update(ctx, n)
			})
			if err != nil {
				return fmt.Errorf("set the capacity of node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// WaitNodesReady waits until kwok has made every node Ready and the
// node lifecycle controller has removed their not-ready taints. After
// untaintAfter (at once when it is 0, i.e. without a controller manager)
// it removes the taints itself and says so through note.
func WaitNodesReady(ctx context.Context, c client.Client, names []string, untaintAfter, timeout time.Duration, note func(string)) error {
	start := time.Now()
	untainted := false
	for {
		var notReady, tainted []string
		for _, name := range names {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			if !NodeReady(n) {
				notReady = append(notReady, name)
			} else if HasNotReadyTaint(n) {
				tainted = append(tainted, name)
			}
		}
		if len(notReady) == 0 && len(tainted) == 0 {
			return nil
		}
		if len(notReady) == 0 && time.Since(start) >= untaintAfter && !untainted {
			if untaintAfter > 0 {
				note(fmt.Sprintf("the not-ready taints are still on %s after %v; removing them", strings.Join(tainted, ", "), untaintAfter))
			}
			for _, name := range tainted {
				if err := removeNotReadyTaints(ctx, c, name); err != nil {
					return err
				}
			}
			untainted = true
			continue
		}
		if time.Since(start) > timeout {
			if len(notReady) > 0 {
				return fmt.Errorf("nodes not Ready after %v: %s (is kwok running? see logs/kwok.log)", timeout, strings.Join(notReady, ", "))
			}
			return fmt.Errorf("nodes still tainted %s after %v: %s", corev1.TaintNodeNotReady, timeout, strings.Join(tainted, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// HasNotReadyTaint reports whether the node still has the taint
// admission puts on new nodes.
func HasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return true
		}
	}
	return false
}

func removeNotReadyTaints(ctx context.Context, c client.Client, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				keep = append(keep, t)
			}
		}
		n.Spec.Taints = keep
		return c.Update(ctx, n)
	})
}
