package api_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestNewResource(t *testing.T) {
	r := api.NewResource(rl("cpu", "1500m", "memory", "2Gi", "ephemeral-storage", "1Gi", "pods", "110",
		"nvidia.com/gpu", "4", "hugepages-2Mi", "4Mi", "example.com/zero", "0"))
	want := api.Resource{MilliCPU: 1500, Memory: 2 << 30, EphemeralStorage: 1 << 30, Pods: 110,
		Scalars: map[corev1.ResourceName]int64{"nvidia.com/gpu": 4, "hugepages-2Mi": 4 << 20}}
	if !r.Equal(&want) {
		t.Fatalf("NewResource = %v, want %v", r, want)
	}
	if _, ok := r.Scalars["example.com/zero"]; ok {
		t.Errorf("zero scalar kept: %v", r.Scalars)
	}
}

func TestPodRequests(t *testing.T) {
	gpu := string(st.GPU)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want api.Resource
	}{{
		name: "containers only, plus one pod",
		pod:  st.MakePod("ns", "p").Req("1", "1Gi").Obj(),
		want: api.Resource{MilliCPU: 1000, Memory: 1 << 30, Pods: 1},
	}, {
		// An ordinary init container runs alone before the others: the pod
		// needs the larger of it and the sum of the regular containers.
		name: "init container larger than containers",
		pod:  st.MakePod("ns", "p").Req("1", "").InitContainer("init", false, rl("cpu", "3")).Obj(),
		want: api.Resource{MilliCPU: 3000, Pods: 1},
	}, {
		// A sidecar runs for the pod's life: it adds to the containers.
		name: "sidecar adds to containers",
		pod:  st.MakePod("ns", "p").Req("1", "").InitContainer("sidecar", true, rl("cpu", "500m")).Obj(),
		want: api.Resource{MilliCPU: 1500, Pods: 1},
	}, {
		name: "overhead is added",
		pod:  st.MakePod("ns", "p").Req("1", "1Gi").Overhead(rl("cpu", "250m", "memory", "64Mi")).Obj(),
		want: api.Resource{MilliCPU: 1250, Memory: 1<<30 + 64<<20, Pods: 1},
	}, {
		// Resized in place from 3 CPUs to 1: until the kubelet has applied
		// it, the pod still runs with 3, and holds them.
		name: "a pod resized down holds what it runs with",
		pod: func() *corev1.Pod {
			p := st.MakePod("ns", "p").Req("1", "").Node("n1").Phase(corev1.PodRunning).Obj()
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "main", Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "3")},
			}}
			return p
		}(),
		want: api.Resource{MilliCPU: 3000, Pods: 1},
	}, {
		name: "gpu request",
		pod:  st.MakePod("ns", "p").Req("2", "").GPU(2).Obj(),
		want: api.Resource{MilliCPU: 2000, Pods: 1, Scalars: map[corev1.ResourceName]int64{st.GPU: 2}},
	}, {
		// A manifest may give an extended resource as a limit only; the API
		// server copies it to requests before anyone reads the pod.
		name: "limits-only gpu as stored after API defaulting",
		pod:  st.MakePod("ns", "p").Limit(st.GPU, "2").Defaulted().Obj(),
		want: api.Resource{Pods: 1, Scalars: map[corev1.ResourceName]int64{st.GPU: 2}},
	}, {
		// The same pod before defaulting asks for nothing: the scheduler
		// relies on the API server's defaulting, as kube-scheduler does.
		name: "limits-only gpu never defaulted",
		pod:  st.MakePod("ns", "p").Limit(corev1.ResourceName(gpu), "2").Obj(),
		want: api.Resource{Pods: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := api.PodRequests(tt.pod)
			if !got.Equal(&tt.want) {
				t.Errorf("PodRequests = %v, want %v", got, tt.want)
			}
		})
	}
}

