#!/usr/bin/env bash
# Builds the peer gang schedulers Troupe's backends speak to, from the Go
# module proxy, through the wrapper modules under hack/peers/, and prints
# the path of each binary, one per line, in the order asked:
#
#   hack/peer-schedulers.sh volcano        Volcano's vc-scheduler ($VOLCANO_VERSION)
#   hack/peer-schedulers.sh coscheduling   kube-scheduler with scheduler-plugins
#                                          ($SCHEDULER_PLUGINS_VERSION)
#   hack/peer-schedulers.sh kueue          Kueue's manager ($KUEUE_VERSION), not a
#                                          scheduler but the queue in front of one;
#                                          its CRDs are copied beside it, in crds/
#   hack/peer-schedulers.sh training-operator
#                                          Kubeflow's training-operator manager
#                                          ($TRAINING_OPERATOR_VERSION), the operator
#                                          Troupe's is benchmarked against; its
#                                          kubeflow.org CRDs are copied beside it
#
# Versions come from hack/peers.env; a wrapper that pins another version is
# an error. Each binary is cached in a folder keyed by the version and the
# wrapper's go.mod and go.sum, so a second run only checks that it exists.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=peers.env
source "$here/peers.env"
cache_root=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}

fail() { echo "peer-schedulers.sh: $*" >&2; exit 1; }

# build name module version package binary ldflags [crd-folder]: builds
# package from the wrapper hack/peers/<name> into the cache and prints the
# binary's path. With crd-folder, the module's CRDs in that folder are
# copied beside the binary, into crds/.
build() {
  local name=$1 module=$2 version=$3 pkg=$4 bin=$5 ldflags=$6 crds=${7:-}
  local src="$here/peers/$name" pinned key out tmp start moddir
  pinned=$(cd "$src" && GOWORK=off go list -m -f '{{.Version}}' "$module")
  [ "$pinned" = "$version" ] ||
    fail "hack/peers/$name/go.mod pins $module $pinned, hack/peers.env says $version"
  key=$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)
  out="$cache_root/$name-scheduler-$version-$key"
  if [ -x "$out/$bin" ]; then
    echo "$out/$bin"
    return
  fi
  echo "peer-schedulers.sh: building $module $version ($bin) into $out (minutes on first run)" >&2
  tmp="$out.tmp.$$"
  mkdir -p "$tmp"
  # shellcheck disable=SC2064 # expand now: tmp is local to this call
  trap "rm -rf '$tmp'" EXIT
  start=$SECONDS
  (cd "$src" && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags "$ldflags" -o "$tmp/$bin" "$pkg")
  echo "peer-schedulers.sh: built $bin in $((SECONDS - start))s" >&2
  if [ -n "$crds" ]; then
    moddir=$(cd "$src" && GOWORK=off go list -m -f '{{.Dir}}' "$module")
    mkdir -p "$tmp/crds"
    cp "$moddir/$crds"/*.yaml "$tmp/crds/"
  fi
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  echo "$out/$bin"
}

volcano() {
  build volcano volcano.sh/volcano "$VOLCANO_VERSION" volcano.sh/volcano/cmd/scheduler vc-scheduler \
    "-s -w -X volcano.sh/volcano/pkg/version.Version=$VOLCANO_VERSION"
}

# The binary reports the Kubernetes version it is built from, as
# hack/controlplane.sh's do; without it it reads v0.0.0-master.
coscheduling() {
  local kube minor
  kube=$(cd "$here/peers/coscheduling" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)
  minor=$(echo "$kube" | cut -d. -f2)
  build coscheduling sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION" sigs.k8s.io/scheduler-plugins/cmd/scheduler kube-scheduler \
    "-s -w -X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
}

kueue() {
  build kueue sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue kueue \
    "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" config/components/crd/bases
}

# Not a scheduler either: the operator Troupe's replaces, which the operator
# benchmark (test/bench/operatorbench) runs on the same cluster shape.
training_operator() {
  build training-operator github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION" \
    github.com/kubeflow/training-operator/cmd/training-operator.v1 training-operator "-s -w" manifests/base/crds
}

[ $# -gt 0 ] || fail "usage: hack/peer-schedulers.sh volcano|coscheduling|kueue|training-operator..."
for peer in "$@"; do
  case "$peer" in
    volcano) volcano ;;
    coscheduling) coscheduling ;;
    kueue) kueue ;;
    training-operator) training_operator ;;
    *) fail "unknown peer \"$peer\"; allowed: volcano, coscheduling, kueue, training-operator" ;;
  esac
done
