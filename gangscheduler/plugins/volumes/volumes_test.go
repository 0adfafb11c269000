package volumes_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/nodeorder"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/volumes"
)

const (
	zone   = corev1.LabelTopologyZone
	driver = "disk.csi.example.com"
)

// gpuNode is a node with 4 GPUs: without a volume rule the node order
// packs a gang's 1-GPU pods onto the first node, so a rule that spreads
// or pins them shows.
func gpuNode(name string) *st.NodeWrapper { return st.MakeNode(name).Capacity("16", "64Gi", 4) }

func nodes(names ...string) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range names {
		out = append(out, gpuNode(n).Obj())
	}
	return out
}

// member is pending pod i of gang g, 1 GPU.
func member(i int) *st.PodWrapper {
	return st.MakePod("ns", fmt.Sprintf("g-%d", i)).Job("g").Req("1", "1Gi").GPU(1)
}

// running is a pod of no gang already running on a node.
func running(name, on string) *st.PodWrapper {
	return st.MakePod("ns", name).Req("1", "1Gi").Node(on).Phase(corev1.PodRunning)
}

func pods(ps ...*st.PodWrapper) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range ps {
		out = append(out, p.Obj())
	}
	return out
}

// claims are storage objects.
type claims = api.StorageObjects

func pvcs(cs ...*st.PVCWrapper) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, c := range cs {
		out = append(out, c.Obj())
	}
	return out
}

func pvs(vs ...*st.PVWrapper) []*corev1.PersistentVolume {
	var out []*corev1.PersistentVolume
	for _, v := range vs {
		out = append(out, v.Obj())
	}
	return out
}

// bound is claim ns/name bound to volume pv.
func bound(name, pv string) *st.PVCWrapper { return st.MakePVC("ns", name).BoundTo(pv) }

// csiPV is a CSI volume of driver, its handle its name.
func csiPV(name string) *st.PVWrapper { return st.MakePV(name).CSI(driver, name) }

func csiNode(node string, limit int32) *storagev1.CSINode {
	return st.MakeCSINode(node).Driver(driver, limit).Obj()
}

// place runs allocate with plugs (the default plugins if none) on a
// snapshot with the storage objects, and returns pod -> node of its
// decisions, and the session.
func place(t *testing.T, ns []*corev1.Node, ps []*corev1.Pod, storage claims, jobs []*api.JobInfo, plugs ...framework.Plugin) (map[string]string, *framework.Session) {
	t.Helper()
	if len(plugs) == 0 {
		plugs = plugins.Default()
	}
	ssn := framework.OpenSession(st.MustSnapshotWithStorage(ns, ps, jobs, storage), plugs...)
	ssn.Run(actions.NewAllocate())
	out := map[string]string{}
	for _, d := range ssn.Bindings() {
		out[d.Task.Name] = d.Node
	}
	return out, ssn
}

// outcome is what a test expects of gang g: placed where want says (pod
// -> node; "" for "anywhere"), or nothing placed and a finding whose
// reason is reason and whose message contains message.
type outcome struct {
	want            map[string]string
	reason, message string
}

func (o outcome) check(t *testing.T, placed map[string]string, ssn *framework.Session, job *api.JobInfo) {
	t.Helper()
	finding := ssn.Unschedulable()[job.UID]
	if o.want == nil {
		if len(placed) != 0 {
			t.Fatalf("placed %v, want nothing", placed)
		}
		if finding.Reason != o.reason || !strings.Contains(finding.Message, o.message) {
			t.Errorf("finding %s: %q\nwant %s containing %q", finding.Reason, finding.Message, o.reason, o.message)
		}
		return
	}
	if len(placed) != len(o.want) {
		t.Fatalf("placed %v, want %v: %+v", placed, o.want, finding)
	}
	for pod, node := range o.want {
		if got, ok := placed[pod]; !ok || node != "" && got != node {
			t.Errorf("%s on %q, want %q (placed %v)", pod, got, node, placed)
		}
	}
}

