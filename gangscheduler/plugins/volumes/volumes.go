// Package volumes is kube-scheduler's volume plugins for gangs, with their
// meaning and their words:
//
//   - VolumeBinding, for claims that are bound: the PersistentVolume's
//     required node affinity must match the node (a local volume pins its
//     pod to one node). A claim that is missing, being deleted, lost, not
//     bound yet with an Immediate StorageClass (or none), or bound to a
//     volume that does not exist keeps its pod off every node, and the gang
//     waits, as kube-scheduler's PreFilter does;
//   - VolumeZone: the zone and region labels of a claim's volume must match
//     the node's;
//   - VolumeRestrictions' ReadWriteOncePod rule: a claim with that access
//     mode that a pod on a node uses keeps every other pod off;
//   - NodeVolumeLimits for CSI drivers: a node's CSINode caps, per driver,
//     the volumes attached to it.
//
// It is gang-aware where placements matter: the members a session places
// count as pods on their nodes, so two members cannot both take one
// ReadWriteOncePod claim, and members placed on one node count toward its
// attach limit (a volume they share counts once, as on the node).
//
// What it does not do, binding and provisioning volumes, refuses the gang
// with the field named rather than placing it without: a claim that is
// not bound and whose StorageClass binds WaitForFirstConsumer waits for a
// scheduler to choose a node and a binder to bind or provision a volume
// there; troupe-scheduler does neither, so its gang would wait forever,
// and is refused with what to change instead. Two pending members that
// use one ReadWriteOncePod claim can never both run: their gang is
// refused too.
//
// How it stays cheap beside the per-class predicate cache: the claims of a
// pod are in its class signature (api.TaskInfo.ClassSignature), so what a
// pod's volumes say is worked out once per pod and session, and the node
// affinity and zone checks are static predicates, cached per class and
// node; the rules that placements change (ReadWriteOncePod, attach limits)
// are a dynamic predicate that applies only to pods with such claims or
// volumes, and keeps its counts up to date with the session's placements
// instead of walking the pods on a node at every check. A pod without
// claims costs one check of one field.
package volumes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "volumes"

// Reasons a pod does not fit a node, worded as kube-scheduler's (v1.36)
// VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits.
const (
	ReasonNodeConflict             framework.Reason = "node(s) didn't match PersistentVolume's node affinity"
	ReasonZoneConflict             framework.Reason = "node(s) had no available volume zone"
	ReasonPVNotExist               framework.Reason = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	ReasonUnboundClaim             framework.Reason = "pod has unbound immediate PersistentVolumeClaims"
	ReasonReadWriteOncePodConflict framework.Reason = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
	ReasonMaxVolumeCount           framework.Reason = "node(s) exceed max volume count"
)

// ReasonReadWriteOncePodShared is the validity reason of a gang two of
// whose pending members use one ReadWriteOncePod claim. A gang that needs
// a volume bound or provisioned is refused with framework.ReasonUnsupported.
const ReasonReadWriteOncePodShared = "ReadWriteOncePodShared"

type plugin struct{}

// New returns the plugin.
func New() framework.Plugin { return plugin{} }

func (plugin) Name() string { return Name }

func (plugin) OnSessionOpen(ssn *framework.Session) {
	ssn.Honour(Name, api.FeaturePersistentVolumeClaim, api.FeatureEphemeralVolume)
	if !pendingClaims(ssn) {
		// Nothing to place has a claim, and a session makes no task
		// pending that was not: registering nothing spares every static
		// evaluation and every placement a call (a few percent of a
		// session over thousands of nodes).
		return
	}
	s := &state{
		ssn:      ssn,
		pods:     map[*api.TaskInfo]*podVolumes{},
		attached: map[*api.TaskInfo][]attachment{},
		nodes:    map[*api.NodeInfo]*nodeVolumes{},
		nodeOf:   map[api.TaskID]*api.NodeInfo{},
	}
	ssn.AddStaticPredicateFn(s.static)
	ssn.AddPredicateFnFor(s.dynamic, func(t *api.TaskInfo) bool {
		if !hasClaims(t) {
			return false
		}
		v := s.volumesOf(t)
		return !v.wait.Fit || len(v.rwop) > 0 || len(v.attach) > 0
	})
	ssn.AddJobValidFn(s.jobValid)
	ssn.AddEventHandler(framework.EventHandler{AllocateFunc: s.allocate, DeallocateFunc: s.deallocate})
}

