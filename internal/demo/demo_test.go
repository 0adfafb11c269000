package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ml/troupe/internal/localcluster"
)

// TestSmoke is `make demo-smoke` in-process: the whole cluster from the
// built binaries, the examples placed and Running, the gang-restart
// example failed through kwok's chaos stage and back as generation 1, then
// everything stopped, with nothing left running and only the logs left in
// the state folder. It takes about 20 s.
func TestSmoke(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or export KUBEBUILDER_ASSETS=$(hack/controlplane.sh)")
	}
	opts, err := ParseFlags([]string{"--until-running", "--timeout=2m", "--state-dir=" + filepath.Join(t.TempDir(), "demo")}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), opts, &out, &errOut)
	t.Log("\n" + out.String() + errOut.String())
	if code != 0 {
		t.Fatalf("Run = %d, want 0", code)
	}
	for _, want := range []string{
		"OK: all 4 example jobs Running, every pod on the right kind of node; PyTorchJob pytorch-gang restarted as a whole gang and Running again as generation 1",
		"TFJob tf-mixed               Running   chief",
		// The topology example, checked from the nodes' labels.
		"pytorchjob-topology.yaml: Topology default\n",
		"PyTorchJob pytorch-topology placed by its topology rule",
		// The gang restart: the demo fails the worker, and generation 1
		// runs in the end. (The Restarting condition in between lasts a
		// few seconds only, the backoff: a loaded machine may poll past
		// it, so the lasting status.gang is what is checked.)
		"failing pytorch-gang-worker-1 with exit code 137 (kwok chaos stage)",
		"PyTorchJob pytorch-gang restarted as a whole gang after pytorch-gang-worker-1 failed with exit code 137: generation 1 after 1 restart, all 3 pods of generation 1 Running on gpu nodes",
		"\n  gen 1, 1 restart  ",
		": MemberFailed: pod pytorch-gang-worker-1: container pytorch exited with retryable code 137\n",
		"stopped; nothing left running",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if left := localcluster.Leftovers(opts.StateDir, demoBinaries); len(left) > 0 {
		t.Errorf("processes left running: %v", left)
	}
	entries, err := os.ReadDir(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != logsDir {
		t.Errorf("state folder holds %v after the stop, want only %s", names, logsDir)
	}
	logs, _ := filepath.Glob(filepath.Join(opts.StateDir, logsDir, "*.log"))
	if len(logs) != 5 {
		t.Errorf("logs %v, want etcd, kube-apiserver, kube-controller-manager, kwok and troupe", logs)
	}
}