func TestBoundVolumes(t *testing.T) {
	wffc := st.MakeStorageClass("local", storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := st.MakeStorageClass("fast", storagev1.VolumeBindingImmediate)
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		storage claims
		outcome
	}{
		{
			name:  "a local volume pins its member to its node",
			nodes: nodes("n0", "n1", "n2"),
			pods:  pods(member(0).Claim("data", "data-0"), member(1)),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data-0", "pv-0")),
				PersistentVolumes:      pvs(st.MakePV("pv-0").Local("n2", "/mnt/disk0").ClaimRef("ns", "data-0")),
			},
			outcome: outcome{want: map[string]string{"g-0": "n2", "g-1": ""}},
		},
		{
			// Without the volumes, packing would put both on n0.
			name:  "two members with local volumes on two nodes land there",
			nodes: nodes("n0", "n1", "n2"),
			pods:  pods(member(0).Claim("data", "data-0"), member(1).Claim("data", "data-1")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data-0", "pv-0"), bound("data-1", "pv-1")),
				PersistentVolumes:      pvs(st.MakePV("pv-0").Local("n1", "/mnt/d"), st.MakePV("pv-1").Local("n2", "/mnt/d")),
			},
			outcome: outcome{want: map[string]string{"g-0": "n1", "g-1": "n2"}},
		},
		{
			name:  "members sharing a claim share its volume's node",
			nodes: nodes("n0", "n1"),
			pods:  pods(member(0).Claim("data", "shared"), member(1).Claim("data", "shared")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("shared", "pv").AccessModes(corev1.ReadWriteMany)),
				PersistentVolumes:      pvs(st.MakePV("pv").Local("n1", "/mnt/d")),
			},
			outcome: outcome{want: map[string]string{"g-0": "n1", "g-1": "n1"}},
		},
		{
			name:  "a local volume on a node the pod cannot use",
			nodes: []*corev1.Node{gpuNode("n0").Obj(), gpuNode("n1").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()},
			pods:  pods(member(0).Claim("data", "data-0")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data-0", "pv-0")),
				PersistentVolumes:      pvs(st.MakePV("pv-0").Local("n1", "/mnt/d")),
			},
			outcome: outcome{reason: actions.ReasonNotEnoughResources,
				message: "0/2 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) had untolerated taint(s)."},
		},
		{
			// kube-scheduler matches a volume's node affinity against a node
			// made of the labels alone (volume.CheckNodeAffinity), and a
			// node without fields passes every matchFields term: a term on
			// metadata.name pins nothing. Ties go to the first node, n0.
			name:  "a volume's matchFields term is ignored, as kube-scheduler ignores it",
			nodes: nodes("n0", "n1"),
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data", "pv")),
				PersistentVolumes: []*corev1.PersistentVolume{func() *corev1.PersistentVolume {
					pv := csiPV("pv").Obj()
					pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}},
					}}}}
					return pv
				}()},
			},
			outcome: outcome{want: map[string]string{"g-0": "n0"}},
		},
		{
			name:  "the volume's zone picks the node",
			nodes: []*corev1.Node{gpuNode("a1").Label(zone, "a").Obj(), gpuNode("b1").Label(zone, "b").Obj()},
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data", "pv")),
				PersistentVolumes:      pvs(csiPV("pv").Label(zone, "b")),
			},
			outcome: outcome{want: map[string]string{"g-0": "b1"}},
		},
		{
			name:  "a regional volume, by its beta label, on a node with the GA one",
			nodes: []*corev1.Node{gpuNode("a1").Label(zone, "a").Obj(), gpuNode("c1").Label(zone, "c").Obj()},
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data", "pv")),
				PersistentVolumes:      pvs(csiPV("pv").Label(corev1.LabelFailureDomainBetaZone, "b__c")),
			},
			outcome: outcome{want: map[string]string{"g-0": "c1"}},
		},
		{
			name:  "no node in the volume's zone",
			nodes: []*corev1.Node{gpuNode("a1").Label(zone, "a").Obj(), gpuNode("a2").Label(zone, "a").Obj()},
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data", "pv")),
				PersistentVolumes:      pvs(csiPV("pv").Label(zone, "b")),
			},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: "0/2 nodes are available: 2 node(s) had no available volume zone."},
		},
		{
			// kube-scheduler's VolumeZone: a node without zone or region
			// labels is not constrained.
			name:  "a node without zone labels takes a zoned volume",
			nodes: nodes("n0"),
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("data", "pv")),
				PersistentVolumes:      pvs(csiPV("pv").Label(zone, "b")),
			},
			outcome: outcome{want: map[string]string{"g-0": "n0"}},
		},
		{
			name:    "a missing claim waits",
			nodes:   nodes("n0", "n1"),
			pods:    pods(member(0).Claim("data", "data")),
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: `0/2 nodes are available: 2 persistentvolumeclaim "data" not found.`},
		},
		{
			name:    "a claim being deleted waits",
			nodes:   nodes("n0"),
			pods:    pods(member(0).Claim("data", "data")),
			storage: claims{PersistentVolumeClaims: pvcs(bound("data", "pv").Terminating()), PersistentVolumes: pvs(csiPV("pv"))},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: `persistentvolumeclaim "data" is being deleted`},
		},
		{
			name:    "a lost claim waits",
			nodes:   nodes("n0"),
			pods:    pods(member(0).Claim("data", "data")),
			storage: claims{PersistentVolumeClaims: pvcs(bound("data", "gone").Phase(corev1.ClaimLost))},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: `persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"`},
		},
		{
			name:    "a claim bound to a volume that does not exist waits",
			nodes:   nodes("n0"),
			pods:    pods(member(0).Claim("data", "data")),
			storage: claims{PersistentVolumeClaims: pvcs(bound("data", "gone"))},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: string(volumes.ReasonPVNotExist)},
		},
		{
			name:  "an unbound claim of an Immediate class waits for the PV controller",
			nodes: nodes("n0"),
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(st.MakePVC("ns", "data").Class("fast")),
				StorageClasses:         []*storagev1.StorageClass{immediate},
			},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: "0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims."},
		},
		{
			name:    "so does one without a class",
			nodes:   nodes("n0"),
			pods:    pods(member(0).Claim("data", "data")),
			storage: claims{PersistentVolumeClaims: pvcs(st.MakePVC("ns", "data"))},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: string(volumes.ReasonUnboundClaim)},
		},
		{
			// A user's pre-binding the PV controller has not completed:
			// kube-scheduler treats it as an unbound Immediate claim.
			name:  "a claim pre-bound to a volume, the binding not completed, waits",
			nodes: nodes("n0"),
			pods:  pods(member(0).Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(st.MakePVC("ns", "data").Class("local").PreBound("pv")),
				PersistentVolumes:      pvs(st.MakePV("pv").Local("n0", "/mnt/d")),
				StorageClasses:         []*storagev1.StorageClass{wffc},
			},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: string(volumes.ReasonUnboundClaim)},
		},
		{
			name:  "an unbound claim of a WaitForFirstConsumer class refuses the gang, naming the field",
			nodes: nodes("n0"),
			pods: pods(member(0).Volume(corev1.Volume{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}).
				Claim("ckpt", "ckpt").Claim("data", "data")),
			storage: claims{
				PersistentVolumeClaims: pvcs(bound("ckpt", "pv"), st.MakePVC("ns", "data").Class("local")),
				PersistentVolumes:      pvs(csiPV("pv")),
				StorageClasses:         []*storagev1.StorageClass{wffc},
			},
			outcome: outcome{reason: framework.ReasonUnsupported, message: `pod ns/g-0: spec.volumes[2].persistentVolumeClaim (data): ` +
				`claim "data" is not bound and its StorageClass "local" binds WaitForFirstConsumer; troupe-scheduler does not bind or provision volumes: ` +
				`pre-bind the claim, or use a StorageClass with volumeBindingMode Immediate`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := st.MakeJob("ns", "g").MinMember(int32(len(tt.pods))).Obj()
			placed, ssn := place(t, tt.nodes, tt.pods, tt.storage, []*api.JobInfo{job})
			tt.check(t, placed, ssn, job)
		})
	}
}

