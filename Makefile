# Troupe's build, test and generation entry points. Every tool comes from the
# Go module proxy at a pinned version and is cached under $(CACHE), keyed by
# version, so a second run costs seconds.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CACHE ?= $(or $(TROUPE_CACHE),$(HOME)/.cache/troupe)
export TROUPE_CACHE := $(CACHE)

CONTROLLER_TOOLS_VERSION ?= v0.21.0
CONTROLLER_GEN ?= $(CACHE)/tools/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

GO_TEST_FLAGS ?= -timeout 20m

.PHONY: all
all: build

##@ Demo

DEMO_FLAGS ?=

.PHONY: demo
demo: ## A local cluster: control plane, simulated CPU/GPU nodes (kwok), operator, troupe-scheduler and the examples, shown live until Ctrl-C.
	go build -o bin/demo ./cmd/demo
	bin/demo --control-plane-dir="$$(hack/controlplane.sh)" --kwok-dir="$$(hack/kwok.sh)" $(DEMO_FLAGS)

.PHONY: demo-smoke
demo-smoke: ## The demo without a terminal: exits 0 once every example gang runs on the right nodes and the gang-restart example is back as generation 1, 1 otherwise.
	go build -o bin/demo ./cmd/demo
	bin/demo --control-plane-dir="$$(hack/controlplane.sh)" --kwok-dir="$$(hack/kwok.sh)" --until-running --timeout=3m $(DEMO_FLAGS)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and RBAC from the code's markers.
	$(CONTROLLER_GEN) object paths=./apis/...
	$(CONTROLLER_GEN) crd:crdVersions=v1,maxDescLen=0,generateEmbeddedObjectMeta=true paths=./apis/... output:crd:dir=config/crd/bases
	go run ./hack/crdtrim config/crd/bases/kubeflow.org_*.yaml
	$(CONTROLLER_GEN) rbac:roleName=troupe-operator paths=./internal/operator/... output:rbac:dir=config/rbac/operator
	hack/peer-crds.sh
	$(CONTROLLER_GEN) rbac:roleName=troupe-scheduler paths=./gangscheduler/app/... output:rbac:dir=config/rbac/scheduler
	go run ./hack/chartgen --config=config --out=charts/troupe/templates/generated

.PHONY: manifests
manifests: generate ## Alias of generate.

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet, golangci-lint, and the Markdown files' links (hack/doclinks).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...
	go vet -tags e2e ./test/e2e/...
	$(GOLANGCI_LINT) run --build-tags e2e ./test/e2e/...
	go run ./hack/doclinks README.md docs charts/troupe/README.md

.PHONY: verify
verify: generate lint ## Regenerate everything and fail if the tree changed.
	go mod tidy
	git diff --exit-code
	@untracked=$$(git ls-files --others --exclude-standard); if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

##@ Build

.PHONY: build
build: ## Build every binary (operator, scheduler, kubectl-troupe, demo, bench) into bin/
	go build -o bin/ ./cmd/...

.PHONY: image-binaries
image-binaries: ## Build the container image's binaries as the Dockerfile does (static, trimmed) into bin/image, without Docker.
	hack/build-binaries.sh bin/image

.PHONY: helm
helm: ## Build helm from the Go module proxy (cached); prints its path.
	hack/helm.sh

##@ Test

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver, kube-controller-manager and kube-scheduler from Go modules (cached).
	hack/controlplane.sh

.PHONY: test
test: ## Unit and envtest suites against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh)" HELM="$$(hack/helm.sh)" go test $(GO_TEST_FLAGS) ./...

DIFFERENTIAL_FLAGS ?=

.PHONY: differential
differential: ## The differential suite alone, verbose: troupe-scheduler against kube-scheduler, judged by an independent checker (docs/differential.md).
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh)" go test -count=1 ./test/differential/ -ginkgo.v $(DIFFERENTIAL_FLAGS)

.PHONY: peers
peers: ## Build the peers (Volcano's scheduler, kube-scheduler with Coscheduling, Kueue's manager, Kubeflow's training-operator) from Go modules (cached); prints their paths.
	hack/peer-schedulers.sh volcano coscheduling kueue training-operator

.PHONY: e2e
e2e: ## The operator against real Volcano, Coscheduling and kube-scheduler (Kubernetes' own gang scheduling) processes, and behind a real Kueue (test/e2e, build tag e2e).
	assets=$$(hack/controlplane.sh); volcano=$$(hack/peer-schedulers.sh volcano); coscheduling=$$(hack/peer-schedulers.sh coscheduling); \
	kueue=$$(hack/peer-schedulers.sh kueue); \
	KUBEBUILDER_ASSETS="$$assets" TROUPE_VOLCANO_SCHEDULER="$$volcano" TROUPE_COSCHEDULING_SCHEDULER="$$coscheduling" TROUPE_KUEUE="$$kueue" \
		go test -tags e2e -count=1 $(GO_TEST_FLAGS) ./test/e2e/...

##@ Benchmarks

BENCH_FLAGS ?=
# Every placer on fresh API servers, from the binaries the project builds.
BENCH = go build -o bin/ ./cmd/bench ./cmd/scheduler && \
	cp="$$(hack/controlplane.sh)" && peers=($$(hack/peer-schedulers.sh volcano coscheduling)) && \
	bin/bench --control-plane-dir="$$cp" --troupe-scheduler=bin/scheduler \
		--volcano-scheduler="$${peers[0]}" --coscheduling-scheduler="$${peers[1]}"

