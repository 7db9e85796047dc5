#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcached.sh BUILD_DIR: install the kcr build in BUILD_DIR into a fresh prefix
# with `make install-lib`, then build examples/memcached-operator standalone
# against it (its own CMakeLists.txt on find_package(kcr), the types made by the
# installed kcr-gen) and run what needs no cluster: its unit tests (CTest label
# unit), the manager's --help and its error without a cluster, and the RBAC of
# config/rbac/role.yaml against the markers (kcr-gen rbac). Then the tutorial's
# way (docs/tutorial.md): kcr-gen init and create api, the example's CRD,
# controller and test copied over the scaffold, and `make test` (the
# Deployment's types come with libkcr: nothing to add).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
example=$src/examples/memcached-operator
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
make -C "$src" --no-print-directory install-lib BUILD_DIR="$(cd "$1" && pwd)" \
  PREFIX="$prefix" JOBS=2 >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

cmake -S "$example" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
ctest --test-dir "$work/build" -L '^unit$' --output-on-failure -j 2

"$work/build/manager" --help | grep -q '^usage: manager'
rc=0
out=$("$work/build/manager" --kubeconfig "$work/no-such-kubeconfig" 2>&1) || rc=$?
[ "$rc" -eq 1 ] || { echo "manager exited $rc: $out"; exit 1; }
case $out in
  manager:*no-such-kubeconfig*) ;;
  *) echo "manager said: $out"; exit 1 ;;
esac

(cd "$example" && "$prefix/bin/kcr-gen" rbac --role-name manager-role -o "$work/role.yaml" \
  internal/controller/memcached_controller.c)
diff -u "$example/config/rbac/role.yaml" "$work/role.yaml" ||
  { echo "config/rbac/role.yaml is stale: run make manifests in $example"; exit 1; }
(cd "$example" && "$prefix/bin/kcr-gen" crd -o "$work/crd" api/v1alpha1/memcached_types.h >/dev/null)
diff -u "$example/config/crd/bases/cache.example.com_memcacheds.yaml" \
  "$work/crd/cache.example.com_memcacheds.yaml" ||
  { echo "the CRD is stale: run make manifests in $example"; exit 1; }

# The tutorial: the scaffold, filled in. Only the files the tutorial edits are
# copied; main.c and the controllers list stay as kcr-gen wrote them.
(
  cd "$work" && "$prefix/bin/kcr-gen" init --domain example.com memcached-operator >/dev/null
  cd memcached-operator
  "$prefix/bin/kcr-gen" create api --group cache --version v1alpha1 --kind Memcached >/dev/null
  cp "$example"/api/v1alpha1/memcached_types.h api/v1alpha1/
  cp "$example"/internal/controller/memcached_controller.[ch] internal/controller/
  cp "$example"/test/memcached_controller_test.c test/
  CMAKE_PREFIX_PATH=$prefix make test JOBS=2 >"$work/tutorial.log" 2>&1 ||
    { cat "$work/tutorial.log"; exit 1; }
  grep -q '100% tests passed' "$work/tutorial.log" || { cat "$work/tutorial.log"; exit 1; }
  # make test ran make manifests: the CRD made of the header is the example's
  cmp config/crd/bases/cache.example.com_memcacheds.yaml \
    "$example"/config/crd/bases/cache.example.com_memcacheds.yaml
)
echo "memcached-operator against the installed kcr, and the tutorial's way: ok"
