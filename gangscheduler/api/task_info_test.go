package api_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// Copies is the scarcest resource's count of the task's requests in what
// is idle, pod slots included; a resource the task does not ask for does
// not limit it.
func TestTaskCopies(t *testing.T) {
	idle := func(cpu int64, gpus, pods int64) *api.Resource {
		return &api.Resource{MilliCPU: cpu * 1000, Memory: 64 << 30, Pods: pods, Scalars: map[corev1.ResourceName]int64{st.GPU: gpus}}
	}
	tests := []struct {
		name string
		pod  *st.PodWrapper
		idle *api.Resource
		want int
	}{
		{name: "CPU alone: 16 of 1 CPU", pod: st.MakePod("ns", "p").Req("1", "1Gi"), idle: idle(16, 0, 110), want: 16},
		{name: "GPUs the scarcer: 8 GPUs of 2", pod: st.MakePod("ns", "p").Req("1", "1Gi").GPU(2), idle: idle(32, 8, 110), want: 4},
		{name: "CPU the scarcer: 6 CPUs of 4, GPUs to spare", pod: st.MakePod("ns", "p").Req("4", "1Gi").GPU(1), idle: idle(6, 8, 110), want: 1},
		{name: "pod slots the scarcer", pod: st.MakePod("ns", "p").Req("1", "1Gi"), idle: idle(16, 0, 3), want: 3},
		{name: "memory the scarcer: 64Gi of 24Gi", pod: st.MakePod("ns", "p").Req("1", "24Gi"), idle: idle(16, 0, 110), want: 2},
		{name: "none fits", pod: st.MakePod("ns", "p").Req("1", "1Gi").GPU(4), idle: idle(16, 2, 110), want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := api.NewTaskInfo("ns/j", tc.pod.Obj())
			if got := task.Copies(tc.idle); got != tc.want {
				t.Errorf("Copies = %d, want %d", got, tc.want)
			}
		})
	}
}
