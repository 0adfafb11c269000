package fit_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/internal/fit"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const ns = "team"

func readyNode(b *testutil.NodeBuilder) *corev1.Node {
	n := b.Obj()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// cluster is a CPU node and gpuNodes nodes of 4 GPUs each.
func cluster(gpuNodes int) cache.Objects {
	nodes := []*corev1.Node{readyNode(testutil.MakeNode("cpu").Capacity("16", "64Gi").Label("pool", "cpu"))}
	for i := range gpuNodes {
		nodes = append(nodes, readyNode(testutil.MakeNode(fmt.Sprintf("gpu-%d", i)).Capacity("32", "128Gi").GPU(4).Label("pool", "gpu")))
	}
	return cache.Objects{
		Nodes:      nodes,
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
	}
}

// job is a defaulted PyTorchJob: a CPU master and workers of gpus GPUs.
func job(name string, workers int32, gpus string, mutate ...func(*kubeflowv1.PyTorchJob)) *kubeflowv1.PyTorchJob {
	j := testutil.MakePyTorchJob(name, ns).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, testutil.MakeReplica(1, "pytorch").Request(corev1.ResourceCPU, "1").NodeSelector("pool", "cpu").Obj()).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, testutil.MakeReplica(workers, "pytorch").Request(corev1.ResourceCPU, "1").Limit(testutil.GPU, gpus).NodeSelector("pool", "gpu").Obj()).
		Obj()
	for _, m := range mutate {
		m(j)
	}
	j.Default()
	return j
}

// running is a gang of the cluster: its PodGroup, and one running pod of
// 4 GPUs per node, members of role worker, as the API server stores them
// (GPUs requested).
func running(c *cache.Objects, name string, class string, minMember int32, nodes ...string) {
	pg := testutil.MakePodGroup(name, ns).MinMember(minMember).PriorityClass(class).Obj()
	pg.UID = types.UID("uid-" + pg.Name)
	pg.Status.Phase = schedulingv1alpha1.PodGroupRunning
	c.PodGroups = append(c.PodGroups, pg)
	for i, n := range nodes {
		p := testutil.MakeGangPod(fmt.Sprintf("%s-%d", name, i), ns).Group(name).Role("worker").
			Request(corev1.ResourceCPU, "1").Request(testutil.GPU, "4").Obj()
		p.UID = types.UID("uid-" + p.Name)
		p.Labels = map[string]string{kubeflowv1.ReplicaIndexLabel: fmt.Sprint(i)}
		p.Spec.NodeName = n
		p.Status.Phase = corev1.PodRunning
		c.Pods = append(c.Pods, p)
	}
}

