package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name        string
		yaml        string
		wantErr     []string // each must appear in the error
		wantActions []string
		wantPlugins []string
	}{
		{
			name:        "empty file is the default",
			yaml:        "",
			wantActions: []string{"enqueue", "allocate", "backfill"},
			wantPlugins: []string{"priority", "gang", "predicates", "interpodaffinity", "podtopologyspread", "volumes", "nodeorder", "proportion", "drf", "reservation"},
		},
		{
			name:        "plugins only: actions default",
			yaml:        "plugins:\n- name: gang\n- name: predicates\n",
			wantActions: []string{"enqueue", "allocate", "backfill"},
			wantPlugins: []string{"gang", "predicates"},
		},
		{
			name: "plugin arguments decode into the plugin's Config",
			yaml: `
actions: [allocate]
plugins:
- name: gang
- name: nodeorder
  arguments:
    gpuResources: [example.com/tpu]
- name: predicates
  arguments: {taintTolerationComparisonOperators: true}
- name: interpodaffinity
  arguments: {hardPodAffinityWeight: 0}
- name: podtopologyspread
  arguments: {taintTolerationComparisonOperators: true}
`,
			wantActions: []string{"allocate"},
			wantPlugins: []string{"gang", "nodeorder", "predicates", "interpodaffinity", "podtopologyspread"},
		},
		{
			name:        "preempt is known, though not a default",
			yaml:        "actions: [enqueue, preempt, allocate, backfill]\n",
			wantActions: []string{"enqueue", "preempt", "allocate", "backfill"},
			wantPlugins: []string{"priority", "gang", "predicates", "interpodaffinity", "podtopologyspread", "volumes", "nodeorder", "proportion", "drf", "reservation"},
		},
		{
			name:    "misspelt action names the index and the known ones",
			yaml:    "actions: [allocate, alocate]\n",
			wantErr: []string{`actions[1]: unknown action "alocate"; known: allocate`},
		},
		{
			name:    "empty action list",
			yaml:    "actions: []\n",
			wantErr: []string{"actions: at least one action is required"},
		},
		{
			name:    "action twice",
			yaml:    "actions: [allocate, allocate]\n",
			wantErr: []string{`actions[1]: "allocate" is already actions[0]`},
		},
		{
			name:    "unknown plugin",
			yaml:    "plugins:\n- name: gang\n- name: binpack\n",
			wantErr: []string{`plugins[1].name: unknown plugin "binpack"; known: drf, gang, interpodaffinity, nodeorder, podtopologyspread, predicates, priority, proportion, reservation, volumes`},
		},
		{
			name: "gang and predicates are required, each with why",
			yaml: "plugins:\n- name: priority\n- name: nodeorder\n",
			wantErr: []string{
				`plugins: "gang" is required: without it gangs would not be placed all-or-nothing`,
				`plugins: "predicates" is required: without it pods would be placed against their node selectors`,
			},
		},
		{
			name:    "plugin without a name",
			yaml:    "plugins:\n- arguments: {}\n",
			wantErr: []string{"plugins[0].name: required"},
		},
		{
			name:    "plugin twice",
			yaml:    "plugins:\n- name: gang\n- name: gang\n",
			wantErr: []string{`plugins[1].name: "gang" is already plugins[0]`},
		},
		{
			name:    "misspelt argument",
			yaml:    "plugins:\n- name: nodeorder\n  arguments: {gpuResource: [nvidia.com/gpu]}\n",
			wantErr: []string{"plugins[0].arguments (nodeorder)", `unknown field "gpuResource"`},
		},
		{
			name:    "argument of the wrong type",
			yaml:    "plugins:\n- name: nodeorder\n  arguments: {gpuResources: nvidia.com/gpu}\n",
			wantErr: []string{"plugins[0].arguments (nodeorder)", "cannot unmarshal string"},
		},
		{
			name: "arguments out of range, each named",
			yaml: "plugins:\n- name: gang\n- name: predicates\n- name: reservation\n  arguments: {after: -1s, gangs: 0}\n",
			wantErr: []string{"plugins[2].arguments (reservation)", "after: must not be negative, got -1s",
				"gangs: must be at least 1, got 0 (leave the plugin out to hold for none)"},
		},
		{
			name:    "a duration that is none",
			yaml:    "plugins:\n- name: reservation\n  arguments: {after: 5 seconds}\n",
			wantErr: []string{"plugins[0].arguments (reservation)", "time: unknown unit"},
		},
		{
			name:    "arguments to a plugin that takes none",
			yaml:    "plugins:\n- name: gang\n  arguments: {minMember: 2}\n",
			wantErr: []string{"plugins[0].arguments (gang): the plugin takes no arguments"},
		},
		{
			name:    "unknown top-level field",
			yaml:    "action: [allocate]\n",
			wantErr: []string{`unknown field "action"`},
		},
		{
			name: "every problem is reported at once",
			yaml: "actions: [enqueu]\nplugins:\n- name: gangs\n",
			wantErr: []string{
				`actions[0]: unknown action "enqueu"; known: allocate, backfill, enqueue`,
				`plugins[0].name: unknown plugin "gangs"`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse succeeded; want an error containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			acts, plugs, err := c.Build()
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var gotActions, gotPlugins []string
			for _, a := range acts {
				gotActions = append(gotActions, a.Name())
			}
			for _, p := range plugs {
				gotPlugins = append(gotPlugins, p.Name())
			}
			if !reflect.DeepEqual(gotActions, tc.wantActions) || !reflect.DeepEqual(gotPlugins, tc.wantPlugins) {
				t.Errorf("built actions %v plugins %v; want %v %v", gotActions, gotPlugins, tc.wantActions, tc.wantPlugins)
			}
		})
	}
}

// The default plugins are plugins.Default's, so a plugin added there runs
// by default here too; Default must then also be registered to build.
func TestDefaultFollowsPluginsDefault(t *testing.T) {
	acts, plugs, err := config.Default().Build()
	if err != nil {
		t.Fatalf("the default configuration does not build: %v", err)
	}
	if len(acts) == 0 {
		t.Error("no default action")
	}
	want := plugins.WithQueueShare()
	if len(plugs) != len(want) {
		t.Fatalf("default plugins %d, plugins.WithQueueShare %d", len(plugs), len(want))
	}
	for i := range want {
		if plugs[i].Name() != want[i].Name() {
			t.Errorf("plugin %d = %s, want %s", i, plugs[i].Name(), want[i].Name())
		}
	}
}

// The sample documents the defaults: it must parse, and name the same
// actions and plugins in the same order.
func TestSampleIsValidAndMatchesTheDefault(t *testing.T) {
	c, err := config.Load(mustAbs(t, "../../config/samples/scheduler-config.yaml"))
	if err != nil {
		t.Fatalf("config/samples/scheduler-config.yaml: %v", err)
	}
	def := config.Default()
	if !reflect.DeepEqual(c.Actions, def.Actions) {
		t.Errorf("sample actions %v, default %v", c.Actions, def.Actions)
	}
	var got, want []string
	for _, p := range c.Plugins {
		got = append(got, p.Name)
	}
	for _, p := range def.Plugins {
		want = append(want, p.Name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sample plugins %v, default %v", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := config.Load(filepath.Join(t.TempDir(), "nope.yaml")); !os.IsNotExist(err) {
		t.Errorf("Load of a missing file = %v, want a not-exist error", err)
	}
}

func mustAbs(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