# Troupe's operator against Kubeflow's training-operator (test/bench/operatorbench):
# every combination on fresh API servers with kwok nodes, from the binaries the
# project builds.
BENCH_OPERATOR_FLAGS ?=
BENCH_OPERATOR = go build -o bin/ ./cmd/bench ./cmd/operator ./cmd/scheduler && \
	cp="$$(hack/controlplane.sh)" && kwok="$$(hack/kwok.sh)" && \
	peers=($$(hack/peer-schedulers.sh volcano coscheduling training-operator)) && \
	bin/bench operator --control-plane-dir="$$cp" --kwok-dir="$$kwok" --troupe-operator=bin/operator --troupe-scheduler=bin/scheduler \
		--volcano-scheduler="$${peers[0]}" --coscheduling-scheduler="$${peers[1]}" --training-operator="$${peers[2]}"

.PHONY: bench
bench: ## Every benchmark: the harness (test/bench: the null binder's ceiling sweep, troupe-scheduler, Volcano, Coscheduling and kube-scheduler's own gang scheduling, scenario by scenario, up to 5000 nodes), then bench-operator; both write docs/benchmarks.md with the goals' verdicts.
	$(BENCH) --out=docs/benchmarks.md --command="make bench$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" $(BENCH_FLAGS)
	$(MAKE) --no-print-directory bench-operator

# The smoke leaves out volcano-200ms (Volcano at another period), S4x4 (S4
# with more nodes), S6 and S7x5 (S6x5's smaller and backlogged kin) to stay
# under five minutes: every scenario with the null binder at one width,
# then the ceiling's sweep and troupe-scheduler on S6x5.
SMOKE = $(BENCH) --scale=0.02 --hold=1s --settle=6s --trailing=0s --run-timeout=2m --check --command="make bench-smoke"
.PHONY: bench-smoke
bench-smoke: ## The harness at a tiny scale, each kind of placer, and the operator benchmark at 5 jobs: fails on a gang bound partially (at the end, or for longer than 2s during a run) or not at all; checks correctness and the ceiling sweep, not speed.
	$(SMOKE) --null-bind-workers=16 --placers=null,troupe,volcano,coscheduling,kube-native --scenarios=S1,S2,S3,S4,Q,S5,T0,T,TM,TS $(BENCH_FLAGS) >/dev/null
	$(SMOKE) --null-bind-workers=16,64,256 --placers=null,troupe --scenarios=S6x5 $(BENCH_FLAGS) >/dev/null
	$(BENCH_OPERATOR) --jobs=5 --settle=1s --run-timeout=3m --check --command="make bench-smoke" >/dev/null

.PHONY: bench-operator
bench-operator: ## Troupe's operator against Kubeflow's training-operator v1.9.4 (test/bench/operatorbench): 500 PyTorchJobs applied at once, per operator and gang backend, 3 runs each; writes its section of docs/benchmarks.md.
	$(BENCH_OPERATOR) --jobs=500 --repeat=3 --out=docs/benchmarks.md --command="make bench-operator$(if $(BENCH_OPERATOR_FLAGS), BENCH_OPERATOR_FLAGS='$(BENCH_OPERATOR_FLAGS)')" $(BENCH_OPERATOR_FLAGS)

.PHONY: bench-operator-unlimited
bench-operator-unlimited: ## bench-operator with no client-side limit on any operator or scheduler (the API server on this machine is the bound), without the restart probe; writes its own section of docs/benchmarks.md.
	$(BENCH_OPERATOR) --qps=-1 --jobs=500 --repeat=3 --restart=false --out=docs/benchmarks.md --command="make bench-operator-unlimited$(if $(BENCH_OPERATOR_FLAGS), BENCH_OPERATOR_FLAGS='$(BENCH_OPERATOR_FLAGS)')" $(BENCH_OPERATOR_FLAGS)

##@ Soak

# SOAK_SEED empty draws a fresh seed, printed at the start and in the
# summary; a failing run's seed replays the same choices of the driver.
SOAK_DURATION ?= 10m
SOAK_SEED ?=
SOAK_FLAGS ?=

.PHONY: soak
soak: build ## The chaos soak (test/soak): two operators and two schedulers with leader election, their leaders SIGKILLed and SIGSTOPped under a seeded churn of jobs and faults, invariants checked throughout; fails on any violation, printing the seed.
	cp="$$(hack/controlplane.sh)" && kwok="$$(hack/kwok.sh)" && \
	bin/soak --control-plane-dir="$$cp" --kwok-dir="$$kwok" --operator=bin/operator --scheduler=bin/scheduler \
		--duration=$(SOAK_DURATION) $(if $(SOAK_SEED),--seed=$(SOAK_SEED)) \
		--command="make soak SOAK_DURATION=$(SOAK_DURATION)$(if $(SOAK_FLAGS), SOAK_FLAGS='$(SOAK_FLAGS)')" $(SOAK_FLAGS)

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: kwok
kwok: ## Build kwok and its stage configs from Go modules (cached).
	hack/kwok.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