// A generic ephemeral volume's claim is <pod>-<volume>, made by the
// ephemeral volume controller and owned by the pod.
func TestEphemeralVolumes(t *testing.T) {
	pod := member(0).Ephemeral("scratch", "local")
	other := st.MakePod("ns", "someone-else")
	tests := []struct {
		name    string
		storage claims
		outcome
	}{
		{
			name: "its own claim, bound to a local volume, pins it",
			storage: claims{
				PersistentVolumeClaims: pvcs(st.EphemeralClaim(pod.Obj(), "scratch").Class("local").BoundTo("pv")),
				PersistentVolumes:      pvs(st.MakePV("pv").Local("n1", "/mnt/d")),
			},
			outcome: outcome{want: map[string]string{"g-0": "n1"}},
		},
		{
			name:    "before the controller made the claim, it waits",
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: `waiting for ephemeral volume controller to create the persistentvolumeclaim "g-0-scratch"`},
		},
		{
			name: "a claim of that name the pod does not own: it waits",
			storage: claims{
				PersistentVolumeClaims: pvcs(st.MakePVC("ns", "g-0-scratch").OwnedBy(other.Obj()).BoundTo("pv")),
				PersistentVolumes:      pvs(st.MakePV("pv").Local("n1", "/mnt/d")),
			},
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: "PVC ns/g-0-scratch was not created for pod ns/g-0 (pod is not owner)"},
		},
		{
			name: "its claim not bound, of a WaitForFirstConsumer class: the gang is refused",
			storage: claims{
				PersistentVolumeClaims: pvcs(st.EphemeralClaim(pod.Obj(), "scratch").Class("local")),
				StorageClasses:         []*storagev1.StorageClass{st.MakeStorageClass("local", storagev1.VolumeBindingWaitForFirstConsumer)},
			},
			outcome: outcome{reason: framework.ReasonUnsupported, message: `pod ns/g-0: spec.volumes[0].ephemeral (scratch): claim "g-0-scratch" is not bound`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := st.MakeJob("ns", "g").Obj()
			placed, ssn := place(t, nodes("n0", "n1"), pods(pod), tt.storage, []*api.JobInfo{job})
			tt.check(t, placed, ssn, job)
		})
	}
}

