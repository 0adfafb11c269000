// Package operator wires the job controllers into a controller-runtime
// manager: the operator's flags, their validation, and the frameworks a
// flag can enable.
package operator

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/troupe-ml/troupe/controllers/mpi"
	"github.com/troupe-ml/troupe/internal/cmdutil"
)

// Options are the operator's settings, one per flag.
type Options struct {
	Kubeconfig              string
	EnabledSchemes          schemeList
	Namespace               string
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaderElection          cmdutil.LeaderElectionTiming
	QPS                     float64
	Burst                   int
	GangSchedulerName       string
	// WaitForPodGroupAdmission holds a gang's pods back until its backend
	// admits the PodGroup (Volcano's Inqueue).
	WaitForPodGroupAdmission bool
	MPIKubectlDeliveryImage  string
	// VolcanoHyperNodeTopology names the Topology the operator generates
	// Volcano HyperNodes from; empty generates none.
	VolcanoHyperNodeTopology string
}

// NewOptions returns the defaults: every framework, all namespaces.
func NewOptions() *Options {
	return &Options{
		EnabledSchemes:           schemeList{values: FrameworkNames()},
		MetricsBindAddress:       ":8080",
		HealthProbeBindAddress:   ":8081",
		LeaderElectionID:         "troupe-operator.troupe.dev",
		LeaderElection:           cmdutil.DefaultLeaderElectionTiming(),
		QPS:                      50,
		MPIKubectlDeliveryImage:  mpi.DefaultKubectlDeliveryImage,
		Burst:                    100,
		WaitForPodGroupAdmission: true,
	}
}

// BindFlags registers the options on a flag set.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.Var(&o.EnabledSchemes, "enable-scheme", fmt.Sprintf("Job kinds to run, comma-separated or repeated; one of %s (default: all).", strings.Join(FrameworkNames(), ", ")))
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Watch jobs only in this namespace (default: all namespaces).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; 0 turns it off.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader, so that only one replica of the operator acts at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election Lease (default: the operator's own).")
	o.LeaderElection.BindFlags(fs)
	fs.Float64Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to the API server, all of the operator's clients together (one token bucket; the leader election lease has its own); a negative value sets no client-side limit.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to the API server.")
	fs.StringVar(&o.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image", o.MPIKubectlDeliveryImage, "Image of the MPIJob launcher's init container that delivers kubectl for kubexec.sh.")
	fs.StringVar(&o.GangSchedulerName, "gang-scheduler-name", o.GangSchedulerName, fmt.Sprintf("Gang-scheduling backend: %s, or the name of a coscheduling-compatible scheduler; empty means none. A job's troupe.dev/gang-scheduler-name annotation overrides it for that job.", strings.Join(KnownGangBackends, ", ")))
	fs.StringVar(&o.VolcanoHyperNodeTopology, "volcano-hypernode-topology", o.VolcanoHyperNodeTopology, "Generate Volcano HyperNodes from the nodes' labels by this Topology (scheduling.troupe.dev), so that the volcano backend keeps the Pack rules of jobs placed by it; empty generates none. Only where Volcano is installed, and no other HyperNodes describe the cluster.")
	fs.BoolVar(&o.WaitForPodGroupAdmission, "wait-for-podgroup-admission", o.WaitForPodGroupAdmission, "Create a gang's pods only once its backend admits the PodGroup (Volcano's Inqueue), as Kubeflow's training-operator does; false creates them at once.")
}

// Schemes returns the job kinds to run.
func (o *Options) Schemes() []string { return o.EnabledSchemes.values }

// Validate reports every invalid option, naming the flag and what it allows.
func (o *Options) Validate() error {
	var errs []error
	if len(o.EnabledSchemes.values) == 0 {
		errs = append(errs, fmt.Errorf("--enable-scheme: at least one of %s is required", strings.Join(FrameworkNames(), ", ")))
	}
	for _, s := range o.EnabledSchemes.values {
		if !slices.Contains(FrameworkNames(), s) {
			errs = append(errs, fmt.Errorf("--enable-scheme: unknown job kind %q; allowed: %s", s, strings.Join(FrameworkNames(), ", ")))
		}
	}
	if o.Namespace != "" {
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace: %q is not a valid namespace name: %s", o.Namespace, strings.Join(msgs, "; ")))
		}
	}
	if o.QPS == 0 {
		errs = append(errs, errors.New("--kube-api-qps: must be greater than 0, or negative for no client-side limit, got 0"))
	}
	if o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: must be at least 1, got %d", o.Burst))
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id: must not be empty when --leader-elect is set"))
	}
	errs = append(errs, o.LeaderElection.Validate()...)
	if _, err := newGangBackend(o.GangSchedulerName); err != nil {
		errs = append(errs, err)
	}
	if o.VolcanoHyperNodeTopology != "" {
		if msgs := validation.IsDNS1123Subdomain(o.VolcanoHyperNodeTopology); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--volcano-hypernode-topology: %q is not a Topology name (a DNS subdomain: lower-case letters, digits, '-' and '.'): %s; empty generates no HyperNodes", o.VolcanoHyperNodeTopology, strings.Join(msgs, "; ")))
		}
	}
	if o.MPIKubectlDeliveryImage == "" {
		errs = append(errs, errors.New("--mpi-kubectl-delivery-image: must not be empty"))
	}
	return errors.Join(errs...)
}

// schemeList is a flag that takes comma-separated values and may repeat;
// its first use on the command line replaces the default.
type schemeList struct {
	values   []string
	explicit bool
}

func (s *schemeList) String() string { return strings.Join(s.values, ",") }

func (s *schemeList) Set(v string) error {
	if !s.explicit {
		s.values, s.explicit = nil, true
	}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			s.values = append(s.values, part)
		}
	}
	return nil
}

// KubeconfigPath is the --kubeconfig flag; empty follows the usual rules.
func (o *Options) KubeconfigPath() string { return o.Kubeconfig }
