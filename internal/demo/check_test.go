package demo

import (
	"strings"
	"testing"
	"time"
)

func runningJob() jobRow {
	return jobRow{
		Namespace: "default", Kind: "TFJob", Name: "tf-mixed", Expected: 3, Gang: "Running",
		Pods: []podRow{
			{Name: "tf-mixed-chief-0", Role: "chief", Phase: "Running", Node: "cpu-1", NodeKind: kindCPU},
			{Name: "tf-mixed-worker-0", Role: "worker", Index: 0, Phase: "Running", Node: "gpu-1", NodeKind: kindGPU, GPUs: 2},
			{Name: "tf-mixed-worker-1", Role: "worker", Index: 1, Phase: "Running", Node: "gpu-1", NodeKind: kindGPU, GPUs: 2},
		},
	}
}

const tfKey = "TFJob default/tf-mixed"

func TestCheck(t *testing.T) {
	cases := []struct {
		name          string
		mutate        func(*jobRow)
		keys          []string
		wantDone      bool
		wantWaiting   []string // each must appear in the waiting text
		wantMisplaced []string // each must appear in the misplaced text
	}{
		{name: "every pod Running on the right kind of node", wantDone: true},
		{
			name:        "a job that does not exist yet",
			keys:        []string{tfKey, "MPIJob default/mpi-horovod"},
			wantWaiting: []string{"MPIJob default/mpi-horovod: not found"},
		},
		{
			name:        "pods not created yet",
			mutate:      func(j *jobRow) { j.Pods = j.Pods[:1] },
			wantWaiting: []string{tfKey + ": 1/3 pods Running"},
		},
		{
			name: "a bound pod not Running yet, and the gang not Running",
			mutate: func(j *jobRow) {
				j.Pods[2].Phase = "Scheduled"
				j.Gang, j.GangMessage = "Inqueue", "Scheduled: GangBound"
			},
			wantWaiting: []string{"2/3 pods Running", "tf-mixed-worker-1 Scheduled", "PodGroup Inqueue (Scheduled: GangBound)"},
		},
		{
			name:        "no PodGroup yet",
			mutate:      func(j *jobRow) { j.Gang = "" },
			wantWaiting: []string{"no PodGroup yet"},
		},
		{
			name:          "a CPU-only chief on a GPU node",
			mutate:        func(j *jobRow) { j.Pods[0].Node, j.Pods[0].NodeKind = "gpu-2", kindGPU },
			wantMisplaced: []string{"chief tf-mixed-chief-0 (no GPUs) is on gpu node gpu-2; want a cpu node"},
		},
		{
			name:          "a GPU worker on a CPU node",
			mutate:        func(j *jobRow) { j.Pods[1].Node, j.Pods[1].NodeKind = "cpu-3", kindCPU },
			wantMisplaced: []string{"worker tf-mixed-worker-0 (2 GPUs) is on cpu node cpu-3; want a gpu node"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := runningJob()
			if tc.mutate != nil {
				tc.mutate(&job)
			}
			keys := tc.keys
			if keys == nil {
				keys = []string{tfKey}
			}
			v := check(&snapshot{Jobs: []jobRow{job}}, keys)
			if v.Done != tc.wantDone {
				t.Errorf("Done = %v, want %v (%+v)", v.Done, tc.wantDone, v)
			}
			waiting, misplaced := strings.Join(v.Waiting, "\n"), strings.Join(v.Misplaced, "\n")
			for _, w := range tc.wantWaiting {
				if !strings.Contains(waiting, w) {
					t.Errorf("waiting %q does not contain %q", waiting, w)
				}
			}
			for _, w := range tc.wantMisplaced {
				if !strings.Contains(misplaced, w) {
					t.Errorf("misplaced %q does not contain %q", misplaced, w)
				}
			}
			if len(tc.wantMisplaced) == 0 && misplaced != "" {
				t.Errorf("unexpected misplaced pods: %s", misplaced)
			}
		})
	}
}

func TestRender(t *testing.T) {
	pending := jobRow{Namespace: "team-a", Kind: "PyTorchJob", Name: "ddp", Expected: 2, Gang: "Pending", GangMessage: "Unschedulable: 0/7 nodes fit",
		Pods: []podRow{{Name: "ddp-master-0", Role: "master", Phase: "Pending", GPUs: 2}}}
	snap := &snapshot{
		Time: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Nodes: []nodeRow{
			{Name: "cpu-1", Kind: kindCPU, Ready: true},
			{Name: "gpu-1", Kind: kindGPU, Ready: true, GPUs: 8},
			{Name: "gpu-2", Kind: kindGPU, Ready: true, NotReady: true, GPUs: 8},
		},
		Jobs: []jobRow{runningJob(), pending},
	}
	out := render(snap, view{Kubeconfig: "/tmp/x/kubeconfig", Interactive: true, Notes: []string{"hello"}})
	for _, want := range []string{
		"nodes: 1 cpu, 2 gpu (2 Ready)   GPUs requested: 4/16   15:04:05",
		"JOB                    PODGROUP  ROLE    POD                PHASE    NODE   KIND",
		"TFJob tf-mixed         Running   chief   tf-mixed-chief-0   Running  cpu-1  cpu",
		"                                 worker  tf-mixed-worker-1  Running  gpu-1  gpu",
		"PyTorchJob team-a/ddp  Pending   master  ddp-master-0       Pending  -      -",
		"1/2 gangs Running. Waiting:",
		"PyTorchJob team-a/ddp: 0/2 pods Running; ddp-master-0 Pending; PodGroup Pending (Unschedulable: 0/7 nodes fit)",
		"Note: hello",
		"export KUBECONFIG=/tmp/x/kubeconfig",
		"Ctrl-C stops the cluster.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}

	done := render(&snapshot{Time: snap.Time, Nodes: snap.Nodes, Jobs: []jobRow{runningJob()}}, view{})
	if !strings.Contains(done, "All 1 gangs Running (3 pods)") || strings.Contains(done, "Ctrl-C") {
		t.Errorf("unexpected output for a running cluster without a kubeconfig:\n%s", done)
	}
}

func TestIsDemoProcess(t *testing.T) {
	const dir = "/tmp/troupe-demo"
	cases := []struct {
		argv []string
		want bool
	}{
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/troupe-demo/etcd"}, true},
		{[]string{"/cache/kwok-v0.8.0/kwok", "--kubeconfig=/tmp/troupe-demo/kubeconfig", "--config=/cache/stages/a.yaml"}, true},
		{[]string{"kube-apiserver", "--cert-dir", "/tmp/troupe-demo/pki"}, true},
		// Another demo's folder, another program, or no path of the folder.
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/troupe-demo2/etcd"}, false},
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/k8s_test_framework_1"}, false},
		{[]string{"tail", "-f", "/tmp/troupe-demo/logs/kwok.log"}, false},
		{[]string{"kwok", "--kubeconfig=/home/me/tmp/troupe-demo/kubeconfig"}, false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := isDemoProcess(tc.argv, dir); got != tc.want {
			t.Errorf("isDemoProcess(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
