// Command crdtrim keeps only Troupe's own version of each generated CRD.
//
// Troupe's API package uses types from training-operator's package, which
// declares root types of the same group, version and kind. controller-gen
// then emits a second "v1" version from upstream's types, and because both
// versions share a name it marks either of them as the storage version,
// depending on map order. Troupe's schema is recognised by what only it
// has: the status field recreatedPods. Its schema is kept; the
// subresources, which controller-gen attaches by version name to the entry
// it marks as storage, are taken from that entry. The printer columns are
// set here (columns), not by markers on the types: controller-gen attaches
// upstream's columns and Troupe's to that one entry in map order, so which
// "State" column won changed from run to run.
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// troupeStatusField exists only in Troupe's JobStatus.
const troupeStatusField = "recreatedPods"

// columns are every job kind's printer columns: the job's state as the
// operator writes it (status.state: never a False condition's type), its
// whole-gang restarts and its age.
var columns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "State", Type: "string", JSONPath: ".status.state"},
	{Name: "Restarts", Type: "integer", JSONPath: ".status.gang.restarts", Description: "Whole-gang restarts (gangPolicy.restartPolicy Gang)"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

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
	var troupes, storage []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if isTroupes(v) {
			troupes = append(troupes, v)
		}
		if v.Storage {
			storage = append(storage, v)
		}
	}
	if len(troupes) != 1 || len(storage) != 1 {
		return fmt.Errorf("want exactly one version with status.%s (Troupe's schema) and one storage version, found %d and %d",
			troupeStatusField, len(troupes), len(storage))
	}
	v := storage[0]
	v.Schema = troupes[0].Schema
	v.Served = true
	v.AdditionalPrinterColumns = columns
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func isTroupes(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return false
	}
	status, ok := v.Schema.OpenAPIV3Schema.Properties["status"]
	if !ok {
		return false
	}
	_, ok = status.Properties[troupeStatusField]
	return ok
}
