package mpi

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/controllers/engine"
)

// DependentTypes are the kinds ReconcileDependents writes; the engine
// watches them so that a deleted or edited one is put back.
func (Framework) DependentTypes() []client.Object {
	return []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}}
}

// ReconcileDependents creates the hostfile ConfigMap and the launcher's
// ServiceAccount, Role and RoleBinding, owned by the job, and puts back what
// drifted: the worker list changes with a scale, discover_hosts.sh with
// every worker that starts or stops running.
func (f Framework) ReconcileDependents(ctx context.Context, c client.Client, job engine.Job) error {
	mpi := job.(*kubeflowv1.MPIJob)
	owner := metav1.NewControllerRef(mpi, f.GroupVersionKind())
	running, err := runningWorkers(ctx, c, mpi)
	if err != nil {
		return err
	}
	for _, d := range []dependent{
		serviceAccount(mpi, owner),
		configMap(mpi, owner, running),
		role(mpi, owner),
		roleBinding(mpi, owner),
	} {
		if err := ensure(ctx, c, mpi, d); err != nil {
			return err
		}
	}
	return nil
}

// dependent is one object the job needs.
type dependent struct {
	kind string
	// want is the object as the job needs it; have receives the existing one.
	want, have client.Object
	// sync copies into have what differs from want and reports whether it
	// changed anything.
	sync func() bool
	// userOwned marks an object the user named: created if missing, as
	// upstream does, but never taken over or changed.
	userOwned bool
}

// ensure creates a missing dependent and brings one the job controls back
// to what it wants. It refuses one of the same name that the job does not
// control: binding the launcher's Role to someone else's ServiceAccount or
// mounting someone else's hostfile would hand them the job.
func ensure(ctx context.Context, c client.Client, job *kubeflowv1.MPIJob, d dependent) error {
	key := client.ObjectKeyFromObject(d.want)
	err := c.Get(ctx, key, d.have)
	if apierrors.IsNotFound(err) {
		// AlreadyExists means the cache is behind our own create; the
		// object's watch event brings the job back.
		if err := c.Create(ctx, d.want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", d.kind, key.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", d.kind, key.Name, err)
	}
	if d.userOwned && !metav1.IsControlledBy(d.have, job) {
		return nil
	}
	if !metav1.IsControlledBy(d.have, job) {
		return fmt.Errorf("%s %s already exists and is not controlled by MPIJob %s", d.kind, key.Name, job.Name)
	}
	if !d.sync() {
		return nil
	}
	// A conflict means a newer version is on its way to the cache; its
	// watch event brings the job back.
	if err := c.Update(ctx, d.have); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update %s %s: %w", d.kind, key.Name, err)
	}
	return nil
}

func dependentMeta(job *kubeflowv1.MPIJob, owner *metav1.OwnerReference, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       job.Namespace,
		Labels:          map[string]string{"app": job.Name},
		OwnerReferences: []metav1.OwnerReference{*owner},
	}
}

// syncLabels adds the labels we set and leaves any others alone.
func syncLabels(have, want client.Object) bool {
	l := have.GetLabels()
	changed := false
	for k, v := range want.GetLabels() {
		if cur, ok := l[k]; !ok || cur != v {
			if l == nil {
				l = map[string]string{}
			}
			l[k] = v
			changed = true
		}
	}
	have.SetLabels(l)
	return changed
}

func serviceAccount(job *kubeflowv1.MPIJob, owner *metav1.OwnerReference) dependent {
	name, userOwned := launcherName(job), false
	if sa := launcherServiceAccountName(job); sa != "" {
		name, userOwned = sa, true
	}
	want := &corev1.ServiceAccount{ObjectMeta: dependentMeta(job, owner, name)}
	have := &corev1.ServiceAccount{}
	return dependent{kind: "ServiceAccount", want: want, have: have, userOwned: userOwned,
		sync: func() bool { return syncLabels(have, want) }}
}

func configMap(job *kubeflowv1.MPIJob, owner *metav1.OwnerReference, runningWorkers []string) dependent {
	want := &corev1.ConfigMap{
		ObjectMeta: dependentMeta(job, owner, configMapName(job)),
		Data: map[string]string{
			hostfileKey:      hostfile(job),
			kubexecKey:       kubexec(job),
			discoverHostsKey: discoverHosts(job, runningWorkers),
		},
	}
	have := &corev1.ConfigMap{}
	return dependent{kind: "ConfigMap", want: want, have: have, sync: func() bool {
		changed := syncLabels(have, want)
		if !maps.Equal(have.Data, want.Data) {
			have.Data = want.Data
			changed = true
		}
		return changed
	}}
}

func role(job *kubeflowv1.MPIJob, owner *metav1.OwnerReference) dependent {
	want := &rbacv1.Role{ObjectMeta: dependentMeta(job, owner, launcherName(job)), Rules: launcherRules(job)}
	have := &rbacv1.Role{}
	return dependent{kind: "Role", want: want, have: have, sync: func() bool {
		changed := syncLabels(have, want)
		if !apiequality.Semantic.DeepEqual(have.Rules, want.Rules) {
			have.Rules = want.Rules
			changed = true
		}
		return changed
	}}
}

// launcherRules let the launcher find pods, as kubectl exec does first, and
// exec into exactly this job's workers. Upstream leaves resourceNames empty
// for a job without workers, which grants exec into every pod of the
// namespace; such a job gets no exec rule at all.
func launcherRules(job *kubeflowv1.MPIJob) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{
		Verbs:     []string{"get", "list", "watch"},
		APIGroups: []string{""},
		Resources: []string{"pods"},
	}}
	if workers := workerPodNames(job); len(workers) > 0 {
		rules = append(rules, rbacv1.PolicyRule{
			Verbs:         []string{"create"},
			APIGroups:     []string{""},
			Resources:     []string{"pods/exec"},
			ResourceNames: workers,
		})
	}
	return rules
}

func roleBinding(job *kubeflowv1.MPIJob, owner *metav1.OwnerReference) dependent {
	sa := launcherServiceAccountName(job)
	if sa == "" {
		sa = launcherName(job)
	}
	want := &rbacv1.RoleBinding{
		ObjectMeta: dependentMeta(job, owner, launcherName(job)),
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: job.Namespace}},
		// roleRef is immutable, and ours is always the Role of the same name.
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: launcherName(job)},
	}
	have := &rbacv1.RoleBinding{}
	return dependent{kind: "RoleBinding", want: want, have: have, sync: func() bool {
		changed := syncLabels(have, want)
		if !apiequality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
			have.Subjects = want.Subjects
			changed = true
		}
		return changed
	}}
}

// launcherServiceAccountName is the ServiceAccount the user chose for the
// launcher, if any; the Role is then bound to it.
func launcherServiceAccountName(job *kubeflowv1.MPIJob) string {
	if spec := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]; spec != nil {
		return spec.Template.Spec.ServiceAccountName
	}
	return ""
}

// runningWorkers returns the names of the job's running worker pods, sorted
// so that discover_hosts.sh does not churn. A terminating pod takes no new
// ranks, so it is left out.
func runningWorkers(ctx context.Context, c client.Client, job *kubeflowv1.MPIJob) ([]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{
		kubeflowv1.OperatorNameLabel: ControllerName,
		kubeflowv1.JobNameLabel:      job.Name,
		kubeflowv1.ReplicaTypeLabel:  engine.ReplicaTypeLabelValue(kubeflowv1.MPIJobReplicaTypeWorker),
	}); err != nil {
		return nil, fmt.Errorf("list worker pods: %w", err)
	}
	var names []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && metav1.IsControlledBy(p, job) {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
