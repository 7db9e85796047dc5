#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# list_formats.sh CLUSTER_DIR NAMESPACE [ROUNDS]: the API server's CPU and the
# bytes of a full LIST of NAMESPACE's ConfigMaps as JSON, CBOR and protobuf,
# ROUNDS lists each, twice alternating (issue 17's wire-format lever). The
# cluster must serve CBOR:
#   KCR_APISERVER_ARGS="--feature-gates=CBORServingAndStorage=true" scripts/cluster.sh up DIR
# CPU is read from /proc for the kube-apiserver listening on the kubeconfig's
# port (user + system ticks). Not part of the tests.
set -euo pipefail
dir=$1 ns=$2 rounds=${3:-10}
port=$(grep 'server:' "$dir/kubeconfig" | sed 's/.*:\([0-9]*\)$/\1/')
pid=$(pgrep -f "kube-apiserver.*--secure-port=$port" | head -1)
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
for fmt in application/json application/cbor application/vnd.kubernetes.protobuf \
  application/json application/cbor application/vnd.kubernetes.protobuf; do
  c0=$(cpu)
  t0=$(date +%s.%N)
  bytes=0
  for ((i = 0; i < rounds; i++)); do
    got=$(curl -s --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
      -H "Accept: $fmt" "https://127.0.0.1:$port/api/v1/namespaces/$ns/configmaps" \
      -o /dev/null -w '%{size_download} %{http_code}')
    if [ "${got#* }" != 200 ]; then
      echo "$fmt: HTTP ${got#* }" >&2
      exit 1
    fi
    bytes=${got% *}
  done
  c1=$(cpu)
  t1=$(date +%s.%N)
  echo "$fmt rounds=$rounds bytes=$bytes" \
    "apiserver_cpu_ms_per_list=$(echo "($c1 - $c0) * 1000 / $tck / $rounds" | bc -l | cut -c1-7)" \
    "wall_s_per_list=$(echo "($t1 - $t0) / $rounds" | bc -l | cut -c1-6)"
done
