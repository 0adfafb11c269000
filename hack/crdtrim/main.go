// Command crdtrim keeps only the storage version of each generated CRD.
//
// controller-gen also emits a CRD version for the upstream training-operator
// root types whose files Troupe's API package loads (same group, version and
// kind). Troupe serves exactly one schema per kind, its own, so every
// version that is not marked as the storage version is dropped.
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := trim(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trim(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return err
	}
	kept := crd.Spec.Versions[:0]
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			kept = append(kept, v)
		}
	}
	if len(kept) != 1 {
		return fmt.Errorf("want exactly one storage version, found %d", len(kept))
	}
	if len(kept) == len(crd.Spec.Versions) {
		return nil
	}
	crd.Spec.Versions = kept
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
