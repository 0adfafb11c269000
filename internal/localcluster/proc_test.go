package localcluster

import "testing"

func TestIsProcessOf(t *testing.T) {
	binaries := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}
	const dir = "/tmp/troupe-demo"
	cases := []struct {
		argv []string
		want bool
	}{
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/troupe-demo/etcd"}, true},
		{[]string{"/cache/kwok-v0.8.0/kwok", "--kubeconfig=/tmp/troupe-demo/kubeconfig", "--config=/cache/stages/a.yaml"}, true},
		{[]string{"kube-apiserver", "--cert-dir", "/tmp/troupe-demo/pki"}, true},
		// Another demo's folder, another program, or no path of the folder.
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/troupe-demo2/etcd"}, false},
		{[]string{"/cache/controlplane/etcd", "--data-dir=/tmp/k8s_test_framework_1"}, false},
		{[]string{"tail", "-f", "/tmp/troupe-demo/logs/kwok.log"}, false},
		{[]string{"kwok", "--kubeconfig=/home/me/tmp/troupe-demo/kubeconfig"}, false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := IsProcessOf(tc.argv, dir, binaries); got != tc.want {
			t.Errorf("IsProcessOf(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
