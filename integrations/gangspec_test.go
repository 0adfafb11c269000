package integrations

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

func container(requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func tmpl(spec corev1.PodSpec) *corev1.PodTemplateSpec { return &corev1.PodTemplateSpec{Spec: spec} }

func TestComputeGangSpec(t *testing.T) {
	cpuMaster := tmpl(corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "1", "memory", "2Gi"), nil)}})
	gpuWorker := tmpl(corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "4"), rl("nvidia.com/gpu", "2"))}})
	cases := []struct {
		name          string
		replicas      []Replica
		policy        SchedulingPolicy
		wantMin       int32
		wantTask      map[string]int32
		wantResources corev1.ResourceList
	}{
		{
			name:          "requests only",
			replicas:      []Replica{{Role: "worker", Replicas: 3, Template: cpuMaster}},
			wantMin:       3,
			wantTask:      map[string]int32{"worker": 3},
			wantResources: rl("cpu", "3", "memory", "6Gi"),
		},
		{
			name:          "limits-only GPU counts as a request, as the API server defaults it",
			replicas:      []Replica{{Role: "worker", Replicas: 2, Template: gpuWorker}},
			wantMin:       2,
			wantTask:      map[string]int32{"worker": 2},
			wantResources: rl("cpu", "8", "nvidia.com/gpu", "4"),
		},
		{
			name: "an init container larger than the main containers sets the request",
			replicas: []Replica{{Role: "worker", Replicas: 2, Template: tmpl(corev1.PodSpec{
				InitContainers: []corev1.Container{container(rl("cpu", "3", "memory", "1Gi"), nil)},
				Containers:     []corev1.Container{container(rl("cpu", "1", "memory", "4Gi"), nil)},
			})}},
			wantMin:       2,
			wantTask:      map[string]int32{"worker": 2},
			wantResources: rl("cpu", "6", "memory", "8Gi"),
		},
		{
			name: "pod overhead is added",
			replicas: []Replica{{Role: "worker", Replicas: 2, Template: tmpl(corev1.PodSpec{
				Overhead:   rl("cpu", "250m", "memory", "120Mi"),
				Containers: []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"), nil)},
			})}},
			wantMin:       2,
			wantTask:      map[string]int32{"worker": 2},
			wantResources: rl("cpu", "2500m", "memory", "2288Mi"),
		},
		{
			name: "CPU master and GPU workers",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpuMaster},
				{Role: "worker", Replicas: 4, Template: gpuWorker},
			},
			wantMin:       5,
			wantTask:      map[string]int32{"master": 1, "worker": 4},
			wantResources: rl("cpu", "17", "memory", "2Gi", "nvidia.com/gpu", "8"),
		},
		{
			name: "minAvailable below the total counts the master first, then workers",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpuMaster},
				{Role: "worker", Replicas: 4, Template: gpuWorker},
			},
			policy:        SchedulingPolicy{MinAvailable: ptr.To[int32](3), Queue: "team-a", PriorityClass: "high", ScheduleTimeoutSeconds: ptr.To[int32](60)},
			wantMin:       3,
			wantTask:      map[string]int32{"master": 1, "worker": 2},
			wantResources: rl("cpu", "9", "memory", "2Gi", "nvidia.com/gpu", "4"),
		},
		{
			name: "per-role minimums below the replicas",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpuMaster},
				{Role: "worker", Replicas: 4, MinMember: ptr.To[int32](2), Template: gpuWorker},
			},
			policy:        SchedulingPolicy{MinAvailable: ptr.To[int32](4)},
			wantMin:       4,
			wantTask:      map[string]int32{"master": 1, "worker": 2},
			wantResources: rl("cpu", "13", "memory", "2Gi", "nvidia.com/gpu", "6"),
		},
		{
			name: "an elastic role lowers the gang's minimum and its own",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpuMaster},
				{Role: "worker", Replicas: 4, ElasticMin: ptr.To[int32](2), Template: gpuWorker},
			},
			wantMin:       3,
			wantTask:      map[string]int32{"master": 1, "worker": 2},
			wantResources: rl("cpu", "9", "memory", "2Gi", "nvidia.com/gpu", "4"),
		},
		{
			name: "an elastic minimum at or above the replicas changes nothing",
			replicas: []Replica{
				{Role: "worker", Replicas: 2, ElasticMin: ptr.To[int32](3), Template: gpuWorker},
			},
			wantMin:       2,
			wantTask:      map[string]int32{"worker": 2},
			wantResources: rl("cpu", "8", "nvidia.com/gpu", "4"),
		},
		{
			name: "minAvailable set wins over the elastic minimum; the role keeps its own",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpuMaster},
				{Role: "worker", Replicas: 4, ElasticMin: ptr.To[int32](1), Template: gpuWorker},
			},
			policy:        SchedulingPolicy{MinAvailable: ptr.To[int32](3)},
			wantMin:       3,
			wantTask:      map[string]int32{"master": 1, "worker": 1},
			wantResources: rl("cpu", "9", "memory", "2Gi", "nvidia.com/gpu", "4"),
		},
		{
			name: "a per-role minimum below the elastic one is the role's",
			replicas: []Replica{
				{Role: "worker", Replicas: 4, MinMember: ptr.To[int32](1), ElasticMin: ptr.To[int32](3), Template: gpuWorker},
			},
			wantMin:       3,
			wantTask:      map[string]int32{"worker": 1},
			wantResources: rl("cpu", "12", "nvidia.com/gpu", "6"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ComputeGangSpec(tc.replicas, tc.policy)
			if got.MinMember != tc.wantMin {
				t.Errorf("minMember = %d, want %d", got.MinMember, tc.wantMin)
			}
			if len(got.MinTaskMember) != len(tc.wantTask) {
				t.Errorf("minTaskMember = %v, want %v", got.MinTaskMember, tc.wantTask)
			}
			for role, n := range tc.wantTask {
				if got.MinTaskMember[role] != n {
					t.Errorf("minTaskMember[%s] = %d, want %d", role, got.MinTaskMember[role], n)
				}
			}
			if len(got.MinResources) != len(tc.wantResources) {
				t.Errorf("minResources = %v, want %v", got.MinResources, tc.wantResources)
			}
			for name, want := range tc.wantResources {
				if q := got.MinResources[name]; q.Cmp(want) != 0 {
					t.Errorf("minResources[%s] = %s, want %s", name, q.String(), want.String())
				}
			}
			if got.Queue != tc.policy.Queue || got.PriorityClassName != tc.policy.PriorityClass || got.ScheduleTimeoutSeconds != tc.policy.ScheduleTimeoutSeconds {
				t.Errorf("scheduling policy not carried over: %+v", got)
			}
		})
	}
}

