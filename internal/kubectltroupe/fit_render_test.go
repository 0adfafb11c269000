package kubectltroupe

import (
	"bytes"
	"strings"
	"testing"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/fit"
	"github.com/troupe-ml/troupe/internal/testutil"
)

func TestRenderFit(t *testing.T) {
	job := testutil.MakePyTorchJob("llama", "team").Replica(kubeflowv1.PyTorchJobReplicaTypeWorker, 2).Obj()
	placed := []fit.Placement{{Role: "master", Pod: "llama-master-0", Node: "cpu-1"}, {Role: "worker", Pod: "llama-worker-0", Node: "gpu-1"}}
	waiting := []fit.Placement{{Role: "worker", Pod: "llama-worker-1"}}
	cases := []struct {
		name string
		v    fit.Verdict
		want []string // in this order
		not  []string
	}{{
		name: "placed whole",
		v:    fit.Verdict{Placed: true, Placements: placed},
		want: []string{"PyTorchJob team/llama: troupe-scheduler would place it now.", "ROLE", "llama-master-0  cpu-1", "llama-worker-0  gpu-1"},
		not:  []string{"Why", "Preemption", "wait for room"},
	}, {
		name: "the minimum placed, a member above it waits",
		v:    fit.Verdict{Placed: true, Placements: placed, Waiting: waiting},
		want: []string{"would place it now.", "llama-worker-1  -", "The gang's minimum is placed; 1 member above it waits for room."},
	}, {
		name: "not placed, nothing to preempt",
		v:    fit.Verdict{Reason: "NotEnoughResources", Message: "worker: 0 of 2 pending pods fit", Waiting: append(placed[:0:0], waiting...)},
		want: []string{"would not place it now.", "Why (NotEnoughResources): worker: 0 of 2 pending pods fit", "llama-worker-1  -", "Preemption would take nothing for it"},
	}, {
		name: "not placed, preemption on",
		v: fit.Verdict{Reason: "NotEnoughResources", Message: "no room", PreemptionOn: true, Victims: []fit.Victim{
			{Gang: "team/low", Priority: 10, Pods: []string{"low-0", "low-1"}, Whole: true},
			{Gang: "team/elastic", Priority: 5, Pods: []string{"elastic-worker-3"}},
		}},
		want: []string{"Preemption would delete these pods, and the gang would be placed once they are gone:",
			"team/low (priority 10): low-0, low-1 (the whole gang)",
			"team/elastic (priority 5): elastic-worker-3 (members above its minimum; it runs on)"},
		not: []string{"no preempt action"},
	}, {
		name: "not placed, preemption off",
		v:    fit.Verdict{Reason: "NotEnoughResources", Message: "no room", Victims: []fit.Victim{{Gang: "team/low", Priority: 10, Pods: []string{"low-0"}, Whole: true}}},
		want: []string{"The scheduler's configuration has no preempt action, so the gang waits. With it, preemption would delete:", "team/low (priority 10): low-0 (the whole gang)"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := renderFit(&out, "PyTorchJob", job, tc.v); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("output lacks %q after offset %d:\n%s", w, at, got)
				}
				at += i + len(w)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("output has %q:\n%s", n, got)
				}
			}
		})
	}
}
