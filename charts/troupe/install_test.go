package troupe_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/gangscheduler/app"
	"github.com/troupe-ml/troupe/internal/operator"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// serviceAccount is the user a component's pods act as.
func serviceAccount(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// access is one question to the authorizer: may the user do verb on the
// resource (with its subresource after a "/") of group, in namespace ns
// ("" for cluster-wide or cluster-scoped)?
type access struct {
	user, verb, group, resource, ns string
}

func (a access) String() string {
	what, where := a.resource, "cluster-wide"
	if a.group != "" {
		what += "." + a.group
	}
	if a.ns != "" {
		where = "in " + a.ns
	}
	return a.verb + " " + what + " " + where
}

// allowed asks the API server's authorizer with a SubjectAccessReview, as
// the user with the groups every ServiceAccount token carries.
func allowed(ctx context.Context, a access) (bool, error) {
	resource, sub, _ := strings.Cut(a.resource, "/")
	saNamespace := strings.Split(a.user, ":")[2]
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   a.user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: resource, Subresource: sub,
		},
	}}
	out, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// allowedAll answers many questions, a few at a time.
func allowedAll(ctx context.Context, questions []access) (map[access]bool, error) {
	var (
		mu      sync.Mutex
		answers = make(map[access]bool, len(questions))
		errs    []error
		wg      sync.WaitGroup
		slots   = make(chan struct{}, 8)
	)
	for _, q := range questions {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			ok, err := allowed(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", q, err))
			}
			answers[q] = ok
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return answers, nil
}

// servedResources lists every resource and subresource the API server
// serves, with its verbs and whether it is namespaced.
func servedResources() ([]metav1.APIResource, error) {
	_, lists, err := clientset.Discovery().ServerGroupsAndResources()
	if err != nil {
		return nil, err
	}
	seen := sets.New[string]()
	var out []metav1.APIResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if key := gv.Group + "/" + r.Name; !seen.Has(key) {
				seen.Insert(key)
				r.Group = gv.Group
				out = append(out, r)
			}
		}
	}
	return out, nil
}