// PodRequests takes a lone container's requests directly; every pod, that
// kind or not, gets the answer of component-helpers' PodRequests.
func TestPodRequestsAgreesWithHelper(t *testing.T) {
	one := func(req corev1.ResourceList) *corev1.Pod {
		p := st.MakePod("ns", "p").Obj()
		p.Spec.Containers[0].Resources.Requests = req
		return p
	}
	withPodLevel := one(rl("cpu", "1"))
	withPodLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi")}
	withStatus := one(rl("cpu", "1"))
	withStatus.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: withStatus.Spec.Containers[0].Name,
		Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "3")}}}
	twoContainers := one(rl("cpu", "1", "memory", "1Gi"))
	twoContainers.Spec.Containers = append(twoContainers.Spec.Containers, corev1.Container{Name: "side",
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m", "nvidia.com/gpu", "1")}})
	pods := map[string]*corev1.Pod{
		"no requests":                  one(nil),
		"fractions of a millicore":     one(rl("cpu", "0.5m", "memory", "1.5")),
		"every kind of resource":       one(rl("cpu", "1500m", "memory", "3Gi", "ephemeral-storage", "10Gi", "hugepages-2Mi", "64Mi", "nvidia.com/gpu", "8")),
		"a zero extended resource":     one(rl("cpu", "1", "nvidia.com/gpu", "0")),
		"pod-level resources":          withPodLevel,
		"a container status (resized)": withStatus,
		"two containers":               twoContainers,
		"an init container":            st.MakePod("ns", "p").Req("1", "").InitContainer("init", false, rl("cpu", "3")).Obj(),
		"a sidecar":                    st.MakePod("ns", "p").Req("1", "").InitContainer("sidecar", true, rl("cpu", "500m")).Obj(),
		"overhead":                     st.MakePod("ns", "p").Req("1", "1Gi").Overhead(rl("cpu", "250m")).Obj(),
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			want := api.NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true}))
			want.Pods = 1
			if got := api.PodRequests(pod); !got.Equal(&want) {
				t.Errorf("PodRequests = %v, the helper's %v", got, want)
			}
		})
	}
}

func TestResourceArithmetic(t *testing.T) {
	a := api.NewResource(rl("cpu", "2", "memory", "4Gi", "nvidia.com/gpu", "2"))
	b := api.NewResource(rl("cpu", "500m", "nvidia.com/gpu", "1", "example.com/fpga", "1"))
	sum := a.Clone()
	sum.Add(&b)
	if want := api.NewResource(rl("cpu", "2500m", "memory", "4Gi", "nvidia.com/gpu", "3", "example.com/fpga", "1")); !sum.Equal(&want) {
		t.Errorf("Add = %v, want %v", sum, want)
	}
	if a.Scalar(st.GPU) != 2 {
		t.Errorf("Add changed its input's clone source: %v", a)
	}
	sum.Sub(&b)
	if !sum.Equal(&a) {
		t.Errorf("Add then Sub = %v, want %v", sum, a)
	}
	diff := b.Clone()
	diff.Sub(&a)
	if diff.MilliCPU != -1500 || diff.Scalar(st.GPU) != -1 || diff.Memory != -(4<<30) {
		t.Errorf("Sub must go negative, got %v", diff)
	}
	var zero api.Resource
	if !zero.IsZero() {
		t.Error("zero Resource not IsZero")
	}
	back := a.Clone()
	back.Sub(&a)
	if !back.IsZero() {
		t.Errorf("a - a = %v, not zero", back)
	}
	if a.IsZero() {
		t.Error("non-empty resource IsZero")
	}
}

