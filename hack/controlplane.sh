#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler from
# Go modules into a cache folder keyed by the Kubernetes version and the
# wrapper module's go.mod and go.sum, then prints that folder. envtest reads it
# as KUBEBUILDER_ASSETS; test/differential runs its kube-scheduler as the
# upstream reference.
#
# A second run with the same inputs only checks that the binaries exist.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/controlplane"
kube_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$src/go.mod")
[ -n "$kube_version" ] || { echo "controlplane.sh: no k8s.io/kubernetes requirement in $src/go.mod" >&2; exit 1; }
minor=$(echo "$kube_version" | cut -d. -f2)
key=$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)
cache_root=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}
out="$cache_root/controlplane/$kube_version-$key"

if [ -x "$out/etcd" ] && [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ] &&
  [ -x "$out/kube-scheduler" ]; then
  echo "$out"
  exit 0
fi

echo "controlplane.sh: building Kubernetes $kube_version control plane into $out (a few minutes on first run)" >&2
tmp="$out.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
(
  cd "$src"
  CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    ./etcd
)
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
