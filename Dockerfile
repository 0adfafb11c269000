# The Troupe image: both binaries, /operator and /scheduler, static, on a
# distroless base that runs as a non-root user (65532) and has no shell.
#
#   docker build -t ghcr.io/troupe-ml/troupe:dev .
#
# The build runs hack/build-binaries.sh, which `make image-binaries` runs
# without Docker, so the binaries here are those that make builds.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
# Modules first: a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH hack/build-binaries.sh /out

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/troupe-ml/troupe" \
      org.opencontainers.image.description="Troupe: gang-scheduled TFJob, PyTorchJob and MPIJob operator and gang scheduler"
COPY --from=build /out/operator /operator
COPY --from=build /out/scheduler /scheduler
USER 65532:65532
ENTRYPOINT ["/operator"]