var _ = Describe("helm install", func() {
	It("installs the CRDs, established, and both components", func(ctx SpecContext) {
		for _, name := range []string{"tfjobs.kubeflow.org", "pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org", "podgroups.scheduling.troupe.dev", "queues.scheduling.troupe.dev"} {
			Eventually(func(g Gomega) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
				g.Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
				established := false
				for _, c := range crd.Status.Conditions {
					established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
				}
				g.Expect(established).To(BeTrue(), name+" is not Established")
			}).Should(Succeed())
		}
		for _, name := range []string{operatorName, schedulerName} {
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &appsv1.Deployment{})).To(Succeed())
		}
		Expect(notes).To(ContainSubstring("Gang backend: troupe (--gang-scheduler-name=troupe)."))
	})

	// For every resource and subresource the API server serves, and every
	// verb it takes, each ServiceAccount is allowed exactly what a
	// ServiceAccount without any binding is, plus what its binary's
	// markers (config/rbac) grant, with the leader-election Lease only in
	// the release's namespace.
	It("gives each ServiceAccount exactly its markers' permissions", func(ctx SpecContext) {
		nobody := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: namespace}}
		Expect(env.Client.Create(ctx, nobody)).To(Succeed())
		resources, err := servedResources()
		Expect(err).NotTo(HaveOccurred())
		Expect(len(resources)).To(BeNumerically(">", 50), "discovery lists the built-in resources and the chart's CRDs")

		users := map[string]string{"operator": serviceAccount(namespace, operatorName), "scheduler": serviceAccount(namespace, schedulerName)}
		var questions []access
		for _, r := range resources {
			scopes := []string{""}
			if r.Namespaced {
				scopes = append(scopes, namespace, "default")
			}
			for _, verb := range r.Verbs {
				for _, ns := range scopes {
					for _, user := range append(slices.Collect(maps.Values(users)), serviceAccount(namespace, nobody.Name)) {
						questions = append(questions, access{user, verb, r.Group, r.Name, ns})
					}
				}
			}
		}
		answers, err := allowedAll(ctx, questions)
		Expect(err).NotTo(HaveOccurred())

		for component, user := range users {
			markers, err := markerRules(component)
			Expect(err).NotTo(HaveOccurred())
			var extra, missing []string
			checked := 0
			for q, got := range answers {
				if q.user != user {
					continue
				}
				checked++
				g := grant{q.group, q.resource, q.verb}
				isLease := g.group == "coordination.k8s.io" && g.resource == "leases"
				baseline := answers[access{serviceAccount(namespace, nobody.Name), q.verb, q.group, q.resource, q.ns}]
				want := baseline || (markers.Has(g) && (!isLease || q.ns == namespace))
				switch {
				case got && !want:
					extra = append(extra, q.String())
				case !got && want:
					missing = append(missing, q.String())
				}
			}
			slices.Sort(extra)
			slices.Sort(missing)
			Expect(checked).To(BeNumerically(">", 300))
			Expect(extra).To(BeEmpty(), "the %s may do more than its markers grant", component)
			Expect(missing).To(BeEmpty(), "the %s may not do what its markers grant", component)
		}
	})

	// The same, spelled out for what matters most.
	DescribeTable("denies what a binary does not need",
		func(ctx SpecContext, component string, a access) {
			a.user = serviceAccount(namespace, release+"-"+component)
			Expect(allowed(ctx, a)).To(BeFalse(), "%s may %s", component, a)
		},
		func(component string, a access) string { return "the " + component + " may not " + a.String() },
		Entry(nil, "operator", access{verb: "get", resource: "secrets"}),
		Entry(nil, "operator", access{verb: "list", resource: "secrets"}),
		Entry(nil, "operator", access{verb: "get", resource: "secrets", ns: namespace}),
		Entry(nil, "scheduler", access{verb: "list", resource: "secrets"}),
		Entry(nil, "scheduler", access{verb: "get", resource: "secrets", ns: namespace}),
		Entry(nil, "operator", access{verb: "*", resource: "pods", ns: "default"}),
		Entry(nil, "scheduler", access{verb: "*", resource: "pods", ns: "default"}),
		Entry(nil, "operator", access{verb: "get", resource: "*", ns: "default"}),
		Entry(nil, "operator", access{verb: "update", resource: "nodes"}),
		Entry(nil, "scheduler", access{verb: "update", resource: "nodes"}),
		Entry(nil, "operator", access{verb: "create", resource: "pods/binding", ns: "default"}),
		Entry(nil, "scheduler", access{verb: "create", resource: "pods", ns: "default"}),
		Entry(nil, "scheduler", access{verb: "update", resource: "podgroups", group: "scheduling.troupe.dev", ns: "default"}),
		Entry(nil, "operator", access{verb: "update", resource: "podgroups/status", group: "scheduling.troupe.dev", ns: "default"}),
		Entry(nil, "operator", access{verb: "escalate", resource: "roles", group: "rbac.authorization.k8s.io", ns: "default"}),
		Entry(nil, "operator", access{verb: "create", resource: "clusterroles", group: "rbac.authorization.k8s.io"}),
		Entry(nil, "operator", access{verb: "create", resource: "customresourcedefinitions", group: "apiextensions.k8s.io"}),
		Entry(nil, "operator", access{verb: "impersonate", resource: "serviceaccounts", ns: "default"}),
		Entry(nil, "operator", access{verb: "update", resource: "leases", group: "coordination.k8s.io", ns: "kube-system"}),
		Entry(nil, "scheduler", access{verb: "update", resource: "leases", group: "coordination.k8s.io", ns: "kube-system"}),
	)

	// The strongest check of all: the binaries, run with the flags of the
	// installed Deployments as their ServiceAccounts, do their jobs. A
	// TFJob's gang gets pods from the operator, bound by the scheduler, and
	// each holds its leader Lease in the release's namespace.
	It("runs both binaries as their ServiceAccounts, with the Deployments' flags", func(ctx SpecContext) {
		opArgs, _ := installedArgs(ctx, operatorName)
		schedArgs, configMap := installedArgs(ctx, schedulerName)
		path, ok := flagValue(schedArgs, "config")
		Expect(ok).To(BeTrue())
		local := filepath.Join(GinkgoT().TempDir(), filepath.Base(path))
		Expect(os.WriteFile(local, []byte(configMap[filepath.Base(path)]), 0o600)).To(Succeed())
		schedArgs[slices.Index(schedArgs, "--config="+path)] = "--config=" + local

		opOpts, err := operator.ParseFlags(inProcess(opArgs), io.Discard)
		Expect(err).NotTo(HaveOccurred())
		schedOpts, err := app.ParseFlags(inProcess(schedArgs), io.Discard)
		Expect(err).NotTo(HaveOccurred())
		Expect(opOpts.LeaderElect && schedOpts.LeaderElect).To(BeTrue())
		start(func(ctx context.Context) error {
			return operator.Run(ctx, impersonate(operatorName), opOpts, func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) })
		})
		start(func(ctx context.Context) error { return app.Run(ctx, impersonate(schedulerName), schedOpts) })

		Expect(testutil.CreateReadyNode(ctx, env.Client, testutil.MakeNode("node-a").Capacity("8", "32Gi").Obj())).To(Succeed())
		ns, err := testutil.CreateNamespace(ctx, env.Client, "jobs")
		Expect(err).NotTo(HaveOccurred())
		job := testutil.MakeTFJob("gang", ns.Name).
			ReplicaSpec(kubeflowv1.TFJobReplicaTypeWorker, testutil.MakeReplica(2, "tensorflow").Request(corev1.ResourceCPU, "2").Obj()).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			pods, err := testutil.JobPods(ctx, env.Client, ns.Name, "gang")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).To(Equal("node-a"), p.Name+" is not bound")
			}
		}).Should(Succeed())
		for _, name := range []string{operatorName, schedulerName} {
			lease := &coordinationv1.Lease{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lease)).To(Succeed())
			Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(BeEmpty(), name+" holds no Lease")
		}
	})

	It("binds an operator that watches one namespace in that namespace only", func(ctx SpecContext) {
		const other, otherNS = "team", "team-system"
		createNamespace(ctx, "team-a")
		out, err := helmInstall(other, otherNS, "--set", "backend=volcano", "--set", "crds.install=false", "--set", "operator.watchNamespace=team-a")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(And(ContainSubstring("Volcano v1.14 must be installed"), ContainSubstring("in namespace team-a only")))
		user := serviceAccount(otherNS, other+"-troupe-operator")
		for a, want := range map[access]bool{
			{user: user, verb: "create", resource: "pods", ns: "team-a"}:                                      true,
			{user: user, verb: "create", resource: "podgroups", group: "scheduling.volcano.sh", ns: "team-a"}: true,
			{user: user, verb: "update", resource: "leases", group: "coordination.k8s.io", ns: otherNS}:       true,
			{user: user, verb: "create", resource: "pods", ns: "team-b"}:                                      false,
			{user: user, verb: "list", resource: "pods"}:                                                      false,
			{user: user, verb: "list", resource: "tfjobs", group: "kubeflow.org"}:                             false,
			{user: user, verb: "update", resource: "leases", group: "coordination.k8s.io", ns: namespace}:     false,
			{user: user, verb: "create", resource: "pods", ns: otherNS}:                                       false,
		} {
			Expect(allowed(ctx, a)).To(Equal(want), "%s", a)
		}
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: otherNS, Name: other + "-troupe-scheduler"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "backend volcano brings no Troupe scheduler: %v", err)
	})

	It("refuses wrong values at install, naming the value, and installs nothing", func(ctx SpecContext) {
		bad := wrongValues[0]
		_, err := helmInstall("bad", "bad-system", bad.args...)
		Expect(err).To(MatchError(ContainSubstring(bad.want[0])))
		var deployments appsv1.DeploymentList
		Expect(env.Client.List(ctx, &deployments, client.MatchingLabels{"app.kubernetes.io/instance": "bad"})).To(Succeed())
		Expect(deployments.Items).To(BeEmpty())
		_, err = runHelm("status", "bad", "--namespace", "bad-system", "--kubeconfig", kubeconfig)
		Expect(err).To(MatchError(ContainSubstring("release: not found")))
	})
})

// installedArgs returns the flags of the installed Deployment's container,
// and the data of the ConfigMap of the same name, if any.
func installedArgs(ctx context.Context, name string) ([]string, map[string]string) {
	d := &appsv1.Deployment{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d)).To(Succeed())
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), err)
	}
	return slices.Clone(d.Spec.Template.Spec.Containers[0].Args), cm.Data
}

// inProcess adapts a pod's flags to a binary run in the test process: no
// ports, and the Lease in the release's namespace, which a pod would read
// from its ServiceAccount's namespace file.
func inProcess(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--metrics-bind-address=") && !strings.HasPrefix(a, "--health-probe-bind-address=") {
			out = append(out, a)
		}
	}
	return append(out, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-election-namespace="+namespace)
}

// impersonate is the API server as the component's ServiceAccount.
func impersonate(name string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount(namespace, name)}
	return cfg
}

// start runs a manager until the spec ends, and checks that it stops
// cleanly.
func start(run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
}
