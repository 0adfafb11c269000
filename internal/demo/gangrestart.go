package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/localcluster"
)

// The whole-gang restart the demo shows (--show-gang-restart): once the
// examples run, it applies GangRestartExample, waits for that gang to run,
// fails one of its workers through kwok's chaos stage, as a user could with
// kubectl, and follows the operator tearing the gang down and bringing it
// back as generation 1, placed again as one gang.

const (
	// The demo fails a member through kwok's chaos stage
	// (localcluster.FailPod): about a second later kwok ends its
	// containers with chaosExitCode and sets the pod Failed.
	chaosLabel              = localcluster.ChaosLabel
	chaosExitCodeAnnotation = localcluster.ChaosExitCodeAnnotation
	// chaosExitCode is how a container killed by SIGKILL ends (the OOM
	// killer, a node going down): retryable under the replica
	// restartPolicy ExitCode, so the operator restarts the gang.
	chaosExitCode int32 = 137
	// restartShownFor is how long the interactive demo keeps the restarted
	// job before deleting it, so that the free GPUs are again what the
	// README's walkthroughs and the other examples count on.
	restartShownFor = 30 * time.Second
)

// showStage is how far the gang restart has come.
type showStage int

const (
	// showWaitExamples: the examples are not all running yet.
	showWaitExamples showStage = iota
	// showWaitGang: the job is applied; its first gang is not running yet.
	showWaitGang
	// showWaitRestart: a member was failed; generation 1 is not running
	// yet.
	showWaitRestart
	// showRestarted: generation 1 runs.
	showRestarted
	// showDone: the interactive demo deleted the job again (unless
	// --examples applies it too).
	showDone
)

// gangShow is the demo's whole-gang restart, moved on by each snapshot.
type gangShow struct {
	file      string
	manifests []manifest
	kind      string
	namespace string
	name      string
	// inExamples: --examples applies the job already.
	inExamples bool

	stage     showStage
	member    string
	startedAt time.Time
	// What has been told, so that each line is told once.
	toldFailed, toldRestarting, toldTornDown, toldCreated bool
}

// newGangShow reads the job to restart from file: the one training job
// there, which must restart as a whole gang.
func newGangShow(file string, examples []manifest) (*gangShow, error) {
	ms, err := loadManifests([]string{file})
	if err != nil {
		return nil, err
	}
	g := &gangShow{file: file, manifests: ms}
	jobs := 0
	for _, m := range ms {
		if !isTrainingJob(m.Obj) {
			continue
		}
		jobs++
		policy, _, _ := unstructured.NestedString(m.Obj.Object, "spec", "runPolicy", "gangPolicy", "restartPolicy")
		if policy != string(kubeflowv1.GangRestartPolicyGang) {
			return nil, fmt.Errorf("%s: %s %s does not restart as a whole gang (spec.runPolicy.gangPolicy.restartPolicy is %q, want Gang)", relPath(file), m.Obj.GetKind(), m.Obj.GetName(), policy)
		}
		g.kind, g.namespace, g.name = m.Obj.GetKind(), m.Obj.GetNamespace(), m.Obj.GetName()
	}
	if jobs != 1 {
		return nil, fmt.Errorf("%s: want one training job to restart, found %d", relPath(file), jobs)
	}
	g.inExamples = slices.ContainsFunc(examples, func(m manifest) bool {
		return isTrainingJob(m.Obj) && jobKey(m.Obj.GetKind(), m.Obj.GetNamespace(), m.Obj.GetName()) == g.key()
	})
	return g, nil
}

func (g *gangShow) key() string { return jobKey(g.kind, g.namespace, g.name) }

// display names the job as the table does.
func (g *gangShow) display() string {
	return jobRow{Kind: g.kind, Namespace: g.namespace, Name: g.name}.display()
}

func (g *gangShow) want() restartWant {
	return restartWant{Key: g.key(), Member: g.member, ExitCode: chaosExitCode}
}

// judge is the verdict on the restart: never done before the member has
// been failed, then checkRestart's.
func (g *gangShow) judge(snap *snapshot) verdict {
	switch g.stage {
	case showWaitExamples:
		return verdict{Waiting: []string{g.key() + ": applied once the examples run"}}
	case showWaitGang:
		v := check(snap, []string{g.key()})
		if v.Done {
			v.Waiting = []string{g.key() + ": its gang runs; a worker is failed next"}
			v.Done = false
		}
		return v
	case showDone:
		return verdict{Done: true}
	}
	return checkRestart(snap, g.want())
}

