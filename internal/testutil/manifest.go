package testutil

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ApplyManifest creates the object a YAML manifest describes, in the given
// namespace, exactly as kubectl create would send it: unknown or misspelt
// fields reach the API server, which decides.
func ApplyManifest(ctx context.Context, c client.Client, namespace, manifest string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		return nil, err
	}
	obj.SetNamespace(namespace)
	return obj, c.Create(ctx, obj)
}
