// Package troupe_test tests the Helm chart with a real helm, built from the
// Go module proxy by hack/helm.sh: its rendering for each backend, its
// values schema and lint, its image contract, and, against a real API
// server, an install whose ServiceAccounts may do what their binaries need
// and nothing more.
package troupe_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	// release is the release name of the rendered chart: its objects are
	// then named troupe-operator and troupe-scheduler.
	release   = "troupe"
	namespace = "troupe-system"
)

func chartDir() string { return filepath.Join(testutil.RepoRoot(), "charts", "troupe") }

func TestMain(m *testing.M) {
	// helm's own configuration and caches stay out of the user's home.
	home, err := os.MkdirTemp("", "troupe-chart-helm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, v := range []string{"HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"} {
		_ = os.Setenv(v, filepath.Join(home, strings.ToLower(v)))
	}
	code := m.Run()
	_ = os.RemoveAll(home)
	os.Exit(code)
}

// runHelm runs the helm that $HELM names and returns its stdout; the error
// carries its stderr, where helm says what is wrong.
func runHelm(args ...string) (string, error) {
	bin := os.Getenv("HELM")
	if bin == "" {
		return "", errors.New("HELM is not set: run the chart's tests with `make test`, or export HELM=$(hack/helm.sh)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// rendered is the chart's output for some values.
type rendered []*unstructured.Unstructured

// render runs helm template for the release with extra arguments (--set
// and friends) and fails the test if helm does.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := runHelm(append([]string{"template", release, chartDir(), "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseManifests(out)
	if err != nil {
		t.Fatalf("parse helm template output: %v", err)
	}
	return objs
}

func parseManifests(s string) (rendered, error) {
	var objs rendered
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// get returns the object of that kind and name, or nil.
func (r rendered) get(kind, name string) *unstructured.Unstructured {
	for _, o := range r {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns the objects of a kind, in order.
func (r rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// into converts the object of that kind and name into a typed one.
func into[T any](t *testing.T, r rendered, kind, name string) *T {
	t.Helper()
	o := r.get(kind, name)
	if o == nil {
		t.Fatalf("no %s %s rendered", kind, name)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	return out
}

func deployment(t *testing.T, r rendered, name string) *appsv1.Deployment {
	t.Helper()
	return into[appsv1.Deployment](t, r, "Deployment", name)
}

// flagValue returns the value of --name=value in args, and whether it is
// there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}
