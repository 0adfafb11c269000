package peers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/integrations/kubenative"
)

// KubeSchedulerName is the schedulerName of upstream kube-scheduler's
// default profile, the one pods get when they name no scheduler.
const KubeSchedulerName = corev1.DefaultSchedulerName

// KubeSchedulerOptions configure upstream kube-scheduler, as
// hack/controlplane.sh builds it, with its default profile: the reference
// the differential suite compares troupe-scheduler with.
type KubeSchedulerOptions struct {
	Options
	// GangScheduling turns on kube-scheduler's own gang scheduling
	// (kubenative.FeatureGate: the Workload API and the GangScheduling
	// plugin in the default profile), which the kube-scheduler gang backend
	// needs. The API server must serve the Workload API too.
	GangScheduling bool
}

// Validate reports every invalid option, naming the field and what it
// allows.
func (o KubeSchedulerOptions) Validate() error {
	return errors.Join(o.validateBuiltBy("hack/controlplane.sh")...)
}

// config is a KubeSchedulerConfiguration with one profile that names no
// plugins, so that kube-scheduler fills in its own defaults: what it
// places is what an unconfigured cluster's scheduler places.
func (o KubeSchedulerOptions) config() ([]byte, error) {
	c := kubeSchedulerConfiguration{APIVersion: "kubescheduler.config.k8s.io/v1", Kind: "KubeSchedulerConfiguration"}
	c.ClientConnection.Kubeconfig = o.Kubeconfig
	c.ClientConnection.QPS = o.QPS
	c.ClientConnection.Burst = o.Burst
	c.Profiles = []schedulerProfile{{SchedulerName: KubeSchedulerName}}
	return yaml.Marshal(c)
}

// StartKubeScheduler writes a KubeSchedulerConfiguration with the default
// profile (KubeSchedulerName, every default plugin) and starts
// kube-scheduler on it with leader election off and no ports open.
// Cancelling ctx stops it as Stop does. It needs nothing installed beyond
// what every API server serves.
func StartKubeScheduler(ctx context.Context, o KubeSchedulerOptions) (*Process, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid KubeSchedulerOptions:\n%w", err)
	}
	conf, err := o.config()
	if err != nil {
		return nil, err
	}
	// The same flags as Coscheduling's kube-scheduler: the configuration
	// file, and no HTTPS endpoint.
	args := CoschedulingOptions{Options: o.Options}.args
	if o.GangScheduling {
		args = func(dir string) []string {
			return append(CoschedulingOptions{Options: o.Options}.args(dir), "--feature-gates="+kubenative.FeatureGate)
		}
	}
	return startWithConfig(ctx, "kube-scheduler", kubeSchedulerConfigFile, conf, o.Options, args)
}