// ReadWriteOncePod: a claim with that mode in use by a pod on a node, or
// placed earlier in the session, keeps every other pod off.
func TestReadWriteOncePod(t *testing.T) {
	rwop := func(name string) *st.PVCWrapper {
		return bound(name, "pv-"+name).AccessModes(corev1.ReadWriteOncePod)
	}
	storage := claims{
		PersistentVolumeClaims: pvcs(rwop("data"), rwop("other"), bound("rwo", "pv-rwo")),
		PersistentVolumes:      pvs(csiPV("pv-data"), csiPV("pv-other"), csiPV("pv-rwo")),
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		outcome
	}{
		{
			name:    "in use by a running pod",
			pods:    pods(running("holder", "n0").Claim("data", "data"), member(0).Claim("data", "data")),
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: "0/2 nodes are available: 2 " + string(volumes.ReasonReadWriteOncePodConflict)},
		},
		{
			name:    "in use by a pod being deleted",
			pods:    pods(running("holder", "n0").Claim("data", "data").Terminating(), member(0).Claim("data", "data")),
			outcome: outcome{reason: actions.ReasonNotEnoughResources, message: string(volumes.ReasonReadWriteOncePodConflict)},
		},
		{
			name:    "a finished pod holds it no more",
			pods:    pods(running("holder", "n0").Claim("data", "data").Phase(corev1.PodSucceeded), member(0).Claim("data", "data")),
			outcome: outcome{want: map[string]string{"g-0": ""}},
		},
		{
			name:    "another claim in use does not matter",
			pods:    pods(running("holder", "n0").Claim("data", "other"), member(0).Claim("data", "data")),
			outcome: outcome{want: map[string]string{"g-0": ""}},
		},
		{
			// kube-scheduler's rule is about the pod's ReadWriteOncePod
			// claims; two pods sharing a ReadWriteOnce claim may meet.
			name:    "a ReadWriteOnce claim in use does not matter",
			pods:    pods(running("holder", "n0").Claim("data", "rwo"), member(0).Claim("data", "rwo")),
			outcome: outcome{want: map[string]string{"g-0": ""}},
		},
		{
			name: "two pending members of one gang use it: the gang can never run whole",
			pods: pods(member(0).Claim("data", "data"), member(1).Claim("data", "data")),
			outcome: outcome{reason: volumes.ReasonReadWriteOncePodShared, message: `pods ns/g-0 and ns/g-1 both use PersistentVolumeClaim "data", ` +
				`whose access mode is ReadWriteOncePod`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := int32(0)
			for _, p := range tt.pods {
				if p.Spec.NodeName == "" {
					members++
				}
			}
			job := st.MakeJob("ns", "g").MinMember(members).Obj()
			placed, ssn := place(t, nodes("n0", "n1"), tt.pods, storage, []*api.JobInfo{job})
			tt.check(t, placed, ssn, job)
		})
	}

	t.Run("a gang that is not placed whole gives the claim back", func(t *testing.T) {
		a, b := st.MakeJob("ns", "a").MinMember(2).Priority(10).Obj(), st.MakeJob("ns", "b").Obj()
		ps := pods(
			st.MakePod("ns", "a-0").Job("a").Req("1", "1Gi").Claim("data", "data"),
			st.MakePod("ns", "a-1").Job("a").Req("1", "1Gi").GPU(100),
			st.MakePod("ns", "b-0").Job("b").Req("1", "1Gi").Claim("data", "data"),
		)
		placed, _ := place(t, nodes("n0", "n1"), ps, storage, []*api.JobInfo{a, b})
		if _, ok := placed["b-0"]; !ok || len(placed) != 1 {
			t.Errorf("placed %v, want b-0 alone", placed)
		}
	})

	// Gang-aware: a gang placed earlier in the session holds the claim
	// for the next one, as a pod on a node would.
	t.Run("placed earlier in the session", func(t *testing.T) {
		first := st.MakeJob("ns", "first").Priority(10).Obj()
		second := st.MakeJob("ns", "second").Obj()
		ps := pods(
			st.MakePod("ns", "first-0").Job("first").Req("1", "1Gi").Claim("data", "data"),
			st.MakePod("ns", "second-0").Job("second").Req("1", "1Gi").Claim("data", "data"),
		)
		placed, ssn := place(t, nodes("n0", "n1"), ps, storage, []*api.JobInfo{first, second})
		if _, ok := placed["first-0"]; !ok || len(placed) != 1 {
			t.Fatalf("placed %v, want first-0 alone", placed)
		}
		if f := ssn.Unschedulable()[second.UID]; !strings.Contains(f.Message, string(volumes.ReasonReadWriteOncePodConflict)) {
			t.Errorf("second gang's finding %q, want it to say %q", f.Message, volumes.ReasonReadWriteOncePodConflict)
		}
	})
}

