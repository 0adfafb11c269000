package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// replicaPass is what one pass over the replicas found.
type replicaPass struct {
	replicas Replicas
	// restarting says why pods are being replaced, if any are.
	restarting string
	// permanentFailure says which failure ends the job, if one does.
	permanentFailure string
	// backoffExceeded says which replacement would exceed backoffLimit.
	backoffExceeded string
	// gangRestart is the first event that restarts the whole gang.
	gangRestart *gangTrigger
}

// listOwned reads the job's pods and services from the cache: those that
// carry the job's labels and whose controller is this job.
func (r *Reconciler) listOwned(ctx context.Context, s *scope) error {
	sel := client.MatchingLabels(jobLabels(r.fw, s.job))
	ns := client.InNamespace(s.job.GetNamespace())
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, ns, sel); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var svcs corev1.ServiceList
	if err := r.client.List(ctx, &svcs, ns, sel); err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	s.pods, s.services = nil, nil
	for i := range pods.Items {
		if metav1.IsControlledBy(&pods.Items[i], s.job) {
			s.pods = append(s.pods, &pods.Items[i])
		}
	}
	for i := range svcs.Items {
		if metav1.IsControlledBy(&svcs.Items[i], s.job) {
			s.services = append(s.services, &svcs.Items[i])
		}
	}
	return nil
}

func observed(pods []*corev1.Pod, svcs []*corev1.Service) []observedObject {
	out := make([]observedObject, 0, len(pods)+len(svcs))
	for _, p := range pods {
		out = append(out, observedObject{key: "pod/" + p.Name, uid: p.UID, terminating: isTerminating(p)})
	}
	for _, s := range svcs {
		out = append(out, observedObject{key: "service/" + s.Name, uid: s.UID, terminating: s.DeletionTimestamp != nil})
	}
	return out
}