// pendingClaims reports whether a pending pod of some gang has a claim.
func pendingClaims(ssn *framework.Session) bool {
	for _, job := range ssn.Jobs {
		for _, t := range job.Tasks {
			if t.Status == api.Pending && hasClaims(t) {
				return true
			}
		}
	}
	return false
}

// state is the plugin's accounting for one session.
type state struct {
	ssn *framework.Session
	// pods are what the volumes of the pods asked about say, worked out
	// on first ask.
	pods map[*api.TaskInfo]*podVolumes
	// attached are the CSI volumes of the pods on nodes, on first ask.
	attached map[*api.TaskInfo][]attachment
	// users counts, per claim (namespace/name), the pods on nodes that
	// use it, placed ones included: kube-scheduler's used-claim set. Nil
	// until a pod with a ReadWriteOncePod claim asks.
	users map[string]int
	// nodes are the attach limits and attached volumes of the nodes asked
	// about.
	nodes map[*api.NodeInfo]*nodeVolumes
	// nodeOf is where the session placed a task: a task undone by
	// Discard no longer names its node when the event comes.
	nodeOf map[api.TaskID]*api.NodeInfo
	// labelsOnly is a node with only the labels of the node being
	// checked, as volume.CheckNodeAffinity matches.
	labelsOnly corev1.Node
}

// podVolumes is what one pending pod's volumes say about where it may go.
type podVolumes struct {
	// wait says why the pod fits no node now, whatever the node (a claim
	// missing, being deleted, not bound...): kube-scheduler's PreFilter
	// failures, which a later cycle may find resolved. Fit if none.
	wait framework.Status
	// refuse says why the gang is refused; "" if it is not.
	refuse string
	// affinity are the bound volumes' required node affinities, parsed
	// once (what volume.CheckNodeAffinity parses at every call).
	affinity []nodeaffinity.LazyErrorNodeSelector
	// zones are the zone and region labels of the claims' volumes.
	zones []volumeZone
	// rwop are the pod's ReadWriteOncePod claims, namespace/name.
	rwop []string
	// attach are its CSI volumes, each once.
	attach []attachment
}

// hasClaims reports whether the pod has claims: a persistentVolumeClaim
// or a generic ephemeral volume.
func hasClaims(t *api.TaskInfo) bool {
	for _, f := range t.Features {
		if f == api.FeaturePersistentVolumeClaim || f == api.FeatureEphemeralVolume {
			return true
		}
	}
	return false
}

// static is kube-scheduler's VolumeBinding Filter for bound claims and its
// VolumeZone Filter: it reads only the node's labels and the pod's claims,
// which are in its class signature.
func (s *state) static(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	if !hasClaims(task) {
		return framework.Fit
	}
	v := s.volumesOf(task)
	if len(v.affinity) > 0 {
		// volume.CheckNodeAffinity matches a node made of the labels alone,
		// which every matchFields term (on metadata.name) passes; so does
		// this, without making a node per check.
		s.labelsOnly.Labels = node.Node.Labels
		for i := range v.affinity {
			// A term that does not parse matches no node: to
			// kube-scheduler, CheckNodeAffinity's error is a conflict.
			if ok, _ := v.affinity[i].Match(&s.labelsOnly); !ok {
				return framework.Unfit(ReasonNodeConflict)
			}
		}
	}
	if !zonesFit(v.zones, node.Node.Labels) {
		return framework.Unfit(ReasonZoneConflict)
	}
	return framework.Fit
}

// dynamic is why the pod fits no node (the same answer on every node: a
// Status built once per pod, so no string is made per node, and no
// per-claim message takes one of the static cache's interned reasons), or
// kube-scheduler's ReadWriteOncePod and CSI attach limit Filters, which
// read what placements change.
func (s *state) dynamic(task *api.TaskInfo, node *api.NodeInfo) framework.Status {
	v := s.volumesOf(task)
	if !v.wait.Fit {
		return v.wait
	}
	if len(v.rwop) > 0 && s.inUse(v.rwop) {
		return framework.Unfit(ReasonReadWriteOncePodConflict)
	}
	if len(v.attach) > 0 && !s.attachFits(v.attach, node) {
		return framework.Unfit(ReasonMaxVolumeCount)
	}
	return framework.Fit
}