func TestComputeGangSpecTopology(t *testing.T) {
	cpu := tmpl(corev1.PodSpec{Containers: []corev1.Container{container(rl("cpu", "1"), nil)}})
	nvidia := tmpl(corev1.PodSpec{Containers: []corev1.Container{container(nil, rl("nvidia.com/gpu", "8"))}})
	amdInit := tmpl(corev1.PodSpec{InitContainers: []corev1.Container{container(rl("amd.com/gpu", "1"), nil)}})
	policy := &schedulingv1alpha1.TopologyPolicy{Levels: []schedulingv1alpha1.TopologyLevelPolicy{{Level: "rack", Required: true}}}
	cases := []struct {
		name        string
		replicas    []Replica
		roles       []string
		policy      *schedulingv1alpha1.TopologyPolicy
		wantRoles   []string
		wantMembers int32
	}{
		{
			name:     "no policy, no topology",
			replicas: []Replica{{Role: "worker", Replicas: 2, Template: nvidia}},
		},
		{
			name: "by default only the roles that ask for GPUs, in replica order",
			replicas: []Replica{
				{Role: "chief", Replicas: 1, Template: cpu},
				{Role: "ps", Replicas: 2, Template: cpu},
				{Role: "worker", Replicas: 4, Template: nvidia},
				{Role: "evaluator", Replicas: 1, Template: amdInit},
			},
			policy:      policy,
			wantRoles:   []string{"worker", "evaluator"},
			wantMembers: 5,
		},
		{
			name: "by default every role when none asks for GPUs",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpu},
				{Role: "worker", Replicas: 3, Template: cpu},
			},
			policy:      policy,
			wantRoles:   []string{"master", "worker"},
			wantMembers: 4,
		},
		{
			name: "the roles the job names, in replica order whatever the order named",
			replicas: []Replica{
				{Role: "master", Replicas: 1, Template: cpu},
				{Role: "worker", Replicas: 3, Template: nvidia},
			},
			roles:       []string{"worker", "master"},
			policy:      policy,
			wantRoles:   []string{"master", "worker"},
			wantMembers: 4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ComputeGangSpec(tc.replicas, SchedulingPolicy{Topology: tc.policy, TopologyRoles: tc.roles}).Topology
			if tc.policy == nil {
				if got != nil {
					t.Fatalf("topology = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("topology missing")
			}
			if !slices.Equal(got.Roles, tc.wantRoles) || got.Members != tc.wantMembers {
				t.Errorf("roles %v with %d members, want %v with %d", got.Roles, got.Members, tc.wantRoles, tc.wantMembers)
			}
			if !equality.Semantic.DeepEqual(got.TopologyPolicy, *tc.policy) {
				t.Errorf("policy = %+v, want %+v", got.TopologyPolicy, *tc.policy)
			}
		})
	}
}

