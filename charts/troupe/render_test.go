package troupe_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/internal/operator"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	operatorName  = release + "-operator"
	schedulerName = release + "-scheduler"
)

// Each backend value becomes the operator's --gang-scheduler-name, and
// only backend troupe brings Troupe's scheduler; the rendered flags are
// ones the binaries accept.
func TestBackends(t *testing.T) {
	tests := []struct {
		name          string
		set           []string
		wantGangFlag  string
		wantScheduler bool
		// wantHyperNodes is the operator's --volcano-hypernode-topology.
		wantHyperNodes string
	}{
		{name: "troupe (the default)", wantGangFlag: "troupe", wantScheduler: true},
		{name: "volcano", set: []string{"backend=volcano"}, wantGangFlag: "volcano"},
		{
			name: "volcano with HyperNodes from a Topology", set: []string{"backend=volcano", "volcanoHyperNodeTopology=fabric"},
			wantGangFlag: "volcano", wantHyperNodes: "fabric",
		},
		{name: "scheduler-plugins", set: []string{"backend=scheduler-plugins"}, wantGangFlag: "scheduler-plugins"},
		{
			name:         "scheduler-plugins under its own scheduler name",
			set:          []string{"backend=scheduler-plugins", "coschedulingSchedulerName=coscheduler"},
			wantGangFlag: "coscheduler",
		},
		{name: "kube-scheduler", set: []string{"backend=kube-scheduler"}, wantGangFlag: "kube-scheduler"},
		{name: "none", set: []string{"backend=none"}, wantGangFlag: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, setFlags(tt.set)...)

			op := deployment(t, r, operatorName)
			opArgs := op.Spec.Template.Spec.Containers[0].Args
			if got, _ := flagValue(opArgs, "gang-scheduler-name"); got != tt.wantGangFlag {
				t.Errorf("operator --gang-scheduler-name = %q, want %q (args %v)", got, tt.wantGangFlag, opArgs)
			}
			if got, _ := flagValue(opArgs, "volcano-hypernode-topology"); got != tt.wantHyperNodes {
				t.Errorf("operator --volcano-hypernode-topology = %q, want %q (args %v)", got, tt.wantHyperNodes, opArgs)
			}
			if _, err := operator.ParseFlags(opArgs, io.Discard); err != nil {
				t.Errorf("the operator rejects the chart's flags %v: %v", opArgs, err)
			}

			for _, kind := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service"} {
				name := schedulerName
				if kind == "Service" {
					name += "-metrics"
				}
				if got := r.get(kind, name) != nil; got != tt.wantScheduler {
					t.Errorf("%s %s rendered: %v, want %v", kind, name, got, tt.wantScheduler)
				}
			}
			if tt.wantScheduler {
				checkSchedulerFlags(t, r)
			}
		})
	}
}

// setFlags turns key=value pairs into helm's --set flags.
func setFlags(values []string) []string {
	var args []string
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return args
}

// checkSchedulerFlags parses the scheduler Deployment's flags as the
// binary does, with --config pointing at a copy of the chart's ConfigMap.
func checkSchedulerFlags(t *testing.T, r rendered) *app.Options {
	t.Helper()
	d := deployment(t, r, schedulerName)
	c := d.Spec.Template.Spec.Containers[0]
	path, ok := flagValue(c.Args, "config")
	if !ok {
		t.Fatalf("the scheduler gets no --config: %v", c.Args)
	}
	if len(c.VolumeMounts) != 1 || filepath.Dir(path) != c.VolumeMounts[0].MountPath {
		t.Fatalf("--config=%s is not in the mounted ConfigMap: %+v", path, c.VolumeMounts)
	}
	cm := into[corev1.ConfigMap](t, r, "ConfigMap", schedulerName)
	data, ok := cm.Data[filepath.Base(path)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s: %v", cm.Name, filepath.Base(path), cm.Data)
	}
	local := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(local, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(c.Args)
	args[slices.Index(args, "--config="+path)] = "--config=" + local
	opts, err := app.ParseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("the scheduler rejects the chart's flags %v: %v", c.Args, err)
	}
	return opts
}