func TestLessEqual(t *testing.T) {
	tests := []struct {
		name      string
		req       api.Resource
		avail     api.Resource
		fits      bool
		shortName corev1.ResourceName
	}{
		{"equal fits", api.NewResource(rl("cpu", "1", "memory", "1Gi")), api.NewResource(rl("cpu", "1", "memory", "1Gi")), true, ""},
		{"cpu short", api.NewResource(rl("cpu", "1001m")), api.NewResource(rl("cpu", "1")), false, corev1.ResourceCPU},
		{"memory short", api.NewResource(rl("memory", "2Gi")), api.NewResource(rl("cpu", "1", "memory", "1Gi")), false, corev1.ResourceMemory},
		{"ephemeral short", api.NewResource(rl("ephemeral-storage", "2Gi")), api.NewResource(rl("ephemeral-storage", "1Gi")), false, corev1.ResourceEphemeralStorage},
		{"pods short", api.Resource{Pods: 1}, api.Resource{}, false, corev1.ResourcePods},
		{"gpu missing on node", api.NewResource(rl("nvidia.com/gpu", "1")), api.NewResource(rl("cpu", "8")), false, st.GPU},
		{"first short scalar by name", api.NewResource(rl("z.io/b", "1", "a.io/a", "1")), api.Resource{}, false, "a.io/a"},
		// kube-scheduler's rule: what a pod does not request cannot block it,
		// even on a node over-committed by someone else.
		{"zero request on over-committed node", api.Resource{Pods: 1}, api.Resource{MilliCPU: -500, Pods: 3, Scalars: map[corev1.ResourceName]int64{st.GPU: -1}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.req.LessEqual(&tt.avail); got != tt.fits {
				t.Errorf("LessEqual = %v, want %v", got, tt.fits)
			}
			name, short := tt.req.Insufficient(&tt.avail)
			if short == tt.fits || name != tt.shortName {
				t.Errorf("Insufficient = %q, %v; want %q, %v", name, short, tt.shortName, !tt.fits)
			}
		})
	}
}

// randomTask is a pod asking a random amount of CPU and memory, and
// sometimes GPUs and FPGAs.
func randomTask(r *rand.Rand, i int) *api.TaskInfo {
	q := func(max int) string { return fmt.Sprint(r.IntN(max)) }
	p := st.MakePod("ns", fmt.Sprint(i)).Req(q(4), q(4)+"Gi")
	if r.IntN(2) == 0 {
		p.GPU(int64(r.IntN(3)))
	}
	if r.IntN(3) == 0 {
		p.Request("example.com/fpga", q(2))
	}
	return api.NewTaskInfo("", p.Obj())
}

// TaskInfo.FitsIn is the hot-path copy of Resreq.LessEqual: they must agree.
func TestFitsInMatchesLessEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q := func(max int) string { return fmt.Sprint(r.IntN(max)) }
	outcomes := map[bool]int{}
	for i := range 2000 {
		task := randomTask(r, i)
		avail := api.NewResource(rl("cpu", q(5), "memory", q(5)+"Gi", "pods", q(2), "nvidia.com/gpu", q(3), "example.com/fpga", q(2)))
		if r.IntN(4) == 0 {
			avail.Sub(&api.Resource{MilliCPU: 8000}) // over-committed
		}
		got, want := task.FitsIn(&avail), task.Resreq.LessEqual(&avail)
		if got != want {
			t.Fatalf("request %v in %v: FitsIn %v, LessEqual %v", task.Resreq, avail, got, want)
		}
		outcomes[got]++
	}
	if outcomes[true] < 100 || outcomes[false] < 100 {
		t.Errorf("cases too one-sided to compare: %v", outcomes)
	}
}

// AddRequestsTo and SubRequestsFrom are Add and Sub of the task's
// requests, for every mix of resources a pod asks and an account holds.
func TestAddRequestsMatchesAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	q := func(max int) string { return fmt.Sprint(r.IntN(max)) }
	for i := range 500 {
		task := randomTask(r, i)
		account := api.NewResource(rl("cpu", q(5), "memory", q(5)+"Gi", "pods", q(2)))
		if r.IntN(2) == 0 {
			account.AddScalar(st.GPU, int64(r.IntN(8)))
		}
		for _, op := range []struct {
			name      string
			got, want func(*api.Resource)
		}{
			{"add", task.AddRequestsTo, func(a *api.Resource) { a.Add(&task.Resreq) }},
			{"sub", task.SubRequestsFrom, func(a *api.Resource) { a.Sub(&task.Resreq) }},
		} {
			got, want := account.Clone(), account.Clone()
			op.got(&got)
			op.want(&want)
			if !got.Equal(&want) {
				t.Fatalf("%s %v to %v: %v, want %v", op.name, task.Resreq, account, got, want)
			}
		}
	}
}