// pooled is a backend with one minimum for the whole gang.
type pooled struct{ Backend }

// perRole is a backend with a minimum per role.
type perRole struct{ Backend }

func (perRole) KeepsRoleMinimums() {}

func TestUnkeptRoleMinimums(t *testing.T) {
	replicas := map[string]int32{"master": 1, "worker": 4}
	cases := []struct {
		name    string
		backend Backend
		spec    GangSpec
		roles   []string
		want    []UnkeptRoleMinimum
	}{
		{
			name:    "the whole gang implies every role's",
			backend: pooled{},
			spec:    GangSpec{MinMember: 5, MinTaskMember: map[string]int32{"master": 1, "worker": 4}},
			roles:   []string{"master", "worker"},
		},
		{
			name:    "3 of 5 leave the master out",
			backend: pooled{},
			spec:    GangSpec{MinMember: 3, MinTaskMember: map[string]int32{"master": 1, "worker": 2}},
			roles:   []string{"master", "worker"},
			want:    []UnkeptRoleMinimum{{Role: "master", Minimum: 1, Guaranteed: 0}},
		},
		{
			name:    "4 of 5 keep 3 workers",
			backend: pooled{},
			spec:    GangSpec{MinMember: 4, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			roles:   []string{"worker"},
		},
		{
			name:    "only the roles asked for are judged",
			backend: pooled{},
			spec:    GangSpec{MinMember: 3, MinTaskMember: map[string]int32{"master": 1, "worker": 2}},
			roles:   []string{"worker"},
		},
		{
			name:    "a backend with per-role minimums keeps them all",
			backend: perRole{},
			spec:    GangSpec{MinMember: 3, MinTaskMember: map[string]int32{"master": 1, "worker": 2}},
			roles:   []string{"master", "worker"},
		},
		{
			name:  "no backend, no gang",
			spec:  GangSpec{MinMember: 3, MinTaskMember: map[string]int32{"master": 1, "worker": 2}},
			roles: []string{"master"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UnkeptRoleMinimums(tc.backend, tc.spec, replicas, tc.roles)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
