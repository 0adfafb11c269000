#!/usr/bin/env bash
# Builds helm from the Go module proxy into a cache folder keyed by helm's
# version and the Kubernetes minor it reports, then prints the binary's
# path. The chart's tests read it from $HELM (`make test` sets it).
#
# The ldflags set what a release build sets: without them helm reports its
# version as "v3.22" and .Capabilities.KubeVersion as v1.20, which `helm
# lint` and `helm template` then check the chart's kubeVersion against.
# The Kubernetes minor is the test control plane's (hack/controlplane).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${HELM_VERSION:-v3.22.0}
kube_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$here/controlplane/go.mod")
[ -n "$kube_version" ] || { echo "helm.sh: no k8s.io/kubernetes requirement in $here/controlplane/go.mod" >&2; exit 1; }
kube_minor=$(echo "$kube_version" | cut -d. -f2)
cache_root=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}
out="$cache_root/helm-$version-k8s1.$kube_minor"

if [ -x "$out/helm" ]; then
  echo "$out/helm"
  exit 0
fi

echo "helm.sh: building helm $version (Kubernetes 1.$kube_minor) into $out" >&2
tmp="$out.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
pkg=helm.sh/helm/v3
ldflags="-s -w -X $pkg/internal/version.version=$version"
for p in pkg/chartutil pkg/lint/rules; do
  ldflags+=" -X $pkg/$p.k8sVersionMajor=1 -X $pkg/$p.k8sVersionMinor=$kube_minor"
done
GOBIN="$tmp" CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go install -trimpath -ldflags "$ldflags" "$pkg/cmd/helm@$version"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/helm"