// The room kept on a node for a gang that waits for pods to leave
// (framework.Session.Reserve) holds its volumes there as its pod would:
// its ReadWriteOncePod claim is in use, and its volumes count against the
// node's attach limit, for every pod placed after the reservation. The
// plugin counts both on first ask, after the reservation: from the node's
// nominated pods as well as its tasks.
func TestReservedRoomHoldsItsVolumes(t *testing.T) {
	storage := claims{
		PersistentVolumeClaims: pvcs(bound("data", "pv-data").AccessModes(corev1.ReadWriteOncePod), bound("own", "pv-own"), bound("mine", "pv-mine")),
		PersistentVolumes:      pvs(csiPV("pv-data"), csiPV("pv-own"), csiPV("pv-mine")),
		CSINodes:               []*storagev1.CSINode{csiNode("n0", 1)},
	}
	tests := []struct {
		name          string
		keeper, other string // the claims of the waiting gang's pod and of the other pod
		message       string
	}{
		{name: "its ReadWriteOncePod claim is in use", keeper: "data", other: "data", message: string(volumes.ReasonReadWriteOncePodConflict)},
		{name: "its volume counts against the node's attach limit", keeper: "own", other: "mine", message: string(volumes.ReasonMaxVolumeCount)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// keeper-0 fits no node now (as a preemptor whose victims
			// still leave): only the room kept for it is on n0.
			ps := pods(
				st.MakePod("ns", "keeper-0").Job("keeper").Req("1", "1Gi").NodeSelector("pool", "none").Claim("data", tt.keeper),
				member(0).Claim("data", tt.other),
			)
			keeper, job := st.MakeJob("ns", "keeper").Priority(10).Obj(), st.MakeJob("ns", "g").Obj()
			snap := st.MustSnapshotWithStorage(nodes("n0"), ps, []*api.JobInfo{keeper, job}, storage)
			ssn := framework.OpenSession(snap, plugins.Default()...)
			ssn.Reserve([]framework.Decision{{Task: snap.Jobs[keeper.UID].PendingTasks()[0], Node: "n0"}})
			ssn.Run(actions.NewAllocate())
			placed := map[string]string{}
			for _, d := range ssn.Bindings() {
				placed[d.Task.Name] = d.Node
			}
			outcome{reason: actions.ReasonNotEnoughResources, message: tt.message}.check(t, placed, ssn, job)
		})
	}
}

