#!/usr/bin/env bash
# `make spark-demo`: start a local standalone Spark cluster (master, two workers, Spark
# Connect server) on free loopback ports under a temporary LAB, load the demo experiment
# with `abeval ingest --db sc://...`, write its report from Spark into $OUT and check that
# its numbers equal the DuckDB report's (scripts/spark/demo.py), then stop the cluster,
# also when a step fails or the demo is interrupted.
# Usage: scripts/spark/demo.sh [PYTHON]   (a Python with abeval[spark]; OUT=demo/spark)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PY=${1:-python3}
OUT=${OUT:-demo/spark}
command -v java >/dev/null || { echo "spark-demo needs Java 17 (java on the PATH)" >&2; exit 1; }
LAB=$(mktemp -d "${TMPDIR:-/tmp}/abeval-spark-demo.XXXXXX")
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export LAB PYTHON=$PY MASTER_UI=0 WORKER_UI_BASE=0 TIMEOUT=${TIMEOUT:-300}
MASTER_PORT=$(free_port); CONNECT_PORT=$(free_port)
export MASTER_PORT CONNECT_PORT

cleanup() {
  bash "$HERE/stop.sh" >/dev/null || echo "spark-demo: stop.sh reported a problem; see $LAB" >&2
  rm -rf "$LAB"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

T0=$SECONDS
bash "$HERE/start.sh"
STARTED=$((SECONDS - T0))
ABEVAL_SPARK_WAREHOUSE="$LAB/warehouse/abeval" "$PY" "$HERE/demo.py" "sc://127.0.0.1:$CONNECT_PORT" "$OUT"
echo "spark-demo: done in $((SECONDS - T0)) s (cluster start ${STARTED} s); stopping the cluster"