// OrderedReplicaTypes returns the job's replica types in the framework's
// order, followed by any the framework does not list (sorted).
func OrderedReplicaTypes(fw Framework, job Job) []kubeflowv1.ReplicaType {
	specs := job.ReplicaSpecs()
	var out []kubeflowv1.ReplicaType
	known := map[kubeflowv1.ReplicaType]bool{}
	for _, t := range fw.ReplicaTypes() {
		known[t] = true
		if _, ok := specs[t]; ok {
			out = append(out, t)
		}
	}
	var rest []kubeflowv1.ReplicaType
	for t := range specs {
		if !known[t] {
			rest = append(rest, t)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	return append(out, rest...)
}

// reconcileReplicas creates missing pods and services, removes those beyond
// the desired replicas, and applies the restart policy to failed pods.
func (r *Reconciler) reconcileReplicas(ctx context.Context, s *scope) (replicaPass, error) {
	defer r.announceCreated(s)
	pass := replicaPass{replicas: Replicas{}}
	podsByName := map[string]*corev1.Pod{}
	for _, p := range s.pods {
		podsByName[p.Name] = p
	}
	svcsByName := map[string]*corev1.Service{}
	for _, svc := range s.services {
		svcsByName[svc.Name] = svc
	}
	wanted := map[string]bool{}
	var breaks gangBreaks
	if s.gangRestart != nil {
		var err error
		if breaks, err = r.findGangBreaks(ctx, s, podsByName); err != nil {
			return pass, err
		}
	}

	var missing []replicaObject
	for _, rtype := range OrderedReplicaTypes(r.fw, s.job) {
		spec := s.job.ReplicaSpecs()[rtype]
		replicas := int(*spec.Replicas)
		state := ReplicaState{Replicas: int32(replicas), SucceededIndexes: map[int]bool{}}
		port, wantService := r.fw.ServicePort(s.job, rtype)
		for index := 0; index < replicas; index++ {
			svcName, name := ReplicaName(s.job.GetName(), rtype, index), podName(r.fw, s.job, rtype, index)
			wanted[svcName], wanted[name] = true, true
			if wantService && svcsByName[svcName] == nil {
				missing = append(missing, replicaObject{rtype: rtype, index: index, port: &port})
			}
			pod := podsByName[name]
			if pod == nil {
				missing = append(missing, replicaObject{rtype: rtype, index: index})
				continue
			}
			if t := breaks.byPod[name]; t != nil {
				switch {
				case !breaks.absorbed:
					pass.gangRestart = breaks.first
					if pod.Status.Phase == corev1.PodFailed {
						state.Failed++
					}
					continue
				case pod.Status.Phase != corev1.PodFailed:
					if err := r.replaceElasticMember(ctx, s, &breaks, pod); err != nil {
						return pass, err
					}
					continue
				case isTerminating(pod):
					// Replaced already: counted when its deletion was
					// decided; a bound pod stays Terminating until its
					// kubelet confirms.
					continue
				}
				// A failed member above the elastic minimum is recreated
				// whatever its restart policy says: the gang policy
				// decides, and it keeps the gang.
				if exceeded, msg := backoffLimitReachedBy(s.job, s.pods, 1); exceeded {
					state.Failed++
					pass.backoffExceeded = msg + "; last failure: " + t.message
					continue
				}
				r.elasticEvent(s, &breaks, pod, t)
				s.recreate = append(s.recreate, pod)
				s.job.GetJobStatus().RecreatedPods++
				pass.restarting = t.message
				continue
			}
			if isTerminating(pod) {
				continue
			}
			switch pod.Status.Phase {
			case corev1.PodRunning:
				state.Running++
			case corev1.PodSucceeded:
				state.Succeeded++
				state.SucceededIndexes[index] = true
			case corev1.PodFailed:
				action, why := onPodFailed(spec.RestartPolicy, pod, r.fw.MainContainerName(s.job))
				if action == failJob {
					state.Failed++
					if pass.permanentFailure == "" {
						pass.permanentFailure = why
					}
					continue
				}
				if exceeded, msg := backoffLimitReachedBy(s.job, s.pods, 1); exceeded {
					state.Failed++
					pass.backoffExceeded = msg + "; last failure: " + why
					continue
				}
				// Counted now, deleted only after the count is written:
				// see Reconcile.
				s.recreate = append(s.recreate, pod)
				s.job.GetJobStatus().RecreatedPods++
				pass.restarting = why
			}
		}
		pass.replicas[rtype] = state
	}

	if err := r.createMissing(ctx, s, missing); err != nil {
		return pass, err
	}
	if s.gangRestart != nil && pass.gangRestart == nil {
		pass.gangRestart = r.watchPartialGang(s)
	}

	// Pods and services beyond the desired replicas (a scale-down, or a
	// replica type removed from the spec) go.
	for _, p := range s.pods {
		if !wanted[p.Name] && !isTerminating(p) {
			if err := r.deletePod(ctx, s, p); err != nil {
				return pass, err
			}
		}
	}
	for _, svc := range s.services {
		if !wanted[svc.Name] && svc.DeletionTimestamp == nil {
			if err := r.deleteService(ctx, s, svc); err != nil {
				return pass, err
			}
		}
	}
	return pass, nil
}

// replicaObject is a replica's pod, or its service when port is set, that
// a pass creates.
type replicaObject struct {
	rtype kubeflowv1.ReplicaType
	index int
	port  *corev1.ServicePort
}

// createMissing creates the pass's missing services and pods, in replica
// order, in slow-start batches (slowStart), and remembers what it created
// for announceCreated, in that order.
func (r *Reconciler) createMissing(ctx context.Context, s *scope, missing []replicaObject) error {
	created, err := slowStart(ctx, missing, func(ctx context.Context, o replicaObject) (string, error) {
		if o.port != nil {
			return r.createService(ctx, s, o.rtype, o.index, *o.port)
		}
		return r.createPod(ctx, s, o.rtype, o.index)
	})
	for i, name := range created {
		switch {
		case name == "":
		case missing[i].port != nil:
			s.createdServices = append(s.createdServices, name)
		default:
			s.createdPods = append(s.createdPods, name)
		}
	}
	return err
}

// createPod creates a replica's pod and returns its name, or "" if the API
// server has it already. It may run beside other creates of the pass.
func (r *Reconciler) createPod(ctx context.Context, s *scope, rtype kubeflowv1.ReplicaType, index int) (string, error) {
	pod, err := newPod(r.fw, s.gang, s.job, rtype, index)
	if err != nil {
		return "", err
	}
	r.expect.expectCreate(s.key, "pod/"+pod.Name, s.now.Time)
	if err := r.client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind; the expectation holds the next pass
			// until it catches up.
			return "", nil
		}
		r.expect.createFailed(s.key, "pod/"+pod.Name)
		r.event(s.job, corev1.EventTypeWarning, "FailedCreatePod", fmt.Sprintf("Error creating pod %s: %v", pod.Name, err))
		return "", fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	return pod.Name, nil
}

// createService creates a replica's headless service and returns its
// name, or "" if the API server has it already. It may run beside other
// creates of the pass.
func (r *Reconciler) createService(ctx context.Context, s *scope, rtype kubeflowv1.ReplicaType, index int, port corev1.ServicePort) (string, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ReplicaName(s.job.GetName(), rtype, index),
			Namespace:       s.job.GetNamespace(),
			Labels:          replicaLabels(r.fw, s.job, rtype, index),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(r.fw, s.job)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  replicaLabels(r.fw, s.job, rtype, index),
			Ports:     []corev1.ServicePort{port},
			// Members resolve each other while they start, before any
			// readiness probe passes.
			PublishNotReadyAddresses: true,
		},
	}
	r.expect.expectCreate(s.key, "service/"+svc.Name, s.now.Time)
	if err := r.client.Create(ctx, svc); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return "", nil
		}
		r.expect.createFailed(s.key, "service/"+svc.Name)
		r.event(s.job, corev1.EventTypeWarning, "FailedCreateService", fmt.Sprintf("Error creating service %s: %v", svc.Name, err))
		return "", fmt.Errorf("create service %s: %w", svc.Name, err)
	}
	return svc.Name, nil
}

