package api_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// A pod's features name the fields of its volumes that some plugin must
// honour, each once, in a fixed order.
func TestVolumeFeatures(t *testing.T) {
	inline := func(src corev1.VolumeSource) corev1.Volume { return corev1.Volume{Name: "disk", VolumeSource: src} }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []api.PodFeature
	}{
		{"no volumes", st.MakePod("ns", "p").Obj(), nil},
		{"configMap and emptyDir need nothing", st.MakePod("ns", "p").
			Volume(corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}).
			Volume(corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}).Obj(), nil},
		{"claims and an ephemeral volume", st.MakePod("ns", "p").Claim("a", "a").Claim("b", "b").Ephemeral("scratch", "local").Obj(),
			[]api.PodFeature{api.FeaturePersistentVolumeClaim, api.FeatureEphemeralVolume}},
		{"a GCE PD inline", st.MakePod("ns", "p").Volume(inline(corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "pd"}})).Obj(),
			[]api.PodFeature{api.FeatureGCEPersistentDisk}},
		{"iSCSI and RBD inline, twice each", st.MakePod("ns", "p").
			Volume(inline(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{IQN: "a"}})).
			Volume(inline(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDImage: "a"}})).
			Volume(inline(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{IQN: "b"}})).
			Volume(inline(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDImage: "b"}})).Obj(),
			[]api.PodFeature{api.FeatureRBD, api.FeatureISCSI}},
		{"every other inline disk", st.MakePod("ns", "p").
			Volume(inline(corev1.VolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{}})).
			Volume(inline(corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{}})).
			Volume(inline(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{}})).
			Volume(inline(corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{}})).
			Volume(inline(corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{}})).
			Volume(inline(corev1.VolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{}})).Obj(),
			[]api.PodFeature{api.FeatureAWSElasticBlockStore, api.FeatureAzureDisk, api.FeatureAzureFile, api.FeatureCinder,
				api.FeatureVsphereVolume, api.FeaturePortworxVolume}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := api.NewTaskInfo("ns/j", tt.pod).Features; !slices.Equal(got, tt.want) {
				t.Errorf("features %v, want %v", got, tt.want)
			}
		})
	}
}
