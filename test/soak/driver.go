package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/localcluster"
	"github.com/troupe-ml/troupe/test/soak/check"
)

// Exit codes the driver fails members with through kwok's chaos stage.
const (
	// exitKilled is a container killed by SIGKILL (the OOM killer, a
	// node going down): retryable under restartPolicy ExitCode.
	exitKilled int32 = 137
	// exitError is a program that failed: permanent under ExitCode and
	// Never, retried under OnFailure.
	exitError int32 = 1
)

// driver is the seeded random driver: it applies and deletes jobs and
// injects faults into members and nodes. Its choices come from its own
// random stream, so that a seed replays the same sequence of choices
// (the system's timing, and so what each choice lands on, still varies).
type driver struct {
	r   *run
	rng *rand.Rand
	n   int

	mu sync.Mutex
	// faulted[job UID] is 1 + the gang generation the driver last broke
	// (failed, evicted, finished a member, deleted its node): one fault
	// per generation of a gang-restarted job, so that each restart has
	// one cause the checkers can name.
	faulted map[string]int32
	// injected[pod UID] is the exit code kwok is to fail it with.
	injected map[string]int32
	// deletedNodes and cordoned are when each comes back.
	deletedNodes map[string]time.Time
	cordoned     map[string]time.Time
}

func newDriver(r *run, seed uint64) *driver {
	return &driver{
		r: r, rng: rand.New(rand.NewPCG(seed, 1)),
		faulted: map[string]int32{}, injected: map[string]int32{},
		deletedNodes: map[string]time.Time{}, cordoned: map[string]time.Time{},
	}
}

// expDelay draws an exponential delay of the given mean, at most four
// means, so that actions come at random moments.
func expDelay(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(math.Min(rng.ExpFloat64(), 4) * float64(mean))
}

// jobView is a job with its pods, as the harness's watch shows it.
type jobView struct {
	kind string
	obj  client.Object
	job  check.Job
	pods []*corev1.Pod
	// want is how many pods its replicas ask for.
	want int
}

// view lists the jobs (by name), their pods and the nodes from the
// watch's cache, sorted, so that the random choices over them replay.
func (d *driver) view(ctx context.Context) ([]jobView, []corev1.Node, error) {
	c := d.r.obs.cache
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, nil, err
	}
	byJob := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil {
			byJob[string(ref.UID)] = append(byJob[string(ref.UID)], p)
		}
	}
	var jobs []jobView
	add := func(kind string, obj client.Object) {
		tj := obj.(check.TrainingJob)
		want := 0
		for _, s := range tj.ReplicaSpecs() {
			if s != nil && s.Replicas != nil {
				want += int(*s.Replicas)
			}
		}
		ps := byJob[string(obj.GetUID())]
		slices.SortFunc(ps, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		jobs = append(jobs, jobView{kind: kind, obj: obj, job: check.FromJob(kind, tj), pods: ps, want: want})
	}
	tfs := &kubeflowv1.TFJobList{}
	pts := &kubeflowv1.PyTorchJobList{}
	mpis := &kubeflowv1.MPIJobList{}
	for _, l := range []client.ObjectList{tfs, pts, mpis} {
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return nil, nil, err
		}
	}
	for i := range tfs.Items {
		add(kubeflowv1.TFJobKind, &tfs.Items[i])
	}
	for i := range pts.Items {
		add(kubeflowv1.PyTorchJobKind, &pts.Items[i])
	}
	for i := range mpis.Items {
		add(kubeflowv1.MPIJobKind, &mpis.Items[i])
	}
	slices.SortFunc(jobs, func(a, b jobView) int { return strings.Compare(a.obj.GetName(), b.obj.GetName()) })
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return jobs, nodes.Items, nil
}

// settled reports whether the job runs whole and undisturbed: every pod
// of its current generation Running on a node, none being deleted or
// finishing, and (for a gang-restarted job) no fault injected in this
// generation yet.
func (d *driver) settled(jv jobView) bool {
	return d.whole(jv, false) && (!jv.job.GangRestart || d.faulted[jv.job.UID] != jv.job.Generation+1)
}

