package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	rbacv1 "k8s.io/api/rbac/v1"
)

func rule(groups, resources, verbs []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

func TestSplitOwnNamespace(t *testing.T) {
	pods := rule([]string{""}, []string{"pods"}, []string{"get"})
	leases := rule([]string{"coordination.k8s.io"}, []string{"leases"}, []string{"get", "create", "update"})
	tests := []struct {
		name        string
		rules       []rbacv1.PolicyRule
		wantCluster int
		wantOwn     int
		wantErr     string
	}{
		{name: "the Lease moves to the namespace", rules: []rbacv1.PolicyRule{pods, leases}, wantCluster: 1, wantOwn: 1},
		{name: "no Lease", rules: []rbacv1.PolicyRule{pods}, wantCluster: 1},
		{
			name:    "a Lease merged with other resources",
			rules:   []rbacv1.PolicyRule{rule([]string{"coordination.k8s.io"}, []string{"leases", "leasecandidates"}, []string{"get"})},
			wantErr: "rules[0] mixes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, own, err := splitOwnNamespace(tt.rules)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cluster) != tt.wantCluster || len(own) != tt.wantOwn {
				t.Errorf("%d cluster-wide and %d namespaced rules, want %d and %d", len(cluster), len(own), tt.wantCluster, tt.wantOwn)
			}
		})
	}
}

func TestCheckNoWildcards(t *testing.T) {
	tests := []struct {
		name    string
		rule    rbacv1.PolicyRule
		wantErr string
	}{
		{name: "named", rule: rule([]string{""}, []string{"pods"}, []string{"get"})},
		{name: "every verb", rule: rule([]string{""}, []string{"pods"}, []string{"*"}), wantErr: "rules[0].verbs has a wildcard"},
		{name: "every resource", rule: rule([]string{""}, []string{"*"}, []string{"get"}), wantErr: "rules[0].resources has a wildcard"},
		{name: "every subresource", rule: rule([]string{""}, []string{"pods/*"}, []string{"get"}), wantErr: "rules[0].resources has a wildcard"},
		{name: "every group", rule: rule([]string{"*"}, []string{"pods"}, []string{"get"}), wantErr: "rules[0].apiGroups has a wildcard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkNoWildcards([]rbacv1.PolicyRule{tt.rule})
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Text that looks like a template action comes out of the chart as it went
// in.
func TestEscape(t *testing.T) {
	for _, in := range []string{"plain", "rule: self.x == '{{'", "{{ .Values.x }} and }}"} {
		tmpl, err := template.New("t").Parse(string(escape([]byte(in))))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, nil); err != nil {
			t.Fatal(err)
		}
		if out.String() != in {
			t.Errorf("escape(%q) renders %q", in, out.String())
		}
	}
}

// A role.yaml with Roles in two namespaces cannot become the chart's one
// Role in the release's namespace.
func TestRBACDefinesRefusesTwoNamespaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "role.yaml")
	doc := func(kind, ns string) string {
		return "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: x\n  namespace: " + ns +
			"\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n"
	}
	if err := os.WriteFile(path, []byte(doc("ClusterRole", "")+doc("Role", "a")+doc("Role", "b")), 0o600); err != nil {
		t.Fatal(err)
	}
	err := rbacDefines(&bytes.Buffer{}, "x", path)
	if err == nil || !strings.Contains(err.Error(), "want at most one namespaced Role") {
		t.Errorf("error %v, want one about the two namespaces", err)
	}
}