func evaluate(t *testing.T, c cache.Objects, j *kubeflowv1.PyTorchJob, configYAML string) fit.Verdict {
	t.Helper()
	cfg := config.Default()
	if configYAML != "" {
		var err error
		if cfg, err = config.Parse([]byte(configYAML)); err != nil {
			t.Fatal(err)
		}
	}
	acts, plugs, err := cfg.Build()
	if err != nil {
		t.Fatal(err)
	}
	v, err := fit.Evaluate(fit.Request{
		Framework: pytorch.Framework{}, Job: j, Cluster: c, Actions: acts, Plugins: plugs,
		SchedulerName: troupe.SchedulerName, Now: time.Unix(1_800_000_000, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func nodesOf(ps []fit.Placement) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[p.Pod] = p.Node
	}
	return out
}

func TestEvaluate(t *testing.T) {
	const preempt = "actions: [enqueue, preempt, allocate, backfill]\n"
	classes := []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10},
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
	}
	urgent := func(j *kubeflowv1.PyTorchJob) {
		j.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{PriorityClass: "high"}
	}
	lowGang := func(minMember int32) cache.Objects {
		c := cluster(2)
		c.PriorityClasses = classes
		running(&c, "low", "low", minMember, "gpu-0", "gpu-1")
		return c
	}
	tests := []struct {
		name    string
		cluster cache.Objects
		job     *kubeflowv1.PyTorchJob
		config  string

		wantPlaced  map[string]string // pod -> node ("" for any GPU node)
		wantWaiting []string
		wantMessage string
		// wantVictims are "gang: pods" lines; wantWhole their Whole.
		wantVictims   []string
		wantWhole     []bool
		wantPreemptOn bool
	}{{
		name:    "room for the gang: the master on the CPU node, the workers on GPU nodes",
		cluster: cluster(2),
		job:     job("fits", 2, "4"),
		wantPlaced: map[string]string{
			"fits-master-0": "cpu", "fits-worker-0": "", "fits-worker-1": "",
		},
	}, {
		name:        "no room: nothing placed, and the scheduler's reason, per role",
		cluster:     cluster(1),
		job:         job("big", 2, "4"),
		wantWaiting: []string{"big-master-0", "big-worker-0", "big-worker-1"},
		wantMessage: "nvidia.com/gpu",
	}, {
		name:    "elastic: the minimum placed, the member above it waits",
		cluster: cluster(1),
		job: job("elastic", 2, "4", func(j *kubeflowv1.PyTorchJob) {
			j.Spec.ElasticPolicy = &kubeflowv1.ElasticPolicy{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](2)}
		}),
		wantPlaced:  map[string]string{"elastic-master-0": "cpu", "elastic-worker-0": "gpu-0"},
		wantWaiting: []string{"elastic-worker-1"},
	}, {
		name:          "preempt configured: the lower-priority gang is taken, the job waits for its room",
		cluster:       lowGang(2),
		job:           job("urgent", 1, "4", urgent),
		config:        preempt,
		wantWaiting:   []string{"urgent-master-0", "urgent-worker-0"},
		wantVictims:   []string{"team/low: low-0 low-1"},
		wantWhole:     []bool{true},
		wantPreemptOn: true,
	}, {
		name:        "preempt not configured: what it would take with preempt on",
		cluster:     lowGang(2),
		job:         job("urgent", 1, "4", urgent),
		wantWaiting: []string{"urgent-master-0", "urgent-worker-0"},
		wantVictims: []string{"team/low: low-0 low-1"},
		wantWhole:   []bool{true},
	}, {
		name:          "a gang above its minimum loses a member, not the gang",
		cluster:       lowGang(1),
		job:           job("urgent", 1, "4", urgent),
		config:        preempt,
		wantWaiting:   []string{"urgent-master-0", "urgent-worker-0"},
		wantVictims:   []string{"team/low: low-1"},
		wantWhole:     []bool{false},
		wantPreemptOn: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := evaluate(t, tt.cluster, tt.job, tt.config)
			if v.Placed != (len(tt.wantPlaced) > 0) {
				t.Errorf("placed = %v, want %v (%+v)", v.Placed, len(tt.wantPlaced) > 0, v)
			}
			got := nodesOf(v.Placements)
			if len(got) != len(tt.wantPlaced) {
				t.Errorf("placements %v, want %v", got, tt.wantPlaced)
			}
			for pod, node := range tt.wantPlaced {
				switch {
				case node == "" && !strings.HasPrefix(got[pod], "gpu-"):
					t.Errorf("%s on %q, want a GPU node", pod, got[pod])
				case node != "" && got[pod] != node:
					t.Errorf("%s on %q, want %s", pod, got[pod], node)
				}
			}
			var waiting []string
			for _, w := range v.Waiting {
				waiting = append(waiting, w.Pod)
			}
			if !slices.Equal(waiting, tt.wantWaiting) {
				t.Errorf("waiting %v, want %v", waiting, tt.wantWaiting)
			}
			if !strings.Contains(v.Message, tt.wantMessage) {
				t.Errorf("message %q, want it to contain %q", v.Message, tt.wantMessage)
			}
			var victims []string
			var whole []bool
			for _, vic := range v.Victims {
				victims = append(victims, vic.Gang+": "+strings.Join(vic.Pods, " "))
				whole = append(whole, vic.Whole)
				if vic.Priority != 10 {
					t.Errorf("victim %s priority %d, want 10", vic.Gang, vic.Priority)
				}
			}
			if !slices.Equal(victims, tt.wantVictims) || !slices.Equal(whole, tt.wantWhole) {
				t.Errorf("victims %v (whole %v), want %v (%v)", victims, whole, tt.wantVictims, tt.wantWhole)
			}
			if v.PreemptionOn != tt.wantPreemptOn {
				t.Errorf("preemption on = %v, want %v", v.PreemptionOn, tt.wantPreemptOn)
			}
		})
	}
}
