package troupe_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/drf"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/interpodaffinity"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/nodeorder"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/podtopologyspread"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/proportion"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/reservation"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/volumes"
	"github.com/troupe-ml/troupe/internal/operator"
)

// wrongValues are values the schema rejects, each with what helm's message
// must say: the value's path and what it allows. The install suite feeds
// the first to `helm install` too.
var wrongValues = []struct {
	name string
	args []string
	want []string
}{
	{
		name: "an unknown backend",
		args: []string{"--set", "backend=kube-batch"},
		want: []string{"at '/backend': value must be one of 'troupe', 'volcano', 'scheduler-plugins', 'kube-scheduler', 'none'"},
	},
	{
		name: "negative replicas",
		args: []string{"--set", "operator.replicas=-1"},
		want: []string{"at '/operator/replicas': minimum: got -1, want 0"},
	},
	{
		name: "an image tag that is a number",
		args: []string{"--set-json", "image.tag=1.5"},
		want: []string{"at '/image/tag': got number, want string"},
	},
	{
		name: "an unknown top-level key",
		args: []string{"--set", "replica=2"},
		want: []string{"at '': additional properties 'replica' not allowed"},
	},
	{
		name: "an unknown key of a component",
		args: []string{"--set", "scheduler.schedulerName=mine"},
		want: []string{"at '/scheduler': additional properties 'schedulerName' not allowed"},
	},
	{
		name: "replicas without leader election",
		args: []string{"--set", "scheduler.replicas=2", "--set", "scheduler.leaderElection.enabled=false"},
		want: []string{"at '/scheduler/leaderElection/enabled': value must be true"},
	},
	{
		name: "an unknown job kind",
		args: []string{"--set-json", `operator.enabledSchemes=["tfjob","jaxjob"]`},
		want: []string{"at '/operator/enabledSchemes/1': value must be one of 'tfjob', 'pytorchjob', 'mpijob'"},
	},
	{
		name: "a namespace name Kubernetes refuses",
		args: []string{"--set", "operator.watchNamespace=Team_A"},
		want: []string{"at '/operator/watchNamespace'", "'Team_A' does not match pattern"},
	},
	{
		name: "an unknown scheduler action",
		args: []string{"--set-json", `scheduler.config={"actions":["enqueue","shuffle"]}`},
		want: []string{"at '/scheduler/config/actions/1': value must be one of 'allocate', 'backfill', 'enqueue', 'preempt'"},
	},
	{
		name: "a scheduler plugin without a name",
		args: []string{"--set-json", `scheduler.config={"plugins":[{"arguments":{}}]}`},
		want: []string{"at '/scheduler/config/plugins/0': missing property 'name'"},
	},
	{
		name: "a misspelt plugin argument",
		args: []string{"--set-json", `scheduler.config={"plugins":[{"name":"nodeorder","arguments":{"gpus":["amd.com/gpu"]}}]}`},
		want: []string{"at '/scheduler/config/plugins/0/arguments': additional properties 'gpus' not allowed"},
	},
	{
		name: "arguments to a plugin that takes none",
		args: []string{"--set-json", `scheduler.config={"plugins":[{"name":"gang","arguments":{"minMember":2}}]}`},
		want: []string{"at '/scheduler/config/plugins/0/arguments': got object, want null"},
	},
	{
		name: "a period that is no duration",
		args: []string{"--set", "scheduler.minCyclePeriod=fast"},
		want: []string{"at '/scheduler/minCyclePeriod'", "'fast' does not match pattern"},
	},
	{
		name: "a grace period that is no duration",
		args: []string{"--set", "scheduler.partialGangGracePeriod=30sec"},
		want: []string{"at '/scheduler/partialGangGracePeriod'", "'30sec' does not match pattern"},
	},
	{
		name: "a reservation plugin that holds for no gang",
		args: []string{"--set-json", `scheduler.config={"plugins":[{"name":"gang"},{"name":"predicates"},{"name":"reservation","arguments":{"gangs":0}}]}`},
		want: []string{"at '/scheduler/config/plugins/2/arguments/gangs'", "minimum: got 0, want 1"},
	},
	{
		name: "a refresh period that is no duration",
		args: []string{"--set", "scheduler.unschedulableRefreshPeriod=-10s"},
		want: []string{"at '/scheduler/unschedulableRefreshPeriod'", "'-10s' does not match pattern"},
	},
	{
		name: "no status writes in flight",
		args: []string{"--set", "scheduler.statusWriteWorkers=0"},
		want: []string{"at '/scheduler/statusWriteWorkers'", "minimum: got 0, want 1"},
	},
	{
		name: "a zero client rate",
		args: []string{"--set-json", "operator.kubeAPI.qps=0"},
		want: []string{"at '/operator/kubeAPI/qps': exclusiveMinimum: got 0, want 0"},
	},
	{
		name: "a HyperNode Topology that is no object name",
		args: []string{"--set", "volcanoHyperNodeTopology=Rack_Topology"},
		want: []string{"at '/volcanoHyperNodeTopology'", "'Rack_Topology' does not match pattern"},
	},
	{
		name: "a scrape interval that is no Prometheus duration",
		args: []string{"--set", "metrics.serviceMonitor.interval=soon"},
		want: []string{"at '/metrics/serviceMonitor/interval'", "'soon' does not match pattern"},
	},
	{
		name: "a digest that is a tag",
		args: []string{"--set", "image.digest=latest"},
		want: []string{"at '/image/digest'", "'latest' does not match pattern"},
	},
}

