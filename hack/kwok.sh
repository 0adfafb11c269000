#!/usr/bin/env bash
# Builds kwok (simulated nodes and pod lifecycles for whole-cluster runs)
# from the Go module proxy into a cache folder keyed by version, copies the
# stage configs kwok needs from the module's own files, and prints the
# folder: <folder>/kwok and <folder>/stages/*.yaml.
set -euo pipefail

version=${KWOK_VERSION:-v0.8.0}
cache_root=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}
out="$cache_root/kwok-$version"

if [ -x "$out/kwok" ] && [ -n "$(ls "$out"/stages/*.yaml 2>/dev/null)" ]; then
  echo "$out"
  exit 0
fi

echo "kwok.sh: building kwok $version into $out" >&2
tmp="$out.tmp.$$"
mkdir -p "$tmp/stages"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$version"
moddir=$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
# Without stages kwok exits with "no stages found": fast node readiness,
# node heartbeats, and fast pod lifecycles.
for stage in node/fast node/heartbeat pod/fast; do
  for f in "$moddir/kustomize/stage/$stage"/*.yaml; do
    case "$(basename "$f")" in kustomization.yaml) continue ;; esac
    cp "$f" "$tmp/stages/$(echo "$stage" | tr / -)-$(basename "$f")"
  done
done
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