// whole reports whether every pod of the job's current generation is
// Running on a node and none is being deleted; with finishing, pods the
// driver already finished may have Succeeded instead, and one at least
// must be left to finish.
func (d *driver) whole(jv jobView, finishing bool) bool {
	j := jv.job
	if !j.Running || j.Finished() || j.Deleting || len(jv.pods) != jv.want {
		return false
	}
	left := 0
	for _, p := range jv.pods {
		done := p.Labels[completeLabel] == "true"
		switch {
		case p.DeletionTimestamp != nil || p.Spec.NodeName == "" || check.FromPod(p).Generation != j.Generation:
			return false
		case done && !finishing:
			return false
		case done && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded):
		case p.Status.Phase == corev1.PodRunning:
			left++
		default:
			return false
		}
	}
	return left > 0
}

// markFaulted records a fault in the job's current generation.
func (d *driver) markFaulted(jv jobView) {
	if jv.job.GangRestart {
		d.faulted[jv.job.UID] = jv.job.Generation + 1
	}
}

// loop runs the driver until ctx ends.
func (d *driver) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(expDelay(d.rng, d.r.opts.ActionEvery)):
		}
		if err := d.step(ctx); err != nil && ctx.Err() == nil {
			d.r.tally.add(cActionErrors, 1)
			d.r.logf("driver: %v", err)
		}
	}
}

// step brings back what is due (nodes, cordons), then takes one random
// action among those that apply.
func (d *driver) step(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.restoreDue(ctx, time.Now()); err != nil {
		return err
	}
	jobs, nodes, err := d.view(ctx)
	if err != nil {
		return err
	}
	var settled []jobView
	for _, jv := range jobs {
		if d.settled(jv) {
			settled = append(settled, jv)
		}
	}
	unavailable := len(d.deletedNodes) + len(d.cordoned)
	type action struct {
		weight float64
		do     func() error
	}
	var acts []action
	add := func(ok bool, w float64, do func() error) {
		if ok {
			acts = append(acts, action{w, do})
		}
	}
	add(len(jobs) < d.r.opts.MaxJobs, 3, func() error { return d.create(ctx) })
	add(len(jobs) > d.r.opts.MaxJobs/2, 1, func() error { return d.deleteJob(ctx, jobs) })
	add(len(settled) > 0, 1.2, func() error { return d.finish(ctx, pickJob(d.rng, settled), cJobsFinished) })
	add(len(settled) > 0, 2, func() error { return d.failMember(ctx, pickJob(d.rng, settled), exitKilled) })
	add(len(settled) > 0, 0.5, func() error { return d.failMember(ctx, pickJob(d.rng, settled), exitError) })
	add(len(settled) > 0, 1, func() error { return d.evict(ctx, pickJob(d.rng, settled)) })
	add(unavailable < 3, 0.6, func() error { return d.cordon(ctx, nodes) })
	add(unavailable < 3, 0.35, func() error { return d.deleteNode(ctx, nodes, jobs) })
	if len(acts) == 0 {
		return nil
	}
	weights := make([]float64, len(acts))
	for i, a := range acts {
		weights[i] = a.weight
	}
	return pick(d.rng, acts, weights).do()
}

func pickJob(rng *rand.Rand, jobs []jobView) jobView { return jobs[rng.IntN(len(jobs))] }

// create applies a new random job.
func (d *driver) create(ctx context.Context) error {
	d.n++
	spec := randomJob(d.rng, d.n)
	if err := d.r.cluster.client.Create(ctx, spec.obj); err != nil {
		return fmt.Errorf("create %s %s: %w", spec.kind, spec.obj.GetName(), err)
	}
	d.r.checker.Created(string(spec.obj.GetUID()), check.JobKey{Kind: spec.kind, Namespace: namespace, Name: spec.obj.GetName()})
	d.r.tally.add(cJobsCreated, 1)
	policy := "Pod"
	if spec.gang {
		policy = "Gang"
	}
	if spec.elastic {
		policy += ", elastic"
	}
	d.r.tally.mu.Lock()
	d.r.tally.kinds[spec.kind+"/"+policy]++
	d.r.tally.mu.Unlock()
	return nil
}

