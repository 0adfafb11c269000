#!/usr/bin/env bash
# Copies the PodGroup CRDs of the peer gang schedulers (and Volcano's Queue)
# from their released modules into config/crd/peers, where the envtest suites
# install them beside config/crd/bases. They are copied, never hand-written:
# `make generate` runs this script and `make verify` catches drift.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
out="$root/config/crd/peers"
# shellcheck source=peers.env
source "$here/peers.env"

fail() { echo "peer-crds.sh: $*" >&2; exit 1; }

# The Go types the backends use must be those of the CRDs the tests install.
gomod() { (cd "$root" && go list -m -f '{{.Version}}' "$1"); }
sp_api=$(gomod sigs.k8s.io/scheduler-plugins)
[ "$sp_api" = "$SCHEDULER_PLUGINS_VERSION" ] ||
  fail "go.mod pins sigs.k8s.io/scheduler-plugins $sp_api, hack/peers.env says $SCHEDULER_PLUGINS_VERSION"
volcano_api=$(gomod volcano.sh/apis)
[ "${volcano_api%.*}" = "${VOLCANO_VERSION%.*}" ] ||
  fail "go.mod pins volcano.sh/apis $volcano_api, not the API of Volcano $VOLCANO_VERSION (hack/peers.env)"

# module_dir prints where the module proxy's copy of module@version lives.
# It runs outside this module, so that go.mod and go.sum stay untouched.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
module_dir() {
  local dir
  dir=$(cd "$scratch" && go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || fail "go mod download $1@$2 gave no module directory"
  echo "$dir"
}

copy() { # module version file-in-module
  local src
  src="$(module_dir "$1" "$2")/$3"
  [ -f "$src" ] || fail "$1@$2 has no $3"
  {
    echo "# Copied by hack/peer-crds.sh from $1@$2 $3. Do not edit."
    cat "$src"
  } >"$out/$(basename "$3")"
}

mkdir -p "$out"
rm -f "$out"/*.yaml
copy volcano.sh/volcano "$VOLCANO_VERSION" config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml
copy volcano.sh/volcano "$VOLCANO_VERSION" config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml
# Volcano's scheduler also watches HyperNodes and (with its default
# ResourceTopology gate) Numatopologies: without them its caches never sync
# and it schedules nothing (internal/peers, test/e2e).
copy volcano.sh/volcano "$VOLCANO_VERSION" config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml
copy volcano.sh/volcano "$VOLCANO_VERSION" config/crd/volcano/bases/nodeinfo.volcano.sh_numatopologies.yaml
copy sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION" config/crd/bases/scheduling.x-k8s.io_podgroups.yaml
