#!/usr/bin/env bash
# Builds kwok (simulated nodes and pod lifecycles for whole-cluster runs)
# from the Go module proxy, copies the stage configs kwok needs from the
# module's own files, and prints the folder: <folder>/kwok and
# <folder>/stages/*.yaml.
#
# The binary is cached once per version in kwok-<version>/. The folder
# printed is keyed by the version and the stage set as well, so that a
# change of the stages below makes a new folder (an old cache is never
# taken for one with the new stages) without rebuilding kwok.
set -euo pipefail

version=${KWOK_VERSION:-v0.8.0}
cache_root=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}

# The stage folders of the module: without stages kwok exits with "no
# stages found". node/fast: nodes go Ready at once; node/heartbeat: their
# status and leases are kept fresh; pod/fast: a bound pod goes Running and a
# deleted one goes away; pod/chaos: a pod labelled
# pod-container-running-failed.stage.kwok.x-k8s.io=true (or
# pod-init-container-running-failed...) fails, with the exit code of its
# .../exit-code annotation. The chaos stages select on their label, so no
# other pod is touched.
stages=(node/fast node/heartbeat pod/fast pod/chaos)
stage_key=$(printf '%s\n' "${stages[@]}" | sha256sum | cut -c1-12)

bin_dir="$cache_root/kwok-$version"
out="$cache_root/kwok-$version-stages-$stage_key"

# The folder appears whole (built aside, then moved), or not at all.
if [ -x "$out/kwok" ] && [ -d "$out/stages" ]; then
  echo "$out"
  exit 0
fi

tmp_bin="$bin_dir.tmp.$$"
tmp="$out.tmp.$$"
trap 'rm -rf "$tmp_bin" "$tmp"' EXIT

if [ ! -x "$bin_dir/kwok" ]; then
  echo "kwok.sh: building kwok $version into $bin_dir" >&2
  mkdir -p "$tmp_bin"
  GOBIN="$tmp_bin" CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$version"
  rm -rf "$bin_dir"
  mv "$tmp_bin" "$bin_dir"
fi

echo "kwok.sh: copying the stages ${stages[*]} of kwok $version into $out" >&2
mkdir -p "$tmp/stages"
moddir=$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
for stage in "${stages[@]}"; do
  found=0
  for f in "$moddir/kustomize/stage/$stage"/*.yaml; do
    case "$(basename "$f")" in kustomization.yaml) continue ;; esac
    [ -f "$f" ] || continue
    cp "$f" "$tmp/stages/$(echo "$stage" | tr / -)-$(basename "$f")"
    found=1
  done
  if [ "$found" = 0 ]; then
    echo "kwok.sh: kwok $version has no stage configs in kustomize/stage/$stage" >&2
    exit 1
  fi
done
# A hard link shares the cached binary; a copy where links cannot go.
ln -f "$bin_dir/kwok" "$tmp/kwok" 2>/dev/null || cp "$bin_dir/kwok" "$tmp/kwok"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
