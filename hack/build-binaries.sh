#!/usr/bin/env bash
# Builds the binaries the container image ships, static and reproducible,
# into the folder given (default bin/image): the Dockerfile runs exactly
# this, and `make image-binaries` runs it without Docker.
set -euo pipefail

out=${1:-bin/image}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$out"
# CGO off: the runtime image (distroless/static) has no libc.
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -buildid=" -o "$out/" ./cmd/operator ./cmd/scheduler
echo "$out"
