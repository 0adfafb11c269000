package demo

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.CPUNodes != 3 || o.GPUNodes != 8 || o.UntilRunning || o.Timeout != 3*time.Minute || o.Refresh != time.Second || !o.ShowGangRestart ||
		strings.Join(o.Examples, ",") != strings.Join(DefaultExamples, ",") || !filepath.IsAbs(o.StateDir) {
		t.Errorf("unexpected defaults: %+v", o)
	}

	o, err = ParseFlags([]string{"--until-running", "--timeout=90s", "--examples=a.yaml, b.yaml", "--cpu-nodes=1", "--gpu-nodes=0", "--show-gang-restart=false", "--state-dir=rel",
		"--scheduler-config=../../config/samples/scheduler-config.yaml"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.UntilRunning || o.Timeout != 90*time.Second || strings.Join(o.Examples, ",") != "a.yaml,b.yaml" || o.CPUNodes != 1 || o.ShowGangRestart || !filepath.IsAbs(o.StateDir) ||
		o.SchedulerConfig != "../../config/samples/scheduler-config.yaml" {
		t.Errorf("flags not applied: %+v", o)
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--until-running", "--timeout=0s"}, []string{"--timeout: must be greater than 0"}},
		{[]string{"--until-running", "--examples="}, []string{"--until-running: needs at least one manifest"}},
		{[]string{"--cpu-nodes=0", "--gpu-nodes=0", "--refresh=1ms"}, []string{"at least one node", "--refresh: must be at least 100ms"}},
		{[]string{"--state-dir="}, []string{"--state-dir: must not be empty"}},
		{[]string{"--gpu-nodes=0"}, []string{"--show-gang-restart: the job it restarts (examples/pytorchjob-gang-restart.yaml) runs on GPU nodes; pass --gpu-nodes of at least 1, or --show-gang-restart=false"}},
		{[]string{"--show-gang-restart=maybe"}, []string{`invalid boolean value "maybe" for -show-gang-restart`}},
		{[]string{"extra"}, []string{"unexpected arguments"}},
		{[]string{"--scheduler-config=/nonexistent/scheduler.yaml"}, []string{"--scheduler-config /nonexistent/scheduler.yaml: ", "no such file"}},
		{[]string{"--scheduler-config=" + writeFile(t, "actions: [enqueue, allocate, teleport]\n")}, []string{"--scheduler-config ", "teleport"}},
	} {
		_, err := ParseFlags(tc.args, io.Discard)
		if err == nil {
			t.Errorf("ParseFlags(%q) succeeded", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseFlags(%q) = %q, want it to contain %q", tc.args, err, w)
			}
		}
	}
}

// writeFile writes content to a file of the test's and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