// The scheduler's configuration and tuning values reach the binary, and a
// new configuration rolls its pods.
func TestSchedulerValues(t *testing.T) {
	def := render(t)
	if opts := checkSchedulerFlags(t, def); !slices.Equal(opts.Config.Actions, config.Default().Actions) {
		t.Errorf("default configuration: actions %v, want the scheduler's defaults %v", opts.Config.Actions, config.Default().Actions)
	}

	custom := render(t,
		"--set-json", `scheduler.config={"actions":["enqueue","preempt","allocate","backfill"],"plugins":[{"name":"gang"},{"name":"predicates"},{"name":"nodeorder","arguments":{"gpuResources":["amd.com/gpu"]}}]}`,
		"--set", "scheduler.minCyclePeriod=50ms", "--set", "scheduler.maxIdlePeriod=2s", "--set", "scheduler.bindWorkers=32",
		"--set", "scheduler.statusWriteWorkers=4",
		"--set", "scheduler.partialGangGracePeriod=45s", "--set", "scheduler.unschedulableRefreshPeriod=20s")
	opts := checkSchedulerFlags(t, custom)
	if want := []string{"enqueue", "preempt", "allocate", "backfill"}; !slices.Equal(opts.Config.Actions, want) {
		t.Errorf("actions = %v, want %v", opts.Config.Actions, want)
	}
	var plugins []string
	for _, p := range opts.Config.Plugins {
		plugins = append(plugins, p.Name)
	}
	if want := []string{"gang", "predicates", "nodeorder"}; !slices.Equal(plugins, want) {
		t.Errorf("plugins = %v, want %v", plugins, want)
	}
	if opts.MinCyclePeriod.String() != "50ms" || opts.MaxIdlePeriod.String() != "2s" || opts.BindWorkers != 32 || opts.StatusWriteWorkers != 4 ||
		opts.PartialGangGrace.String() != "45s" || opts.UnschedulableRefresh.String() != "20s" {
		t.Errorf("tuning not applied: min cycle %v, max idle %v, bind workers %d, status write workers %d, partial-gang grace %v, unschedulable refresh %v",
			opts.MinCyclePeriod, opts.MaxIdlePeriod, opts.BindWorkers, opts.StatusWriteWorkers, opts.PartialGangGrace, opts.UnschedulableRefresh)
	}

	checksum := func(r rendered) string {
		return deployment(t, r, schedulerName).Spec.Template.Annotations["checksum/config"]
	}
	if a, b := checksum(def), checksum(custom); a == "" || a == b {
		t.Errorf("checksum/config %q and %q: a new configuration must roll the scheduler's pods", a, b)
	}
}

// The operator's values reach its flags.
func TestOperatorValues(t *testing.T) {
	r := render(t,
		"--set", "operator.watchNamespace=team-a",
		"--set-json", `operator.enabledSchemes=["pytorchjob","mpijob"]`,
		"--set", "operator.waitForPodGroupAdmission=false",
		"--set", "operator.mpiKubectlDeliveryImage=registry.example/kubectl:1",
		"--set", "operator.replicas=3",
		"--set-json", "operator.kubeAPI={\"qps\":200,\"burst\":400}")
	d := deployment(t, r, operatorName)
	opts, err := operator.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Namespace != "team-a" || !slices.Equal(opts.Schemes(), []string{"pytorchjob", "mpijob"}) || opts.WaitForPodGroupAdmission ||
		opts.MPIKubectlDeliveryImage != "registry.example/kubectl:1" || opts.QPS != 200 || opts.Burst != 400 || !opts.LeaderElect {
		t.Errorf("values not applied: %+v", opts)
	}
	if got := *d.Spec.Replicas; got != 3 {
		t.Errorf("replicas = %d, want 3", got)
	}
}

// With watchNamespace the operator's ClusterRole is bound in that
// namespace only.
func TestWatchNamespaceBindsInThatNamespaceOnly(t *testing.T) {
	r := render(t, "--set", "operator.watchNamespace=team-a")
	if r.get("ClusterRoleBinding", operatorName) != nil {
		t.Errorf("ClusterRoleBinding %s rendered: the operator would act in every namespace", operatorName)
	}
	rb := into[rbacv1.RoleBinding](t, r, "RoleBinding", operatorName)
	if rb.Namespace != "team-a" || rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != operatorName {
		t.Errorf("RoleBinding %s/%s binds %s %s; want the ClusterRole %s in team-a", rb.Namespace, rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name, operatorName)
	}
	if r.get("ClusterRoleBinding", schedulerName) == nil {
		t.Errorf("the scheduler places pods of every namespace; its ClusterRoleBinding is missing")
	}
}

