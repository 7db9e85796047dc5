# SPDX-License-Identifier: MIT
# A thin wrapper over CMake with the targets a kubebuilder user expects.
# `make help` lists them. Targets whose pieces have not landed yet say so.

BUILD_DIR ?= build/dev
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: help all build test test-unit lint format install uninstall-lib run demo \
	deploy undeploy build-installer cluster-up cluster-down clean deps

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

lint: ## clang-format check and clang-tidy static analysis.
	bash scripts/lint.sh

format: ## Format every tracked .c/.h with the committed .clang-format.
	git ls-files '*.c' '*.h' | xargs clang-format -i

install-lib: build ## Install libkcr (headers, .a, .so, kcr.pc, CMake package) into $(PREFIX).
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

cluster-up: ## Start a local control plane (etcd, kube-apiserver, kube-controller-manager).
	bash scripts/build-control-plane.sh
	bash scripts/cluster.sh up

cluster-down: ## Stop the local control plane.
	bash scripts/cluster.sh down

## install, uninstall, deploy, undeploy, run, demo, build-installer: the operator's
## targets (kubebuilder's meaning); they arrive with the App operator (issue 8).
install uninstall deploy undeploy run demo build-installer:
	@echo "make $@: the App operator has not landed yet (issue 8); nothing to do" >&2
	@exit 2

operator-targets: ## install/uninstall/deploy/undeploy/run/demo/build-installer: not built yet (issue 8).
	@echo "the App operator has not landed yet (issue 8)"

clean: ## Remove build trees.
	rm -rf build
