package peers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
)

// CoschedulingSchedulerName is the schedulerName of the kube-scheduler
// profile StartCoscheduling runs: scheduler-plugins' own chart's, which the
// operator's --gang-scheduler-name=scheduler-plugins gives pods.
const CoschedulingSchedulerName = schedulerplugins.DefaultSchedulerName

// CoschedulingOptions configure kube-scheduler with Coscheduling.
type CoschedulingOptions struct {
	Options
	// PermitWaitingTime is how long the placed pods of an incomplete gang
	// wait at Permit for the rest before they are all sent back; whole
	// seconds, 0 is the plugin's default (60s).
	PermitWaitingTime time.Duration
}

// Validate reports every invalid option, naming the field and what it
// allows.
func (o CoschedulingOptions) Validate() error {
	errs := o.validate()
	if o.PermitWaitingTime < 0 || o.PermitWaitingTime%time.Second != 0 {
		errs = append(errs, fieldError("PermitWaitingTime", "must be whole seconds, 0 (the plugin's default, 60s) or more, got %v", o.PermitWaitingTime))
	}
	return errors.Join(errs...)
}

// kubeSchedulerConfiguration is the part of
// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration set here.
type kubeSchedulerConfiguration struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	LeaderElection struct {
		LeaderElect bool `json:"leaderElect"`
	} `json:"leaderElection"`
	ClientConnection struct {
		Kubeconfig string  `json:"kubeconfig"`
		QPS        float64 `json:"qps,omitempty"`
		Burst      int     `json:"burst,omitempty"`
	} `json:"clientConnection"`
	Profiles []schedulerProfile `json:"profiles"`
}

type schedulerProfile struct {
	SchedulerName string               `json:"schedulerName"`
	Plugins       map[string]pluginSet `json:"plugins,omitempty"`
	PluginConfig  []map[string]any     `json:"pluginConfig,omitempty"`
}

type pluginSet struct {
	Enabled  []pluginName `json:"enabled,omitempty"`
	Disabled []pluginName `json:"disabled,omitempty"`
}

type pluginName struct {
	Name string `json:"name"`
}

// config is scheduler-plugins v0.34.7's documented Coscheduling profile
// (pkg/coscheduling/README.md): multiPoint enables the plugin at every
// extension point it implements (PreEnqueue, PreFilter, PostFilter, Permit,
// Reserve and the rest) beside the default plugins, and it replaces the
// default queue sort, as there can be only one.
func (o CoschedulingOptions) config() ([]byte, error) {
	const coscheduling = "Coscheduling"
	c := kubeSchedulerConfiguration{APIVersion: "kubescheduler.config.k8s.io/v1", Kind: "KubeSchedulerConfiguration"}
	c.ClientConnection.Kubeconfig = o.Kubeconfig
	c.ClientConnection.QPS = o.QPS
	c.ClientConnection.Burst = o.Burst
	profile := schedulerProfile{
		SchedulerName: CoschedulingSchedulerName,
		Plugins: map[string]pluginSet{
			"multiPoint": {Enabled: []pluginName{{coscheduling}}},
			"queueSort":  {Enabled: []pluginName{{coscheduling}}, Disabled: []pluginName{{"*"}}},
		},
	}
	if o.PermitWaitingTime > 0 {
		profile.PluginConfig = []map[string]any{{
			"name": coscheduling,
			"args": map[string]any{"permitWaitingTimeSeconds": int64(o.PermitWaitingTime / time.Second)},
		}}
	}
	c.Profiles = []schedulerProfile{profile}
	return yaml.Marshal(c)
}

const kubeSchedulerConfigFile = "kube-scheduler.yaml"

func (o CoschedulingOptions) args(dir string) []string {
	args := []string{
		"--config=" + filepath.Join(dir, kubeSchedulerConfigFile),
		// No HTTPS endpoint: nothing reads its health or metrics here, and
		// several schedulers may run side by side.
		"--secure-port=0",
	}
	// The client limits are in the configuration file.
	return append(args, o.verbosityArgs()...)
}

// StartCoscheduling writes a KubeSchedulerConfiguration with one profile,
// CoschedulingSchedulerName, that runs the Coscheduling plugin, and starts
// kube-scheduler (scheduler-plugins' build) on it with leader election off
// and no ports open. Cancelling ctx stops it as Stop does. The API server
// must serve what InstallCoscheduling installs.
func StartCoscheduling(ctx context.Context, o CoschedulingOptions) (*Process, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid CoschedulingOptions:\n%w", err)
	}
	conf, err := o.config()
	if err != nil {
		return nil, err
	}
	return startWithConfig(ctx, "kube-scheduler", kubeSchedulerConfigFile, conf, o.Options, o.args)
}