// Every Deployment runs as non-root with a read-only root filesystem, no
// privilege escalation and no capabilities, has probes on the port its
// binary serves them on, resources, and a metrics Service.
func TestDeploymentsAreHardened(t *testing.T) {
	r := render(t)
	deployments := r.ofKind("Deployment")
	if len(deployments) != 2 {
		t.Fatalf("%d Deployments rendered, want the operator's and the scheduler's", len(deployments))
	}
	for _, u := range deployments {
		d := deployment(t, r, u.GetName())
		pod := d.Spec.Template.Spec
		if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: pod securityContext.runAsNonRoot is not true: %+v", d.Name, pod.SecurityContext)
		}
		if pod.ServiceAccountName != d.Name {
			t.Errorf("%s: runs as ServiceAccount %q, want its own", d.Name, pod.ServiceAccountName)
		}
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", d.Name, len(pod.Containers))
		}
		c := pod.Containers[0]
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s: no container securityContext", d.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s: root filesystem is writable", d.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s: privilege escalation is allowed", d.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
			t.Errorf("%s: capabilities not all dropped: %+v", d.Name, sc.Capabilities)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v want CPU and memory requests and a memory limit", d.Name, c.Resources)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for flag, port := range map[string]string{"health-probe-bind-address": "health", "metrics-bind-address": "metrics"} {
			if v, _ := flagValue(c.Args, flag); v != ":"+strconv.Itoa(int(ports[port])) {
				t.Errorf("%s: --%s=%s, but the container port %q is %d", d.Name, flag, v, port, ports[port])
			}
		}
		for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
				t.Errorf("%s: want a probe on %s at port health, got %+v", d.Name, path, probe)
			}
		}
		if v, _ := flagValue(c.Args, "leader-elect"); v != "true" {
			t.Errorf("%s: --leader-elect=%q, want true by default", d.Name, v)
		}
		svc := into[corev1.Service](t, r, "Service", d.Name+"-metrics")
		if svc.Spec.Ports[0].TargetPort.String() != "metrics" || !selects(svc.Spec.Selector, d.Spec.Template.Labels) ||
			selects(svc.Spec.Selector, otherComponent(t, r, d.Name)) {
			t.Errorf("Service %s does not select %s's metrics port alone: %+v", svc.Name, d.Name, svc.Spec)
		}
	}
}

func otherComponent(t *testing.T, r rendered, name string) map[string]string {
	other := schedulerName
	if name == schedulerName {
		other = operatorName
	}
	return deployment(t, r, other).Spec.Template.Labels
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// The chart's CRDs are config/crd/bases, generated from the API types;
// crds.kubeflow=false leaves out the kubeflow.org ones for a cluster that
// has them already, and crds.keep keeps them on uninstall.
func TestCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	want := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want[crd.Name] = crd
	}
	troupeOnly := sets.New[string]()
	for name, crd := range want {
		if crd.Spec.Group != "kubeflow.org" {
			troupeOnly.Insert(name)
		}
	}
	if troupeOnly.Len() != 3 || troupeOnly.Len() == len(want) {
		t.Fatalf("config/crd/bases: want the kubeflow.org kinds and Troupe's PodGroup, Queue and Topology, found %v", sets.KeySet(want))
	}

	tests := []struct {
		name     string
		set      []string
		wantCRDs sets.Set[string]
		wantKeep bool
	}{
		{name: "default", wantCRDs: sets.KeySet(want), wantKeep: true},
		{name: "without the kubeflow.org CRDs", set: []string{"crds.kubeflow=false"}, wantCRDs: troupeOnly, wantKeep: true},
		{name: "without any CRD", set: []string{"crds.install=false"}, wantCRDs: sets.New[string]()},
		{name: "removed on uninstall", set: []string{"crds.keep=false"}, wantCRDs: sets.KeySet(want)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, setFlags(tt.set)...)
			got := sets.New[string]()
			for _, u := range r.ofKind("CustomResourceDefinition") {
				got.Insert(u.GetName())
				crd := into[apiextensionsv1.CustomResourceDefinition](t, r, "CustomResourceDefinition", u.GetName())
				if !equality.Semantic.DeepEqual(crd.Spec, want[crd.Name].Spec) {
					t.Errorf("CRD %s: the chart's spec differs from config/crd/bases; run make generate", crd.Name)
				}
				if keep := crd.Annotations["helm.sh/resource-policy"] == "keep"; keep != tt.wantKeep {
					t.Errorf("CRD %s: helm.sh/resource-policy=keep is %v, want %v", crd.Name, keep, tt.wantKeep)
				}
			}
			if !got.Equal(tt.wantCRDs) {
				t.Errorf("CRDs rendered %v, want %v", sets.List(got), sets.List(tt.wantCRDs))
			}
		})
	}
}