// announceCreated records one event for the pods the pass created and one
// for its services, each naming them all. An event per object would be a
// write per object, and the event recorder folds events of one reason on
// one job into a series that keeps only the first one's note: the names
// after it would be lost anyway.
func (r *Reconciler) announceCreated(s *scope) {
	announce := func(reason, kind string, names []string) {
		switch len(names) {
		case 0:
		case 1:
			r.event(s.job, corev1.EventTypeNormal, reason, fmt.Sprintf("Created %s: %s", kind, names[0]))
		default:
			r.event(s.job, corev1.EventTypeNormal, reason, fmt.Sprintf("Created %d %ss: %s", len(names), kind, strings.Join(names, ", ")))
		}
	}
	announce("SuccessfulCreatePod", "pod", s.createdPods)
	announce("SuccessfulCreateService", "service", s.createdServices)
	s.createdPods, s.createdServices = nil, nil
}

// deletePod deletes exactly the pod the pass saw (UID precondition), so a
// replacement created meanwhile under the same name is never hit.
func (r *Reconciler) deletePod(ctx context.Context, s *scope, pod *corev1.Pod) error {
	r.expect.expectDelete(s.key, pod.UID, s.now.Time)
	err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case err != nil:
		r.expect.deleteFailed(s.key, pod.UID)
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	r.event(s.job, corev1.EventTypeNormal, "SuccessfulDeletePod", "Deleted pod: "+pod.Name)
	// The engine deletes a member only on a stored decision or the spec:
	// nothing is left to judge (member_finalizer.go).
	return r.release(ctx, pod)
}

func (r *Reconciler) deleteService(ctx context.Context, s *scope, svc *corev1.Service) error {
	r.expect.expectDelete(s.key, svc.UID, s.now.Time)
	err := r.client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.expect.deleteFailed(s.key, svc.UID)
		return fmt.Errorf("delete service %s: %w", svc.Name, err)
	}
	return nil
}

// deletePods deletes the job's pods that match, and their services.
func (r *Reconciler) deletePods(ctx context.Context, s *scope, match func(*corev1.Pod) bool) error {
	deleted := map[string]bool{}
	for _, p := range s.pods {
		if isTerminating(p) || !match(p) {
			continue
		}
		if err := r.deletePod(ctx, s, p); err != nil {
			return err
		}
		deleted[p.Name] = true
	}
	for _, svc := range s.services {
		if deleted[svc.Name] && svc.DeletionTimestamp == nil {
			if err := r.deleteService(ctx, s, svc); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteAll deletes every pod and service of the job.
func (r *Reconciler) deleteAll(ctx context.Context, s *scope) error {
	if err := r.deletePods(ctx, s, func(*corev1.Pod) bool { return true }); err != nil {
		return err
	}
	for _, svc := range s.services {
		if svc.DeletionTimestamp == nil {
			if err := r.deleteService(ctx, s, svc); err != nil {
				return err
			}
		}
	}
	return nil
}

func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// updateReplicaStatuses writes what the pass saw into status.replicaStatuses,
// with the selector string that the scale subresource reads (upstream's
// structured labelSelector field is deprecated in its favour).
func (r *Reconciler) updateReplicaStatuses(s *scope, replicas Replicas) {
	status := s.status()
	status.ReplicaStatuses = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{}
	for rtype, state := range replicas {
		sel := jobLabels(r.fw, s.job)
		sel[kubeflowv1.ReplicaTypeLabel] = ReplicaTypeLabelValue(rtype)
		status.ReplicaStatuses[rtype] = &kubeflowv1.ReplicaStatus{
			Active:    state.Running,
			Succeeded: state.Succeeded,
			Failed:    state.Failed,
			Selector:  labels.SelectorFromSet(sel).String(),
		}
	}
}