// NodeVolumeLimits: a node's CSINode caps the distinct volumes of a
// driver attached to it, the gang's own members included.
func TestCSIVolumeLimits(t *testing.T) {
	// Four members with a volume each, and room for all on n0 by GPUs.
	own := func(n int) ([]*corev1.Pod, claims) {
		var ps []*corev1.Pod
		var c claims
		for i := range n {
			name := fmt.Sprintf("data-%d", i)
			ps = append(ps, member(i).Claim("data", name).Obj())
			c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, bound(name, "pv-"+name).Obj())
			c.PersistentVolumes = append(c.PersistentVolumes, csiPV("pv-"+name).Obj())
		}
		return ps, c
	}
	perNode := func(placed map[string]string) map[string]int {
		out := map[string]int{}
		for _, n := range placed {
			out[n]++
		}
		return out
	}

	t.Run("the gang's own members fill a node's limit, the rest go elsewhere", func(t *testing.T) {
		ps, c := own(4)
		c.CSINodes = []*storagev1.CSINode{csiNode("n0", 2), csiNode("n1", 2)}
		job := st.MakeJob("ns", "g").MinMember(4).Obj()
		placed, ssn := place(t, nodes("n0", "n1"), ps, c, []*api.JobInfo{job})
		if got := perNode(placed); got["n0"] != 2 || got["n1"] != 2 {
			t.Errorf("per node %v (%v), want 2 and 2: %+v", got, placed, ssn.Unschedulable()[job.UID])
		}
	})

	t.Run("volumes already attached count, and no node has room for the gang", func(t *testing.T) {
		ps, c := own(3)
		ps = append(ps, running("holder", "n1").Claim("data", "held").Obj())
		c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, bound("held", "pv-held").Obj())
		c.PersistentVolumes = append(c.PersistentVolumes, csiPV("pv-held").Obj())
		c.CSINodes = []*storagev1.CSINode{csiNode("n0", 1), csiNode("n1", 2)}
		job := st.MakeJob("ns", "g").MinMember(3).Obj()
		placed, ssn := place(t, nodes("n0", "n1"), ps, c, []*api.JobInfo{job})
		outcome{reason: actions.ReasonNotEnoughResources, message: "0/2 nodes are available: 2 " + string(volumes.ReasonMaxVolumeCount)}.
			check(t, placed, ssn, job)
	})

	t.Run("a volume shared with a pod on the node, or among members, counts once", func(t *testing.T) {
		// Room for one more volume on n0 beside the shared one: g-1's own.
		ps := pods(
			running("holder", "n0").Claim("data", "shared"),
			member(0).Claim("data", "shared"), member(1).Claim("data", "shared").Claim("own", "own-1"),
		)
		c := claims{
			PersistentVolumeClaims: pvcs(bound("shared", "pv").AccessModes(corev1.ReadWriteMany), bound("own-1", "pv-own-1")),
			PersistentVolumes:      pvs(csiPV("pv"), csiPV("pv-own-1")),
			CSINodes:               []*storagev1.CSINode{csiNode("n0", 2)},
		}
		job := st.MakeJob("ns", "g").MinMember(2).Obj()
		placed, ssn := place(t, nodes("n0"), ps, c, []*api.JobInfo{job})
		outcome{want: map[string]string{"g-0": "n0", "g-1": "n0"}}.check(t, placed, ssn, job)
	})

	t.Run("a claim a pod mounts twice counts once", func(t *testing.T) {
		c := claims{PersistentVolumeClaims: pvcs(bound("data", "pv")), PersistentVolumes: pvs(csiPV("pv")), CSINodes: []*storagev1.CSINode{csiNode("n0", 1)}}
		job := st.MakeJob("ns", "g").Obj()
		placed, ssn := place(t, nodes("n0"), pods(member(0).Claim("data", "data").Claim("again", "data")), c, []*api.JobInfo{job})
		outcome{want: map[string]string{"g-0": "n0"}}.check(t, placed, ssn, job)
	})

	t.Run("a node over its limit (lowered since) takes a pod whose volumes it has", func(t *testing.T) {
		ps := pods(running("a", "n0").Claim("data", "vol-a"), running("b", "n0").Claim("data", "vol-b"), member(0).Claim("data", "vol-a"))
		c := claims{
			PersistentVolumeClaims: pvcs(bound("vol-a", "pv-a").AccessModes(corev1.ReadWriteMany), bound("vol-b", "pv-b")),
			PersistentVolumes:      pvs(csiPV("pv-a"), csiPV("pv-b")),
			CSINodes:               []*storagev1.CSINode{csiNode("n0", 1)},
		}
		job := st.MakeJob("ns", "g").Obj()
		placed, ssn := place(t, nodes("n0"), ps, c, []*api.JobInfo{job})
		outcome{want: map[string]string{"g-0": "n0"}}.check(t, placed, ssn, job)
	})

	t.Run("a gang that is not placed whole gives back what its members took", func(t *testing.T) {
		c := claims{
			PersistentVolumeClaims: pvcs(bound("a-0", "pv-a-0"), bound("a-1", "pv-a-1"), bound("b-0", "pv-b-0")),
			PersistentVolumes:      pvs(csiPV("pv-a-0"), csiPV("pv-a-1"), csiPV("pv-b-0")),
			CSINodes:               []*storagev1.CSINode{csiNode("n0", 1)},
		}
		a, b := st.MakeJob("ns", "a").MinMember(2).Priority(10).Obj(), st.MakeJob("ns", "b").Obj()
		ps := pods(
			st.MakePod("ns", "a-0").Job("a").Req("1", "1Gi").Claim("data", "a-0"),
			st.MakePod("ns", "a-1").Job("a").Req("1", "1Gi").Claim("data", "a-1"),
			st.MakePod("ns", "b-0").Job("b").Req("1", "1Gi").Claim("data", "b-0"),
		)
		placed, _ := place(t, nodes("n0"), ps, c, []*api.JobInfo{a, b})
		if len(placed) != 1 || placed["b-0"] != "n0" {
			t.Errorf("placed %v, want b-0 alone on n0: gang a's member took the node's last attachment and gave it back", placed)
		}
	})

	t.Run("another driver's limit, or a node without one, does not apply", func(t *testing.T) {
		ps, c := own(2)
		c.CSINodes = []*storagev1.CSINode{st.MakeCSINode("n0").Driver("other.csi.example.com", 0).Driver(driver, -1).Obj()}
		job := st.MakeJob("ns", "g").MinMember(2).Obj()
		placed, ssn := place(t, nodes("n0"), ps, c, []*api.JobInfo{job})
		outcome{want: map[string]string{"g-0": "n0", "g-1": "n0"}}.check(t, placed, ssn, job)
	})
}

