# SPDX-License-Identifier: MIT
# A thin wrapper over CMake with the targets a kubebuilder user expects.
# `make help` lists them. Targets whose pieces have not landed yet say so.

BUILD_DIR ?= build/dev
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: help all build test test-unit lint format install uninstall run demo bench bench-full \
	deploy undeploy build-installer cluster-up cluster-down clean deps install-lib install-operator operator \
	static docker-build image helm-chart helm-template chaos chaos-short soak generate manifests openapi

help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

all: build

deps: ## Install the Debian packages kcr needs (idempotent).
	bash scripts/install-deps.sh

build: ## Configure and build libkcr and the tests into $(BUILD_DIR).
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: ## The whole suite as CI runs it: deps, -Werror build, unit, integration, ASan+UBSan, TSan, valgrind.
	bash scripts/test.sh

test-unit: build ## Only the unit tests of the dev build (fast).
	ctest --test-dir $(BUILD_DIR) -L '^unit$$' --output-on-failure -j $(JOBS)

bench: ## Short benchmark: cache sync at 1k and 10k (3 A/B pairs), 200 Apps through kcr, the c-r twin and the null generator (docs/benchmarks.md; under 10 minutes).
	SHAPES=cm1k SIZES="1000 10000" PAIRS=3 APP_N=200 APP_PAIRS=1 SKIP="micro" PLOT_DIR=build/bench/plots bash bench/full.sh

bench-full: ## BENCH.md's figures M1-M6, U1-U3: sync at 1k-100k, 1000 Apps x3 rounds; bench/results/<date>.json, docs/img plots (about half an hour).
	bash bench/full.sh

lint: ## clang-format check and clang-tidy static analysis.
	bash scripts/lint.sh

format: ## Format every tracked .c/.h with the committed .clang-format.
	git ls-files '*.c' '*.h' | xargs clang-format -i

# What install-lib builds (no tests, no examples, no operator) and the install
# components it installs: runtime (libkcr.so) and dev (the rest).
LIB_TARGETS = kcr_shared kcr_static kcr_gen
LIB_COMPONENTS = runtime dev

install-lib: ## Install libkcr (headers, .a, .so, kcr.pc, CMake package, kcr-gen, kcr-envtest) into $(PREFIX), building only those.
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(LIB_TARGETS)
	for c in $(LIB_COMPONENTS); do cmake --install $(BUILD_DIR) --prefix $(PREFIX) --component $$c || exit 1; done

install-operator: operator ## Install the demo kcr-operator into $(PREFIX)/bin (install-lib leaves it out).
	cmake --install $(BUILD_DIR) --prefix $(PREFIX) --component operator

cluster-up: ## Start a local control plane (etcd, kube-apiserver, kube-controller-manager).
	bash scripts/build-control-plane.sh
	bash scripts/cluster.sh up $(DEMO_CLUSTER_DIR)

cluster-down: ## Stop the local control plane (and the demo's operator).
	-[ -f $(DEMO_CLUSTER_DIR)/operator.pid ] && kill $$(cat $(DEMO_CLUSTER_DIR)/operator.pid) 2>/dev/null; rm -f $(DEMO_CLUSTER_DIR)/operator.pid
	bash scripts/cluster.sh down $(DEMO_CLUSTER_DIR)

##@ Operator (issue 8)
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || ls $(HOME)/.cache/kcr/k8s/*/bin/kubectl 2>/dev/null | tail -n 1)
IMG ?= kcr-operator:latest
KUSTOMIZE_DIR ?= config/default
# The kubectl whose kustomize renders config/ (the project's; empty: the scripts look).
KUSTOMIZE_KUBECTL ?= $(shell ls $(HOME)/.cache/kcr/k8s/*/bin/kubectl 2>/dev/null | tail -n 1)
CONTAINER_TOOL ?= docker
OPERATOR_BIN ?= $(BUILD_DIR)/cmd/kcr-operator/kcr-operator
DEMO_CLUSTER_DIR ?= $(CURDIR)/.kcr-cluster
DEMO_KUBECONFIG = $(DEMO_CLUSTER_DIR)/kubeconfig

install: ## Install the App CRD into the cluster of the current kubeconfig.
	$(KUBECTL) apply -f config/crd/bases/kcr.dev_apps.yaml
	$(KUBECTL) wait --for=condition=Established crd/apps.kcr.dev --timeout=60s

uninstall: ## Remove the App CRD (and with it every App) from the cluster.
	$(KUBECTL) delete --ignore-not-found -f config/crd/bases/kcr.dev_apps.yaml

deploy: ## Deploy config/default (KUSTOMIZE_DIR: another overlay) rendered by kubectl kustomize, image $(IMG).
	KUBECTL=$(KUSTOMIZE_KUBECTL) IMG=$(IMG) KUSTOMIZE_DIR=$(KUSTOMIZE_DIR) bash scripts/build-installer.sh - | \
		$(KUBECTL) apply -f -

