package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// manifest is one object of an example file.
type manifest struct {
	File string
	Obj  *unstructured.Unstructured
}

// loadManifests reads every object of the files, in order; objects
// without a namespace go to "default", as kubectl apply would put them.
func loadManifests(files []string) ([]manifest, error) {
	var out []manifest
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetKind() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("%s: an object without kind or metadata.name", f)
			}
			if u.GetNamespace() == "" {
				u.SetNamespace("default")
			}
			out = append(out, manifest{File: f, Obj: u})
		}
	}
	return out, nil
}

// isTrainingJob reports whether the object is a job kind the table shows.
func isTrainingJob(u *unstructured.Unstructured) bool {
	if u.GroupVersionKind().Group != kubeflowv1.GroupVersion.Group {
		return false
	}
	for _, jk := range jobKinds {
		if jk.kind == u.GetKind() {
			return true
		}
	}
	return false
}

// applyManifests creates the objects (the cluster is new, so nothing
// exists yet) and returns the keys of the training jobs among them.
func applyManifests(ctx context.Context, c client.Client, ms []manifest, note func(string)) ([]string, error) {
	var jobs []string
	for _, m := range ms {
		obj := m.Obj.DeepCopy()
		// loadManifests put every object in "default"; a cluster-scoped
		// one (a Topology) has no namespace.
		if namespaced, err := c.IsObjectNamespaced(obj); err == nil && !namespaced {
			obj.SetNamespace("")
		}
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("apply %s (%s %s): %w", filepath.Base(m.File), m.Obj.GetKind(), m.Obj.GetName(), err)
		}
		name := obj.GetName()
		if obj.GetNamespace() != "" {
			name = obj.GetNamespace() + "/" + name
		}
		note(fmt.Sprintf("applied %s: %s %s", relPath(m.File), m.Obj.GetKind(), name))
		if isTrainingJob(m.Obj) {
			jobs = append(jobs, jobKey(m.Obj.GetKind(), m.Obj.GetNamespace(), m.Obj.GetName()))
		}
	}
	return jobs, nil
}

// relPath shortens a path under the working directory.
func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !filepath.IsAbs(rel) && len(rel) < len(p) && rel[0] != '.' {
		return rel
	}
	return p
}