// deleteJob deletes a job, a finished one more often than not, with its
// pods and PodGroup following through the garbage collector.
func (d *driver) deleteJob(ctx context.Context, jobs []jobView) error {
	var finished []jobView
	for _, jv := range jobs {
		if jv.job.Finished() {
			finished = append(finished, jv)
		}
	}
	jv := pickJob(d.rng, jobs)
	if len(finished) > 0 && d.rng.Float64() < 0.6 {
		jv = pickJob(d.rng, finished)
	}
	return d.delete(ctx, jv, cJobsDeleted)
}

func (d *driver) delete(ctx context.Context, jv jobView, counter string) error {
	uid := jv.obj.GetUID()
	d.r.checker.Deleted(string(uid))
	err := d.r.cluster.client.Delete(ctx, jv.obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", jv.job.Key, err)
	}
	d.r.tally.add(counter, 1)
	return nil
}

// finish completes every pod of the job through the soak's kwok stage,
// as their programs finishing would: the job succeeds.
func (d *driver) finish(ctx context.Context, jv jobView, counter string) error {
	d.markFaulted(jv)
	patch := []byte(`{"metadata":{"labels":{"` + completeLabel + `":"true"}}}`)
	for _, p := range jv.pods {
		if p.Labels[completeLabel] == "true" {
			continue
		}
		if err := d.r.cluster.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("finish pod %s: %w", p.Name, err)
		}
	}
	d.r.tally.add(counter, 1)
	return nil
}

// failMember fails one member through kwok's chaos stage with code.
func (d *driver) failMember(ctx context.Context, jv jobView, code int32) error {
	p := jv.pods[d.rng.IntN(len(jv.pods))]
	d.markFaulted(jv)
	if code == exitKilled {
		d.r.tally.add(cFailRetryable, 1)
	} else {
		d.r.tally.add(cFailPermanent, 1)
	}
	d.injected[string(p.UID)] = code
	if err := localcluster.FailPod(ctx, d.r.cluster.client, p, code); err != nil {
		delete(d.injected, string(p.UID))
		return err
	}
	return nil
}

// landed counts an injected failure once kwok has carried it out: the
// pod Failed with the injected exit code.
func (d *driver) landed(old, cur *corev1.Pod) {
	if cur.Status.Phase != corev1.PodFailed || (old != nil && old.Status.Phase == corev1.PodFailed) {
		return
	}
	d.mu.Lock()
	code, ok := d.injected[string(cur.UID)]
	delete(d.injected, string(cur.UID))
	d.mu.Unlock()
	if got := check.FromPod(cur).ExitCode; ok && got != nil && *got == code {
		d.r.tally.add(cFailLanded, 1)
	}
}

// evict evicts one member through the Eviction API, as a node drain does.
func (d *driver) evict(ctx context.Context, jv jobView) error {
	p := jv.pods[d.rng.IntN(len(jv.pods))]
	d.markFaulted(jv)
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	err := d.r.cluster.clientset.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		d.r.tally.add(cEvictions, 1)
	case apierrors.IsTooManyRequests(err) || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		d.r.tally.add(cEvictRefused, 1)
	default:
		return fmt.Errorf("evict %s: %w", p.Name, err)
	}
	return nil
}

// cordon marks a node unschedulable for a while.
func (d *driver) cordon(ctx context.Context, nodes []corev1.Node) error {
	var candidates []string
	for _, n := range nodes {
		if _, ok := d.cordoned[n.Name]; !ok && n.DeletionTimestamp == nil {
			candidates = append(candidates, n.Name)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	name := candidates[d.rng.IntN(len(candidates))]
	if err := d.setUnschedulable(ctx, name, true); err != nil {
		return err
	}
	d.cordoned[name] = time.Now().Add(time.Duration(between(d.rng, 10, 40)) * time.Second)
	d.r.tally.add(cCordons, 1)
	return nil
}

func (d *driver) setUnschedulable(ctx context.Context, name string, v bool) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": v}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := d.r.cluster.client.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set node %s unschedulable=%v: %w", name, v, err)
	}
	return nil
}

