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
demo-smoke: ## The demo without a terminal: exits 0 once every example gang runs on the right nodes, 1 otherwise.
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

.PHONY: manifests
manifests: generate ## Alias of generate.

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet and golangci-lint.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate lint ## Regenerate everything and fail if the tree changed.
	go mod tidy
	git diff --exit-code
	@untracked=$$(git ls-files --others --exclude-standard); if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

##@ Build

.PHONY: build
build: ## Build the operator into bin/.
	go build -o bin/ ./cmd/...

##@ Test

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver and kube-controller-manager from Go modules (cached).
	hack/controlplane.sh

.PHONY: test
test: ## Unit and envtest suites against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh)" go test $(GO_TEST_FLAGS) ./...

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
