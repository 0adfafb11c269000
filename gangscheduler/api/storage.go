package api

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StorageSource looks up the storage objects the volume rules read, by
// key: PersistentVolumeClaims, PersistentVolumes, StorageClasses and
// CSINodes. Each method returns nil for an object that does not exist.
// The objects are read-only: they may be an informer's own.
//
// It is a lookup rather than a list on purpose: a cluster may hold many
// more claims and volumes than the pods of a cycle use, and a snapshot
// only reads those (see Snapshot.PersistentVolumeClaim).
type StorageSource interface {
	PersistentVolumeClaim(namespace, name string) *corev1.PersistentVolumeClaim
	PersistentVolume(name string) *corev1.PersistentVolume
	StorageClass(name string) *storagev1.StorageClass
	CSINode(name string) *storagev1.CSINode
}

// StorageObjects are storage objects as plain lists.
type StorageObjects struct {
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	CSINodes               []*storagev1.CSINode
}

// Index returns a StorageSource over the objects, indexed by key: for
// tests, and for a cache whose informers expose no store to look up in.
func (o StorageObjects) Index() StorageSource {
	ix := &storageIndex{
		pvcs:     make(map[types.NamespacedName]*corev1.PersistentVolumeClaim, len(o.PersistentVolumeClaims)),
		pvs:      make(map[string]*corev1.PersistentVolume, len(o.PersistentVolumes)),
		classes:  make(map[string]*storagev1.StorageClass, len(o.StorageClasses)),
		csiNodes: make(map[string]*storagev1.CSINode, len(o.CSINodes)),
	}
	for _, c := range o.PersistentVolumeClaims {
		ix.pvcs[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	for _, v := range o.PersistentVolumes {
		ix.pvs[v.Name] = v
	}
	for _, c := range o.StorageClasses {
		ix.classes[c.Name] = c
	}
	for _, n := range o.CSINodes {
		ix.csiNodes[n.Name] = n
	}
	return ix
}

type storageIndex struct {
	pvcs     map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs      map[string]*corev1.PersistentVolume
	classes  map[string]*storagev1.StorageClass
	csiNodes map[string]*storagev1.CSINode
}

func (ix *storageIndex) PersistentVolumeClaim(namespace, name string) *corev1.PersistentVolumeClaim {
	return ix.pvcs[types.NamespacedName{Namespace: namespace, Name: name}]
}
func (ix *storageIndex) PersistentVolume(name string) *corev1.PersistentVolume { return ix.pvs[name] }
func (ix *storageIndex) StorageClass(name string) *storagev1.StorageClass      { return ix.classes[name] }
func (ix *storageIndex) CSINode(name string) *storagev1.CSINode                { return ix.csiNodes[name] }

// storageView is a snapshot's reading of a StorageSource: each object is
// looked up at most once, on first use, and that answer (absent
// included) stands for the rest of the snapshot.
//
// That is what keeps decisions a function of the snapshot although the
// source may be live informer stores that change while a session runs:
// every plugin, every node and every later question of one cycle sees the
// object as the cycle first read it, and two sessions over equal reads
// decide alike. The cost of a cycle follows the claims, volumes and
// nodes its pods make it ask about, not how many exist. Objects of
// different kinds are read at different moments, as the pods and nodes
// are listed at theirs: informers of different kinds are never in step
// anyway.
//
// Not safe for concurrent use, like the session that reads it.
type storageView struct {
	src      StorageSource
	pvcs     map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs      map[string]*corev1.PersistentVolume
	classes  map[string]*storagev1.StorageClass
	csiNodes map[string]*storagev1.CSINode
}

func newStorageView(src StorageSource) *storageView {
	return &storageView{
		src:      src,
		pvcs:     map[types.NamespacedName]*corev1.PersistentVolumeClaim{},
		pvs:      map[string]*corev1.PersistentVolume{},
		classes:  map[string]*storagev1.StorageClass{},
		csiNodes: map[string]*storagev1.CSINode{},
	}
}

// readOnce returns m[k], reading it with get on first ask.
func readOnce[K comparable, V any](m map[K]*V, k K, get func() *V) *V {
	v, ok := m[k]
	if !ok {
		v = get()
		m[k] = v
	}
	return v
}

// PersistentVolumeClaim returns the claim namespace/name, nil if there is
// none. Like every storage lookup of a snapshot, the first answer for a
// key stands for the snapshot's life (see storageView).
func (s *Snapshot) PersistentVolumeClaim(namespace, name string) *corev1.PersistentVolumeClaim {
	v := s.storage
	if v == nil {
		return nil
	}
	return readOnce(v.pvcs, types.NamespacedName{Namespace: namespace, Name: name}, func() *corev1.PersistentVolumeClaim {
		return v.src.PersistentVolumeClaim(namespace, name)
	})
}

// PersistentVolume returns the volume name, nil if there is none.
func (s *Snapshot) PersistentVolume(name string) *corev1.PersistentVolume {
	v := s.storage
	if v == nil {
		return nil
	}
	return readOnce(v.pvs, name, func() *corev1.PersistentVolume { return v.src.PersistentVolume(name) })
}

// StorageClass returns the class name, nil if there is none.
func (s *Snapshot) StorageClass(name string) *storagev1.StorageClass {
	v := s.storage
	if v == nil {
		return nil
	}
	return readOnce(v.classes, name, func() *storagev1.StorageClass { return v.src.StorageClass(name) })
}

// CSINode returns the CSINode of node name, nil if there is none.
func (s *Snapshot) CSINode(name string) *storagev1.CSINode {
	v := s.storage
	if v == nil {
		return nil
	}
	return readOnce(v.csiNodes, name, func() *storagev1.CSINode { return v.src.CSINode(name) })
}
