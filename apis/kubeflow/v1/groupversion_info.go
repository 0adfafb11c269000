// Package v1 holds Troupe's kubeflow.org/v1 TFJob, PyTorchJob and MPIJob.
//
// The JSON shape is upstream Kubeflow's: the replica, run-policy and status
// types are github.com/kubeflow/training-operator's own, so every upstream
// manifest decodes unchanged. Troupe owns the root and spec types so that it
// can state validation as OpenAPI and CEL in the CRD schema (kubectl rejects a
// bad job at the door, without a webhook) and add its own optional fields.
//
// +kubebuilder:object:generate=true
// +groupName=kubeflow.org
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is kubeflow.org/v1.
	GroupVersion = schema.GroupVersion{Group: "kubeflow.org", Version: "v1"}

	// SchemeBuilder registers the job kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the job kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&TFJob{},
		&TFJobList{},
		&PyTorchJob{},
		&PyTorchJobList{},
		&MPIJob{},
		&MPIJobList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