// deleteNode deletes a node, as a cloud provider's node going away does;
// it comes back (same name, same shape) some time later. Each pool keeps
// enough nodes for the largest job.
func (d *driver) deleteNode(ctx context.Context, nodes []corev1.Node, jobs []jobView) error {
	present := map[string]int{}
	for _, n := range nodes {
		present[n.Labels[localcluster.PoolLabel]]++
	}
	minLeft := map[string]int{localcluster.PoolCPU: 1, localcluster.PoolGPU: 2}
	var candidates []corev1.Node
	for _, n := range nodes {
		pool := n.Labels[localcluster.PoolLabel]
		if present[pool] > minLeft[pool] && n.DeletionTimestamp == nil {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	n := candidates[d.rng.IntN(len(candidates))]
	for _, jv := range jobs {
		for _, p := range jv.pods {
			if p.Spec.NodeName == n.Name {
				d.markFaulted(jv)
			}
		}
	}
	if err := d.r.cluster.client.Delete(ctx, &n); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", n.Name, err)
	}
	delete(d.cordoned, n.Name)
	d.deletedNodes[n.Name] = time.Now().Add(time.Duration(between(d.rng, 15, 45)) * time.Second)
	d.r.tally.add(cNodeDeletes, 1)
	return nil
}

// restoreDue uncordons and adds back the nodes whose time is before now.
func (d *driver) restoreDue(ctx context.Context, now time.Time) error {
	for _, name := range sortedKeys(d.cordoned) {
		if now.Before(d.cordoned[name]) {
			continue
		}
		if err := d.setUnschedulable(ctx, name, false); err != nil {
			return err
		}
		delete(d.cordoned, name)
		d.r.tally.add(cUncordons, 1)
	}
	for _, name := range sortedKeys(d.deletedNodes) {
		if now.Before(d.deletedNodes[name]) {
			continue
		}
		n := d.r.cluster.nodeShape(name)
		if n == nil {
			delete(d.deletedNodes, name)
			continue
		}
		if err := localcluster.CreateNodes(ctx, d.r.cluster.client, []*corev1.Node{n}); err != nil {
			if apierrors.IsAlreadyExists(err) || strings.Contains(err.Error(), "already exists") {
				// The old one is still being deleted; next time.
				continue
			}
			return err
		}
		delete(d.deletedNodes, name)
		d.r.tally.add(cNodeAdds, 1)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// settle is the quiet period: no faults; every node back and
// schedulable; the jobs drained: each one that runs whole is finished
// (its pods complete), so that the queued ones get room and run too,
// and a failed job whose pods still hold nodes (cleanPodPolicy None) is
// deleted. It returns once every job has finished and no PodGroup of a
// finished or deleted job is left, or at the deadline.
func (d *driver) settle(ctx context.Context, deadline time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	far := time.Now().Add(time.Hour)
	for {
		if err := d.restoreDue(ctx, far); err != nil {
			d.r.logf("quiet period: %v", err)
		}
		jobs, _, err := d.view(ctx)
		if err != nil {
			return err
		}
		done := len(d.deletedNodes) == 0 && len(d.cordoned) == 0
		for _, jv := range jobs {
			j := jv.job
			switch {
			case j.Failed && slices.ContainsFunc(jv.pods, func(p *corev1.Pod) bool {
				return p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending)
			}):
				if err := d.delete(ctx, jv, cSettleDeleted); err != nil {
					d.r.logf("quiet period: %v", err)
				}
			case j.Finished():
			default:
				done = false
				if d.whole(jv, true) {
					if err := d.finish(ctx, jv, cSettleFinished); err != nil {
						d.r.logf("quiet period: %v", err)
					}
				}
			}
		}
		if done {
			leaked, err := d.leakedPodGroups(ctx, jobs)
			if err != nil {
				return err
			}
			done = leaked == 0
		}
		if done || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// leakedPodGroups counts the PodGroups whose job is gone or finished.
func (d *driver) leakedPodGroups(ctx context.Context, jobs []jobView) (int, error) {
	groups := &schedulingv1alpha1.PodGroupList{}
	if err := d.r.obs.cache.List(ctx, groups, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	live := map[string]bool{}
	for _, jv := range jobs {
		if !jv.job.Finished() {
			live[jv.job.UID] = true
		}
	}
	n := 0
	for i := range groups.Items {
		ref := metav1.GetControllerOf(&groups.Items[i])
		if ref == nil || !live[string(ref.UID)] {
			n++
		}
	}
	return n, nil
}