// volumesOf returns what task's volumes say, worked out on first ask.
func (s *state) volumesOf(task *api.TaskInfo) *podVolumes {
	v := s.pods[task]
	if v == nil {
		v = s.readVolumes(task)
		s.pods[task] = v
	}
	return v
}

// readVolumes reads a pending pod's claims as kube-scheduler's PreFilters
// do, volume by volume; the first reason to wait stands.
func (s *state) readVolumes(task *api.TaskInfo) *podVolumes {
	pod := task.Pod
	out := &podVolumes{wait: framework.Fit}
	wait := func(reason string) {
		if out.wait.Fit {
			out.wait = framework.Unfit(framework.Reason(reason))
		}
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name, eph := claimOf(pod, vol)
		if name == "" {
			continue
		}
		claim := s.ssn.PersistentVolumeClaim(pod.Namespace, name)
		switch {
		case claim == nil && eph:
			// Normal just after the pod is created: the ephemeral volume
			// controller has yet to make the claim.
			wait(fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name))
			continue
		case claim == nil:
			wait(fmt.Sprintf("persistentvolumeclaim %q not found", name))
			continue
		case claim.Status.Phase == corev1.ClaimLost:
			wait(fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", name, claim.Spec.VolumeName))
			continue
		case claim.DeletionTimestamp != nil:
			wait(fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
			continue
		}
		if eph {
			if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
				wait(err.Error())
				continue
			}
		}
		// VolumeRestrictions reads only persistentVolumeClaim volumes: an
		// ephemeral volume's claim is its pod's alone anyway.
		if !eph && slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteOncePod) {
			out.rwop = append(out.rwop, pod.Namespace+"/"+name)
		}
		if !bound(claim) {
			delay, err := volume.IsDelayBindingMode(claim, classLister{s.ssn})
			switch {
			case err != nil:
				wait(err.Error())
			case delay && claim.Spec.VolumeName == "":
				if out.refuse == "" {
					out.refuse = fmt.Sprintf("pod %s: %s (%s): claim %q is not bound and its StorageClass %q binds WaitForFirstConsumer; "+
						"troupe-scheduler does not bind or provision volumes: pre-bind the claim, or use a StorageClass with volumeBindingMode Immediate",
						task.Key(), fieldOf(vol, i), vol.Name, name, volume.GetPersistentVolumeClaimClass(claim))
				}
			default:
				// An Immediate claim the PV controller has yet to bind, or
				// one pre-bound to a volume by name, which the controller
				// has yet to confirm: kube-scheduler waits for it.
				wait(string(ReasonUnboundClaim))
			}
			continue
		}
		pv := s.ssn.PersistentVolume(claim.Spec.VolumeName)
		if pv == nil {
			wait(string(ReasonPVNotExist))
			continue
		}
		if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
			out.affinity = append(out.affinity, *nodeaffinity.NewLazyErrorNodeSelector(na.Required))
		}
		// VolumeZone reads only persistentVolumeClaim volumes.
		if !eph {
			out.zones = append(out.zones, zonesOf(pv)...)
		}
	}
	if out.wait.Fit {
		out.attach = s.attachedOf(task)
	}
	return out
}

// claimOf returns the claim of the pod's volume, and whether it is a
// generic ephemeral volume's; "" for a volume without a claim.
func claimOf(pod *corev1.Pod, vol *corev1.Volume) (name string, eph bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, false
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, vol), true
	}
	return "", false
}

// fieldOf is the field path of the claim of volume i, for messages.
func fieldOf(vol *corev1.Volume, i int) string {
	if vol.Ephemeral != nil {
		return fmt.Sprintf("spec.volumes[%d].ephemeral", i)
	}
	return fmt.Sprintf("spec.volumes[%d].persistentVolumeClaim", i)
}

// bound is kube-scheduler's "fully bound": the claim names its volume and
// the PV controller has completed the binding. A claim that names a
// volume without the annotation (pre-bound by a user) is not bound yet.
func bound(claim *corev1.PersistentVolumeClaim) bool {
	return claim.Spec.VolumeName != "" && metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBindCompleted)
}