undeploy: ## Remove everything deploy installed (the same rendering, deleted).
	KUBECTL=$(KUSTOMIZE_KUBECTL) IMG=$(IMG) KUSTOMIZE_DIR=$(KUSTOMIZE_DIR) bash scripts/build-installer.sh - | \
		$(KUBECTL) delete --ignore-not-found -f -

generate: ## Build kcr-gen and the C types it makes (App from the CRD, built-in kinds from cmd/kcr-gen/openapi).
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kcr_gen kcr_gen_app_types kcr_gen_k8s_types

manifests: ## Regenerate config/rbac/role.yaml from the +kcr:rbac markers, then deploy/install.yaml (commit both).
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kcr_gen
	KCR_GEN=$(BUILD_DIR)/cmd/kcr-gen/kcr-gen bash scripts/manifests.sh
	$(MAKE) build-installer

openapi: ## Refetch cmd/kcr-gen/openapi/k8s.json from the local control plane (make cluster-up first; commit it).
	python3 scripts/openapi-fetch.py --kubeconfig $${KCR_CLUSTER_DIR:-$$PWD/.kcr-cluster}/kubeconfig \
		--kubectl $${KCR_CLUSTER_DIR:-$$PWD/.kcr-cluster}/bin/kubectl

build-installer: ## Render config/default into deploy/install.yaml with image $(IMG) (commit it with the default IMG).
	KUBECTL=$(KUSTOMIZE_KUBECTL) IMG=$(IMG) KUSTOMIZE_DIR=$(KUSTOMIZE_DIR) bash scripts/build-installer.sh

helm-chart: ## Regenerate dist/chart's templates copied from config/ (crd/, rbac/).
	KUBECTL=$(KUSTOMIZE_KUBECTL) bash scripts/build-chart.sh

helm-template: ## Render dist/chart with helm (built from the Go module proxy into ~/.cache/kcr/helm).
	$$(bash scripts/build-go-tool.sh --quiet helm | sed -n 's/^helm=//p') template kcr dist/chart \
		--namespace kcr-system $(HELM_ARGS)

operator: ## Build kcr-operator (dynamic) into $(BUILD_DIR)/cmd/kcr-operator.
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kcr_operator

static: ## Build the fully static kcr-operator into build/static/bin.
	bash scripts/build-static.sh

run: operator ## Run the operator locally against the current kubeconfig (ARGS adds flags).
	$(OPERATOR_BIN) --log-format=console $(ARGS)

docker-build: ## Build the image $(IMG) (needs a container engine; same static build script).
	$(CONTAINER_TOOL) build -t $(IMG) .

image: ## Build the image $(IMG) without a container engine: an OCI layout in build/image/oci and build/image/kcr-operator.tar.
	IMG=$(IMG) bash scripts/build-image.sh build/image

demo: deps operator ## Local control plane with kwok fake nodes, CRD, operator, sample App until Available.
	bash scripts/build-control-plane.sh
	bash scripts/cluster.sh up --kwok $(DEMO_CLUSTER_DIR)
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) apply -f config/crd/bases/kcr.dev_apps.yaml
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) wait --for=condition=Established crd/apps.kcr.dev --timeout=60s
	$(OPERATOR_BIN) --kubeconfig $(DEMO_KUBECONFIG) --log-format=console \
		>$(DEMO_CLUSTER_DIR)/operator.log 2>&1 & echo $$! >$(DEMO_CLUSTER_DIR)/operator.pid
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) apply -f config/samples/kcr_v1alpha1_app.yaml
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) wait --for=jsonpath='{.status.observedGeneration}'=1 \
		app/app-sample --timeout=60s
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) wait --for=condition=Available app/app-sample --timeout=120s
	$(KUBECTL) --kubeconfig $(DEMO_KUBECONFIG) get apps,deployments,services,configmaps
	@echo "operator log: $(DEMO_CLUSTER_DIR)/operator.log; stop: kill \$$(cat $(DEMO_CLUSTER_DIR)/operator.pid); make cluster-down"

clean: ## Remove build trees.
	rm -rf build

##@ Reliability (issue 16; docs/reliability.md)
CHAOS_APPS ?= 500
CHAOS_ARGS ?=
SOAK_SECONDS ?= 1800

chaos: operator ## The chaos suite: 2 replicas, 500 Apps (CHAOS_APPS), every fault.
	python3 test/chaos/chaos.py --operator $(OPERATOR_BIN) --apps $(CHAOS_APPS) \
		--report $(BUILD_DIR)/chaos-report.json $(CHAOS_ARGS)

chaos-short: operator ## The CI subset of the chaos suite (50 Apps, < 3 min).
	bash test/chaos/chaos-short.sh $(OPERATOR_BIN)

soak: operator ## 30 minutes of App churn, RSS sampled every 10 s, must stay flat.
	python3 test/chaos/chaos.py --operator $(OPERATOR_BIN) --apps 200 --soak $(SOAK_SECONDS) \
		--report $(BUILD_DIR)/soak-report.json $(CHAOS_ARGS)