// Volumes only some plugin honours refuse their gang, naming the field,
// when that plugin is left out; inline in-tree disks are honoured by none.
func TestRefusedVolumes(t *testing.T) {
	withoutVolumes := []framework.Plugin{priority.New(), gang.New(), predicates.New(predicates.Config{}), nodeorder.New(nodeorder.Config{})}
	storage := claims{PersistentVolumeClaims: pvcs(bound("data", "pv")), PersistentVolumes: pvs(csiPV("pv"))}

	job := st.MakeJob("ns", "g").Obj()
	placed, ssn := place(t, nodes("n0"), pods(member(0).Claim("data", "data")), storage, []*api.JobInfo{job}, withoutVolumes...)
	outcome{reason: framework.ReasonUnsupported,
		message: "pod ns/g-0: spec.volumes[].persistentVolumeClaim is honoured by the volumes plugin, which this scheduler's configuration leaves out"}.
		check(t, placed, ssn, job)

	disk := member(0).Volume(corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{
		GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "pd-1"},
	}})
	job = st.MakeJob("ns", "g").Obj()
	placed, ssn = place(t, nodes("n0"), pods(disk), claims{}, []*api.JobInfo{job})
	outcome{reason: framework.ReasonUnsupported, message: "pod ns/g-0: spec.volumes[].gcePersistentDisk is not supported by troupe-scheduler"}.
		check(t, placed, ssn, job)
}
