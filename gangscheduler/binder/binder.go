// Package binder commits a cycle's decisions: it binds each pod to its node
// through the pods/binding subresource, as kube-scheduler does, many at
// once, and deletes the pods that preemption evicted (evict.go).
package binder

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
)

// Event reasons and actions on pods, kube-scheduler's words so that
// `kubectl describe pod` reads the same under either scheduler.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ActionBinding          = "Binding"
)

// Binder binds pods to nodes.
type Binder struct {
	client   client.Client
	recorder events.EventRecorder
	workers  int
	// scheduledEvents records a Scheduled event on every pod bound.
	scheduledEvents bool
	// schedulerName opens the messages of the DisruptionTarget conditions
	// it writes, as kube-scheduler's name opens its own.
	schedulerName string
}

// DefaultSchedulerName is the name the binder gives itself without
// WithSchedulerName.
const DefaultSchedulerName = "troupe-scheduler"

// WithSchedulerName names the scheduler in the conditions it writes.
func WithSchedulerName(name string) Option {
	return func(b *Binder) { b.schedulerName = name }
}

// Option adjusts a Binder.
type Option func(*Binder)

// WithoutScheduledEvents leaves out the Scheduled event on each pod bound;
// failed binds are still recorded on their pods. An event is an API write
// as costly as the bind itself, and the gang's own Scheduled event on its
// PodGroup, the pod's nodeName and its PodScheduled condition already say
// where it went.
func WithoutScheduledEvents() Option {
	return func(b *Binder) { b.scheduledEvents = false }
}

// New returns a binder that writes through c, records an event on every
// pod it binds or fails to bind, and runs at most workers binds at once.
func New(c client.Client, recorder events.EventRecorder, workers int, opts ...Option) *Binder {
	b := &Binder{client: c, recorder: recorder, workers: max(workers, 1), scheduledEvents: true, schedulerName: DefaultSchedulerName}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Bind binds every decision and returns one error (nil on success) per
// decision, in the same order.
//
// Binds run in parallel because each is one round trip and a gang may have
// thousands of pods; the bound on workers keeps a burst within what the
// client's rate limiter lets through anyway, without a goroutine per pod.
// A failed bind does not undo the gang's other binds (kube-batch does the
// same): those pods keep their nodes and count toward the gang, so the next
// cycle places only what is missing, first of all, and the gang completes;
// one that cannot be completed is reclaimed (actions.PartialGangs).
func (b *Binder) Bind(ctx context.Context, decisions []framework.Decision) []error {
	s := b.Stream(ctx, nil)
	s.Add(decisions...)
	return s.Wait()
}

// Answered is told of each bind once its answer came back: when its
// request went out, and its error (nil on success). It is called from the
// binder's workers, several at once.
type Answered func(d framework.Decision, sent time.Time, err error)

// Stream returns a queue of binds: each decision added is bound as soon as
// one of the binder's workers is free, in the order added, while the
// caller goes on (a session deciding the next gang while the last one's
// binds are under way). Wait returns one error per decision, in order.
// answered, if not nil, is told of each bind as its answer comes back.
func (b *Binder) Stream(ctx context.Context, answered Answered) *parallel.Queue[framework.Decision] {
	return parallel.NewQueue(b.workers, func(d framework.Decision) error {
		sent := time.Now()
		err := b.bind(ctx, d)
		if answered != nil {
			answered(d, sent, err)
		}
		return err
	})
}

func (b *Binder) bind(ctx context.Context, d framework.Decision) error {
	pod := d.Task.Pod
	binding := &corev1.Binding{
		// The UID makes the API server refuse the bind if the pod was
		// deleted and recreated under the same name since the snapshot.
		// A topology placement rides with the bind, with no write of its
		// own: the API server copies a Binding's annotations into the pod,
		// and its labels too from Kubernetes 1.35 (feature gate
		// PodTopologyLabelsAdmission, on by default; off, they are
		// dropped). So it goes as both: annotations for every cluster,
		// labels for selectors where the gate is on.
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Labels: d.Labels, Annotations: d.Labels},
		Target:     corev1.ObjectReference{Kind: "Node", Name: d.Node},
	}
	// A bare pod names the subresource's parent: the informer's object is
	// shared and must not be handed to code that may write into it.
	parent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	start := time.Now()
	err := b.client.SubResource("binding").Create(ctx, parent, binding)
	metrics.BindDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.Binds.WithLabelValues(metrics.BindError).Inc()
		b.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, ActionBinding,
			"Binding rejected: %v", err)
		return fmt.Errorf("bind %s/%s to %s: %w", pod.Namespace, pod.Name, d.Node, err)
	}
	metrics.Binds.WithLabelValues(metrics.BindSuccess).Inc()
	if b.scheduledEvents {
		b.recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonScheduled, ActionBinding,
			"Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, d.Node)
	}
	return nil
}
