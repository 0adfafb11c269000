package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmoke is `make demo-smoke` in-process: the whole cluster from the
// built binaries, the examples placed and Running, then everything
// stopped, with nothing left running and only the logs left in the state
// folder. It takes about 10 s.
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
		"OK: all 3 example jobs Running, every pod on the right kind of node",
		"TFJob tf-mixed          Running   chief",
		"stopped; nothing left running",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if left := leftoverProcesses(opts.StateDir); len(left) > 0 {
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