// classLister is the snapshot's StorageClasses as the lister that
// component-helpers' IsDelayBindingMode reads: Get only.
type classLister struct{ ssn *framework.Session }

func (l classLister) Get(name string) (*storagev1.StorageClass, error) {
	if c := l.ssn.StorageClass(name); c != nil {
		return c, nil
	}
	return nil, apierrors.NewNotFound(storagev1.Resource("storageclasses"), name)
}

func (l classLister) List(labels.Selector) ([]*storagev1.StorageClass, error) {
	return nil, fmt.Errorf("the snapshot looks StorageClasses up by name only")
}

var _ storagelisters.StorageClassLister = classLister{}

// jobValid refuses a gang that no placement can ever make whole: a
// pending member needs a volume bound or provisioned, or two pending
// members use one ReadWriteOncePod claim. The first pod by name is named,
// whatever the map order.
func (s *state) jobValid(job *api.JobInfo) *framework.ValidateResult {
	var pending []*api.TaskInfo
	for _, t := range job.Tasks {
		if t.Status == api.Pending && hasClaims(t) {
			pending = append(pending, t)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	slices.SortFunc(pending, func(a, b *api.TaskInfo) int { return cmp.Compare(a.Key(), b.Key()) })
	for _, t := range pending {
		if v := s.volumesOf(t); v.refuse != "" {
			return &framework.ValidateResult{Reason: framework.ReasonUnsupported, Message: v.refuse}
		}
	}
	users := map[string]*api.TaskInfo{}
	for _, t := range pending {
		for _, c := range s.volumesOf(t).rwop {
			if other := users[c]; other != nil {
				return &framework.ValidateResult{Reason: ReasonReadWriteOncePodShared, Message: fmt.Sprintf(
					"pods %s and %s both use PersistentVolumeClaim %q, whose access mode is ReadWriteOncePod: only one pod at a time may use it, "+
						"so the gang can never run whole; give each member its own claim, or use another access mode",
					other.Key(), t.Key(), c[strings.IndexByte(c, '/')+1:])}
			}
			users[c] = t
		}
	}
	return nil
}

// inUse reports whether a pod on a node uses one of the claims.
func (s *state) inUse(claims []string) bool {
	if s.users == nil {
		s.users = map[string]int{}
		for _, n := range s.ssn.NodesTaken() {
			for t := range n.Occupants() {
				s.countUser(t, 1)
			}
		}
	}
	for _, c := range claims {
		if s.users[c] > 0 {
			return true
		}
	}
	return false
}

// countUser counts pod t as a user of its claims v times. As
// kube-scheduler's used-claim set, it counts persistentVolumeClaim volumes
// by name, whatever their access mode, and pods being deleted.
func (s *state) countUser(t *api.TaskInfo, v int) {
	if t.Pod == nil {
		return
	}
	for i := range t.Pod.Spec.Volumes {
		if c := t.Pod.Spec.Volumes[i].PersistentVolumeClaim; c != nil {
			s.users[t.Namespace+"/"+c.ClaimName] += v
		}
	}
}

func (s *state) allocate(task *api.TaskInfo) {
	n := s.ssn.Nodes[task.NodeName]
	if n == nil {
		return // an eviction put back on a node the session does not have
	}
	s.nodeOf[task.UID] = n
	s.record(task, n, 1)
}

func (s *state) deallocate(task *api.TaskInfo) {
	n := s.nodeOf[task.UID]
	if n == nil {
		n = s.ssn.Nodes[task.NodeName] // an eviction: the task still names its node
	}
	if n == nil {
		return
	}
	s.record(task, n, -1)
}

// record counts a placement (v 1) or its undoing (v -1) where counts were
// made already; counts made later read the nodes' tasks, which the
// session has changed before it tells the handlers.
func (s *state) record(task *api.TaskInfo, n *api.NodeInfo, v int) {
	if s.users != nil {
		s.countUser(task, v)
	}
	if nv := s.nodes[n]; nv != nil && nv.attached != nil {
		for _, a := range s.attachedOf(task) {
			nv.add(a, v)
		}
	}
}
