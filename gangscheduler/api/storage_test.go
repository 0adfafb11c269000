package api_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// liveStorage stands in for informer stores: what it holds changes while
// a snapshot is in use, and it counts the lookups.
type liveStorage struct {
	objs  api.StorageObjects
	reads int
}

func (l *liveStorage) PersistentVolumeClaim(ns, name string) *corev1.PersistentVolumeClaim {
	l.reads++
	return l.objs.Index().PersistentVolumeClaim(ns, name)
}

func (l *liveStorage) PersistentVolume(name string) *corev1.PersistentVolume {
	l.reads++
	return l.objs.Index().PersistentVolume(name)
}

func (l *liveStorage) StorageClass(name string) *storagev1.StorageClass {
	l.reads++
	return l.objs.Index().StorageClass(name)
}

func (l *liveStorage) CSINode(name string) *storagev1.CSINode {
	l.reads++
	return l.objs.Index().CSINode(name)
}

// A snapshot reads each storage object once, on first use, and keeps that
// answer (absent included) while the source changes: its decisions stay a
// function of what it read. The next snapshot reads afresh.
func TestSnapshotStorageReadsOnce(t *testing.T) {
	src := &liveStorage{objs: api.StorageObjects{
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{st.MakePVC("ns", "data").BoundTo("pv-1").Obj()},
		PersistentVolumes:      []*corev1.PersistentVolume{st.MakePV("pv-1").Obj()},
		StorageClasses:         []*storagev1.StorageClass{st.MakeStorageClass("fast", storagev1.VolumeBindingImmediate)},
		CSINodes:               []*storagev1.CSINode{st.MakeCSINode("n1").Driver("ebs", 25).Obj()},
	}}
	snap, err := api.NewSnapshot(api.Cluster{Storage: src})
	if err != nil {
		t.Fatal(err)
	}
	first := snap.PersistentVolumeClaim("ns", "data")
	if first == nil || first.Spec.VolumeName != "pv-1" {
		t.Fatalf("claim ns/data = %v, want the one bound to pv-1", first)
	}
	if snap.PersistentVolumeClaim("ns", "late") != nil || snap.PersistentVolume("pv-1") == nil ||
		snap.StorageClass("fast") == nil || snap.CSINode("n1") == nil || snap.PersistentVolumeClaim("other", "data") != nil {
		t.Fatal("lookups do not find what the source holds, by namespace and name")
	}
	reads := src.reads

	// The cluster moves on: the claim is rebound, another appears, the
	// class and the CSINode are deleted.
	src.objs = api.StorageObjects{PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{
		st.MakePVC("ns", "data").BoundTo("pv-2").Obj(), st.MakePVC("ns", "late").Obj(),
	}}
	if got := snap.PersistentVolumeClaim("ns", "data"); got != first {
		t.Errorf("claim ns/data changed within the snapshot (now %p, first %p)", got, first)
	}
	if snap.PersistentVolumeClaim("ns", "late") != nil {
		t.Error("a claim absent at first read appeared within the snapshot")
	}
	if snap.StorageClass("fast") == nil || snap.CSINode("n1") == nil || snap.PersistentVolume("pv-1") == nil {
		t.Error("objects deleted from the source vanished within the snapshot")
	}
	if src.reads != reads {
		t.Errorf("%d more reads of the source for keys already read", src.reads-reads)
	}

	next, err := api.NewSnapshot(api.Cluster{Storage: src})
	if err != nil {
		t.Fatal(err)
	}
	if got := next.PersistentVolumeClaim("ns", "data"); got == nil || got.Spec.VolumeName != "pv-2" {
		t.Errorf("the next snapshot reads claim ns/data as %v, want bound to pv-2", got)
	}

	none, err := api.NewSnapshot(api.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	if none.PersistentVolumeClaim("ns", "data") != nil || none.CSINode("n1") != nil {
		t.Error("a snapshot without storage finds objects")
	}
}