// Wrong values fail helm template with a message that names the value.
func TestSchemaRejectsWrongValues(t *testing.T) {
	for _, tt := range wrongValues {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"template", release, chartDir()}, tt.args...)
			_, err := runHelm(args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded; want the schema to reject it", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// The schema's lists of allowed names are the code's: a backend, job kind,
// action or plugin added to the code must be added to the schema too.
func TestSchemaEnumsAreTheCode(t *testing.T) {
	schema := readSchema(t)
	tests := []struct {
		path []string
		want []string
	}{
		{[]string{"properties", "backend", "enum"}, operator.KnownGangBackends},
		{[]string{"properties", "operator", "properties", "enabledSchemes", "items", "enum"}, operator.FrameworkNames()},
		{[]string{"$defs", "schedulerConfig", "properties", "actions", "items", "enum"}, slices.Collect(maps.Keys(config.Actions))},
		{[]string{"$defs", "schedulerConfig", "properties", "plugins", "items", "properties", "name", "enum"}, slices.Collect(maps.Keys(config.Plugins))},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "."), func(t *testing.T) {
			list, _ := walk(t, schema, tt.path...).([]any)
			var got []string
			for _, v := range list {
				s, _ := v.(string)
				got = append(got, s)
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tt.want))) {
				t.Errorf("values.schema.json allows %v, the code %v", got, tt.want)
			}
		})
	}
}

// helm lint --strict passes for every backend.
func TestLint(t *testing.T) {
	for _, backend := range []string{"troupe", "volcano", "scheduler-plugins", "kube-scheduler", "none"} {
		t.Run(backend, func(t *testing.T) {
			out, err := runHelm("lint", "--strict", chartDir(), "--set", "backend="+backend)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// The schema's arguments of each scheduler plugin are the fields of the
// plugin's Config, which the scheduler decodes them into (field names match
// case-insensitively, unknown ones are errors): a plugin's new argument is
// one the schema must allow, and a plugin without a Config takes none.
func TestSchemaPluginArgumentsAreTheCode(t *testing.T) {
	configs := map[string]any{
		predicates.Name:        predicates.Config{},
		interpodaffinity.Name:  interpodaffinity.Config{},
		podtopologyspread.Name: podtopologyspread.Config{},
		nodeorder.Name:         nodeorder.Config{},
		proportion.Name:        proportion.Config{},
		drf.Name:               drf.Config{},
		reservation.Name:       reservation.Config{},
		priority.Name:          nil,
		gang.Name:              nil,
		volumes.Name:           nil,
	}
	if got, want := slices.Sorted(maps.Keys(configs)), slices.Sorted(maps.Keys(config.Plugins)); !slices.Equal(got, want) {
		t.Fatalf("this test knows the plugins %v, the scheduler registers %v", got, want)
	}
	schema := readSchema(t)
	items := walk(t, schema, "$defs", "schedulerConfig", "properties", "plugins", "items").(map[string]any)
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			args := pluginArguments(t, items, name)
			if cfg == nil {
				if args["type"] != "null" {
					t.Errorf("the plugin takes no arguments, the schema allows %v", args)
				}
				return
			}
			props, _ := args["properties"].(map[string]any)
			if args["additionalProperties"] != false {
				t.Errorf("the schema lets misspelt arguments of %s through", name)
			}
			fields := reflect.TypeOf(cfg)
			var want []string
			for i := range fields.NumField() {
				want = append(want, fields.Field(i).Name)
			}
			var got []string
			for p := range props {
				got = append(got, p)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.EqualFunc(got, want, strings.EqualFold) {
				t.Errorf("the schema allows arguments %v, %T has fields %v", got, cfg, want)
			}
		})
	}
}

// pluginArguments is the schema for the arguments of the named plugin:
// the then-branch of the allOf entry whose if names it.
func pluginArguments(t *testing.T, items map[string]any, name string) map[string]any {
	t.Helper()
	entries, _ := items["allOf"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		cond := walk(t, entry, "if", "properties", "name").(map[string]any)
		names := []any{cond["const"]}
		if list, ok := cond["enum"].([]any); ok {
			names = list
		}
		if slices.Contains(names, any(name)) {
			return walk(t, entry, "then", "properties", "arguments").(map[string]any)
		}
	}
	t.Fatalf("values.schema.json says nothing of %s's arguments", name)
	return nil
}

func readSchema(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// walk follows keys down nested objects.
func walk(t *testing.T, node any, path ...string) any {
	t.Helper()
	for _, key := range path {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("values.schema.json has no %s", strings.Join(path, "."))
		}
		node = m[key]
	}
	return node
}