// The chart grants each component exactly what config/rbac (the code's
// markers) grants, with the leader-election Lease only in the release's
// namespace and no wildcard anywhere.
func TestRBACIsTheMarkers(t *testing.T) {
	r := render(t)
	for _, component := range []string{"operator", "scheduler"} {
		t.Run(component, func(t *testing.T) {
			name := release + "-" + component
			markers, err := markerRules(component)
			if err != nil {
				t.Fatal(err)
			}
			cr := into[rbacv1.ClusterRole](t, r, "ClusterRole", name)
			role := into[rbacv1.Role](t, r, "Role", name+"-local")
			if role.Namespace != namespace {
				t.Errorf("Role %s is in %q, want the release's namespace %q", role.Name, role.Namespace, namespace)
			}
			clusterWide, local := grants(cr.Rules), grants(role.Rules)
			for g := range local {
				if g.group != "coordination.k8s.io" || g.resource != "leases" {
					t.Errorf("the namespaced Role grants %v; only the leader-election Lease belongs there", g)
				}
			}
			for g := range clusterWide {
				if g.resource == "leases" {
					t.Errorf("the ClusterRole grants %v: Leases belong in the release's namespace only", g)
				}
			}
			if got := clusterWide.Union(local); !got.Equal(markers) {
				t.Errorf("the chart grants %v beyond the markers and lacks %v", sorted(got.Difference(markers)), sorted(markers.Difference(got)))
			}
			if !local.HasAny(leaseGrants("get", "create", "update")...) {
				t.Errorf("no leader-election Lease in the release's namespace: %v", sorted(local))
			}
		})
	}
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, u := range r.ofKind(kind) {
			for g := range grants(into[rbacv1.ClusterRole](t, r, kind, u.GetName()).Rules) {
				if g.group == "*" || g.resource == "*" || g.verb == "*" {
					t.Errorf("%s %s grants a wildcard: %v", kind, u.GetName(), g)
				}
			}
		}
	}
}

// grant is one (API group, resource, verb) a rule allows.
type grant struct{ group, resource, verb string }

func (g grant) String() string {
	if g.group == "" {
		return g.verb + " " + g.resource
	}
	return g.verb + " " + g.resource + "." + g.group
}

func grants(rules []rbacv1.PolicyRule) sets.Set[grant] {
	out := sets.New[grant]()
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out.Insert(grant{g, res, v})
				}
			}
		}
	}
	return out
}

// sorted lists grants for a message.
func sorted(s sets.Set[grant]) []string {
	out := make([]string, 0, s.Len())
	for g := range s {
		out = append(out, g.String())
	}
	slices.Sort(out)
	return out
}

func leaseGrants(verbs ...string) []grant {
	var out []grant
	for _, v := range verbs {
		out = append(out, grant{"coordination.k8s.io", "leases", v})
	}
	return out
}

// markerRules is what config/rbac/<component>/role.yaml, generated from
// the code's markers, grants.
func markerRules(component string) (sets.Set[grant], error) {
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", component, "role.yaml"))
	if err != nil {
		return nil, err
	}
	objs, err := parseManifests(string(raw))
	if err != nil {
		return nil, err
	}
	out := sets.New[grant]()
	for _, o := range objs {
		// A ClusterRole or a Role: the rules are what counts.
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			return nil, err
		}
		out = out.Union(grants(role.Rules))
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("config/rbac/%s grants nothing", component)
	}
	return out, nil
}

// metrics.serviceMonitor: off by default; on, a ServiceMonitor per
// component selects that component's metrics Service and its port; it
// stops the install, naming the value, where it could not work.
func TestServiceMonitor(t *testing.T) {
	if got := render(t).ofKind("ServiceMonitor"); len(got) != 0 {
		t.Errorf("%d ServiceMonitors rendered by default; want none", len(got))
	}
	r := render(t, "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.interval=30s",
		"--set", "metrics.serviceMonitor.labels.release=prometheus")
	for _, name := range []string{operatorName, schedulerName} {
		sm := r.get("ServiceMonitor", name)
		if sm == nil {
			t.Fatalf("no ServiceMonitor %s", name)
		}
		svc := into[corev1.Service](t, r, "Service", name+"-metrics")
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		if !selects(selector, svc.Labels) {
			t.Errorf("ServiceMonitor %s selects %v; Service %s has labels %v", name, selector, svc.Name, svc.Labels)
		}
		if selects(selector, into[corev1.Service](t, r, "Service", otherService(name)).Labels) {
			t.Errorf("ServiceMonitor %s also selects %s", name, otherService(name))
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name || endpoints[0].(map[string]any)["interval"] != "30s" {
			t.Errorf("ServiceMonitor %s endpoints %v; want port %q every 30s", name, endpoints, svc.Spec.Ports[0].Name)
		}
		if sm.GetLabels()["release"] != "prometheus" {
			t.Errorf("ServiceMonitor %s labels %v lack release=prometheus", name, sm.GetLabels())
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the cluster has no ServiceMonitor CRD", []string{"--set", "metrics.serviceMonitor.enabled=true"},
			"metrics.serviceMonitor.enabled: the cluster does not serve monitoring.coreos.com/v1 ServiceMonitor"},
		{"no metrics Service to scrape", []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.service.enabled=false"},
			"metrics.serviceMonitor.enabled: a ServiceMonitor scrapes the metrics Service; set metrics.service.enabled=true too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runHelm(append([]string{"template", release, chartDir()}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template %v: %v; want an error saying %q", tc.args, err, tc.want)
			}
		})
	}
}

func otherService(component string) string {
	if component == operatorName {
		return schedulerName + "-metrics"
	}
	return operatorName + "-metrics"
}