// advance moves the restart on with what the snapshot shows, telling the
// user what happens.
func (g *gangShow) advance(ctx context.Context, d *demo, snap *snapshot) error {
	job := snap.job(g.key())
	switch g.stage {
	case showWaitExamples:
		if !check(snap, d.watched).Done {
			return nil
		}
		what := "applied " + relPath(g.file) + ": " + g.display()
		if g.inExamples {
			what = g.display() + " (in --examples)"
		} else if _, err := applyManifests(ctx, d.client, g.manifests, func(string) {}); err != nil {
			return err
		}
		g.stage = showWaitGang
		d.tell(fmt.Sprintf("the examples run; now a whole-gang restart: %s, which restarts as a whole gang (gangPolicy.restartPolicy Gang, workers' restartPolicy ExitCode)", what))
	case showWaitGang:
		if job == nil || !check(snap, []string{g.key()}).Done || slices.ContainsFunc(job.Pods, func(p podRow) bool { return p.Generation != "0" }) {
			return nil
		}
		g.member = memberToFail(job)
		if err := failMember(ctx, d.client, g.namespace, g.member); err != nil {
			return err
		}
		g.stage = showWaitRestart
		d.tell(fmt.Sprintf("failing %s with exit code %d (kwok chaos stage), as `kubectl annotate pod %s %s=%d && kubectl label pod %s %s=true` would",
			g.member, chaosExitCode, g.member, chaosExitCodeAnnotation, chaosExitCode, g.member, chaosLabel))
	case showWaitRestart:
		g.tellProgress(d, job)
		if checkRestart(snap, g.want()).Done {
			g.stage, g.startedAt = showRestarted, time.Now()
			d.tell(g.summary(job))
		}
	case showRestarted:
		if d.opts.UntilRunning || time.Since(g.startedAt) < restartShownFor {
			return nil
		}
		g.stage = showDone
		if g.inExamples {
			// The user asked for the job; it stays.
			return nil
		}
		if d.kcm == nil {
			d.tell(fmt.Sprintf("kept %s: without kube-controller-manager nothing would delete its pods", g.display()))
			return nil
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind(g.kind))
		u.SetNamespace(g.namespace)
		u.SetName(g.name)
		if err := d.client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", g.display(), err)
		}
		d.tell(fmt.Sprintf("deleted %s, giving its GPUs back; `kubectl apply -f %s` and the kubectl line above replay the restart",
			g.display(), GangRestartExample))
	}
	return nil
}

// tellProgress tells, once each, what the restart has come to: the member
// failed, the job Restarting, the old gang gone, the new one created.
func (g *gangShow) tellProgress(d *demo, job *jobRow) {
	if job == nil {
		return
	}
	if i := slices.IndexFunc(job.Pods, func(p podRow) bool { return p.Name == g.member }); i >= 0 && !g.toldFailed {
		if p := job.Pods[i]; p.Phase == string(corev1.PodFailed) && p.ExitCode != nil {
			g.toldFailed = true
			d.tell(fmt.Sprintf("%s Failed: kwok ended its container with exit code %d", g.member, *p.ExitCode))
		}
	}
	if job.Condition == string(kfv1.JobRestarting) && !g.toldRestarting {
		g.toldRestarting = true
		d.tell(fmt.Sprintf("%s Restarting (%s): %s", g.display(), job.ConditionReason, job.ConditionMessage))
	}
	if job.Generation == 1 && len(job.Pods) == 0 && !g.toldTornDown {
		g.toldTornDown = true
		d.tell("generation 0 torn down: every pod deleted, and the PodGroup; generation 1 comes after the backoff")
	}
	if n := countFunc(job.Pods, func(p podRow) bool { return p.Generation == "1" }); n > 0 && !g.toldCreated {
		g.toldCreated = true
		d.tell(fmt.Sprintf("generation 1 created: %s, which troupe-scheduler places as one gang", plural(n, "pod")))
	}
}

// summary says what the restart did, once generation 1 runs.
func (g *gangShow) summary(job *jobRow) string {
	var nodes []string
	for _, p := range job.Pods {
		if !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	return fmt.Sprintf("%s restarted as a whole gang after %s failed with exit code %d: generation 1 after %s, all %s of generation 1 Running on gpu nodes (%s), none of generation 0 left",
		g.display(), g.member, chaosExitCode, plural(job.Restarts, "restart"), plural(len(job.Pods), "pod"), strings.Join(nodes, ", "))
}

// memberToFail picks the job's last worker (pytorch-gang-worker-1 in the
// example): a member other than the one that coordinates.
func memberToFail(job *jobRow) string {
	for i := len(job.Pods) - 1; i >= 0; i-- {
		if job.Pods[i].Role == "worker" {
			return job.Pods[i].Name
		}
	}
	return job.Pods[len(job.Pods)-1].Name
}

// failMember fails the pod through kwok's chaos stage with chaosExitCode,
// as a user could with kubectl.
func failMember(ctx context.Context, c client.Client, namespace, name string) error {
	return localcluster.FailPod(ctx, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, chaosExitCode)
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}
