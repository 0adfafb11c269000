// Package config is the scheduler's configuration file: which actions run
// each cycle, in order, and which plugins answer their questions, with each
// plugin's arguments.
//
//	actions: [allocate]
//	plugins:
//	- name: priority
//	- name: gang
//	- name: predicates
//	- name: nodeorder
//	  arguments:
//	    gpuResources: [nvidia.com/gpu]
//
// A file is validated as a whole before the scheduler starts; every error
// names the field (actions[1], plugins[3].arguments) and, for an unknown
// name, lists the known ones. Omitting actions or plugins selects the
// defaults; listing none of them is an error, and so is a plugin list
// without gang or predicates (RequiredPlugins).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// Config is the configuration file.
type Config struct {
	// Actions run in this order every cycle.
	Actions []string `json:"actions,omitempty"`
	// Plugins register their functions in this order when a session
	// opens; where answers combine by "first non-zero wins" (job, task and
	// queue order) the earlier plugin decides.
	Plugins []PluginConfig `json:"plugins,omitempty"`
}

// PluginConfig names a plugin and carries its arguments.
type PluginConfig struct {
	Name string `json:"name"`
	// Arguments are the plugin's own settings, decoded strictly into its
	// Config (see WithArguments).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// PluginFactory makes a plugin from its arguments (nil when none were
// given).
type PluginFactory func(args json.RawMessage) (framework.Plugin, error)

// NoArguments registers a plugin that takes no arguments; giving it some is
// an error rather than silently ignored.
func NoArguments(newPlugin func() framework.Plugin) PluginFactory {
	return func(args json.RawMessage) (framework.Plugin, error) {
		if !isNull(args) {
			return nil, errors.New("the plugin takes no arguments")
		}
		return newPlugin(), nil
	}
}

// WithArguments registers a plugin whose New takes a Config struct C. The
// arguments decode into C with encoding/json rules (field names match
// case-insensitively, so gpuResources sets GPUResources) and unknown
// fields are errors, so a misspelt argument cannot be silently ignored. A
// C with a Validate method is validated too, so that a value out of range
// is refused as an unknown field is.
func WithArguments[C any](newPlugin func(C) framework.Plugin) PluginFactory {
	return func(args json.RawMessage) (framework.Plugin, error) {
		var cfg C
		if !isNull(args) {
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&cfg); err != nil {
				return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
			}
		}
		if v, ok := any(cfg).(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return nil, err
			}
		}
		return newPlugin(cfg), nil
	}
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// Default is the configuration used without a file: DefaultActions and the
// plugins of plugins.WithQueueShare (the default plugins plus queue share and
// DRF, which the enqueue action's budget needs), in its order and with
// default arguments.
func Default() *Config {
	c := &Config{Actions: slices.Clone(DefaultActions)}
	for _, p := range plugins.WithQueueShare() {
		c.Plugins = append(c.Plugins, PluginConfig{Name: p.Name()})
	}
	return c
}

// Load reads and validates the file at path; "" gives Default.
func Load(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes a YAML (or JSON) configuration strictly, fills omitted
// sections with the defaults and validates it.
func Parse(data []byte) (*Config, error) {
	c := &Config{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		// sigs.k8s.io/yaml converts to JSON first; its layered prefixes say
		// nothing to someone who wrote YAML.
		msg := err.Error()
		for _, prefix := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
			msg = strings.TrimPrefix(msg, prefix)
		}
		return nil, errors.New(msg)
	}
	def := Default()
	if c.Actions == nil {
		c.Actions = def.Actions
	}
	if c.Plugins == nil {
		c.Plugins = def.Plugins
	}
	if _, _, err := c.Build(); err != nil {
		return nil, err
	}
	return c, nil
}

// Build validates the configuration and makes its actions and plugins, in
// order. The error lists every problem, one per line, each naming its
// field.
func (c *Config) Build() ([]framework.Action, []framework.Plugin, error) {
	var errs []error
	if len(c.Actions) == 0 {
		errs = append(errs, errors.New("actions: at least one action is required"))
	}
	var acts []framework.Action
	seen := map[string]int{}
	for i, name := range c.Actions {
		newAction, ok := Actions[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("actions[%d]: unknown action %q; known: %s", i, name, known(Actions)))
		case seen[name] > 0:
			errs = append(errs, fmt.Errorf("actions[%d]: %q is already actions[%d]", i, name, seen[name]-1))
		default:
			acts = append(acts, newAction())
		}
		seen[name] = i + 1
	}

	if len(c.Plugins) == 0 {
		errs = append(errs, errors.New("plugins: at least one plugin is required"))
	}
	var plugs []framework.Plugin
	seen = map[string]int{}
	for i, pc := range c.Plugins {
		factory, ok := Plugins[pc.Name]
		switch {
		case pc.Name == "":
			errs = append(errs, fmt.Errorf("plugins[%d].name: required; known: %s", i, known(Plugins)))
			continue
		case !ok:
			errs = append(errs, fmt.Errorf("plugins[%d].name: unknown plugin %q; known: %s", i, pc.Name, known(Plugins)))
			continue
		case seen[pc.Name] > 0:
			errs = append(errs, fmt.Errorf("plugins[%d].name: %q is already plugins[%d]", i, pc.Name, seen[pc.Name]-1))
			continue
		}
		seen[pc.Name] = i + 1
		p, err := factory(pc.Arguments)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugins[%d].arguments (%s): %w", i, pc.Name, err))
			continue
		}
		plugs = append(plugs, p)
	}
	if len(c.Plugins) > 0 {
		for _, name := range slices.Sorted(maps.Keys(RequiredPlugins)) {
			if seen[name] == 0 {
				errs = append(errs, fmt.Errorf("plugins: %q is required: %s", name, RequiredPlugins[name]))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return acts, plugs, nil
}

func known[V any](m map[string]V) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
