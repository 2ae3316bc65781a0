#!/usr/bin/env bash
# Start a loopback-only Spark standalone cluster from the pip pyspark package:
# one master, two workers (separate JVMs), one Spark Connect server attached to the master.
# Everything (logs, pids, work dirs, warehouse, event logs) lives under $LAB.
# Usage: ./start.sh            (env overrides: see the variables below)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
LAB=${LAB:-${TMPDIR:-/tmp}/abeval-spark}
PY=${PYTHON:-${VENV:-$LAB/venv}/bin/python}   # a Python with pyspark installed
export SPARK_HOME=${SPARK_HOME:-$("$PY" -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')}
export JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}
export SPARK_LOCAL_IP=127.0.0.1           # bind every JVM to loopback
export SPARK_LOCAL_HOSTNAME=localhost
export SPARK_LOG_DIR=$LAB/run/logs
export SPARK_PID_DIR=$LAB/run/pids
export SPARK_WORKER_DIR=$LAB/run/work
export SPARK_LOCAL_DIRS=$LAB/run/tmp       # shuffle / spill
export SPARK_CONF_DIR=$LAB/run/conf
export SPARK_DAEMON_MEMORY=${SPARK_DAEMON_MEMORY:-256m}   # heap of master and worker daemons
export SPARK_NO_DAEMONIZE=1

MASTER_PORT=${MASTER_PORT:-7077}
MASTER_UI=${MASTER_UI:-18080}
WORKER_UI_BASE=${WORKER_UI_BASE:-18081}   # worker i gets base+i-1 (0: any free port)
WORKERS=${WORKERS:-2}
WORKER_CORES=${WORKER_CORES:-1}
WORKER_MEM=${WORKER_MEM:-1g}              # memory a worker may give to executors
EXECUTOR_MEM=${EXECUTOR_MEM:-1g}
DRIVER_MEM=${DRIVER_MEM:-3g}              # Spark Connect server = the driver (the Connect upload sends 4 MiB chunks with the plan cache off: 512m loads 13M rows)
CONNECT_PORT=${CONNECT_PORT:-15002}
WAREHOUSE=${WAREHOUSE:-$LAB/warehouse}
TIMEOUT=${TIMEOUT:-120}
SHUFFLE_PARTITIONS=${SHUFFLE_PARTITIONS:-4}   # Spark's default 200 is all overhead at this size
# The catalog: hive = a Derby metastore under $LAB/run/derby, so abeval's tables and their
# partitions outlive a restart of the Connect server (in-memory: they vanish with it).
CATALOG=${CATALOG:-hive}
MASTER_URL=spark://127.0.0.1:$MASTER_PORT

mkdir -p "$SPARK_LOG_DIR" "$SPARK_PID_DIR" "$SPARK_WORKER_DIR" "$SPARK_LOCAL_DIRS" "$SPARK_CONF_DIR" "$WAREHOUSE"
# Quiet log4j2 config (console to the per-daemon log file).
cat > "$SPARK_CONF_DIR/log4j2.properties" <<'EOF'
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.master.name = org.apache.spark.deploy
logger.master.level = info
logger.connect.name = org.apache.spark.sql.connect.service
logger.connect.level = info
EOF

now() { date +%s.%N; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [[ -f "$SPARK_PID_DIR/$1.pid" ]] && kill -0 "$(cat "$SPARK_PID_DIR/$1.pid")" 2>/dev/null; }
fail() { echo "start.sh: $*" >&2; LAB=$LAB "$HERE/stop.sh" >&2 || true; exit 1; }

# wait_for NAME "test command" : poll until the test succeeds, the process dies, or TIMEOUT.
wait_for() {
  local name=$1 test=$2 t0 deadline
  t0=$(now); deadline=$(( $(date +%s) + TIMEOUT ))
  until eval "$test"; do
    alive "$name" || fail "$name exited; see $SPARK_LOG_DIR/$name.log"
    (( $(date +%s) < deadline )) || fail "$name not ready after ${TIMEOUT}s; see $SPARK_LOG_DIR/$name.log"
    sleep 0.2
  done
  printf '%-10s ready in %5.1fs (pid %s)\n' "$name" "$(echo "$(now) - $t0" | bc)" "$(cat "$SPARK_PID_DIR/$name.pid")"
}

launch() { # launch NAME cmd... : background JVM, pid file, log file
  local name=$1; shift
  if alive "$name"; then fail "$name already running (pid $(cat "$SPARK_PID_DIR/$name.pid")); run stop.sh"; fi
  nohup "$@" >"$SPARK_LOG_DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$SPARK_PID_DIR/$name.pid"
}

port_open "$MASTER_PORT" && fail "port $MASTER_PORT already in use"
port_open "$CONNECT_PORT" && fail "port $CONNECT_PORT already in use"

T0=$(now)
launch master "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$MASTER_PORT" --webui-port "$MASTER_UI"

for i in $(seq 1 "$WORKERS"); do
  SPARK_WORKER_DIR=$SPARK_WORKER_DIR/w$i launch "worker$i" "$SPARK_HOME/bin/spark-class" \
    org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --webui-port $((WORKER_UI_BASE > 0 ? WORKER_UI_BASE + i - 1 : 0)) \
    --cores "$WORKER_CORES" --memory "$WORKER_MEM" --work-dir "$SPARK_WORKER_DIR/w$i" "$MASTER_URL"
done
# Workers retry registering until the master is up, so they start in parallel with it.
wait_for master "port_open $MASTER_PORT && grep -q 'I have been elected leader' '$SPARK_LOG_DIR/master.log'"

# Spark Connect server: the driver of one long-running application on the cluster.
# -XX:+ExitOnOutOfMemoryError: a driver out of heap exits (its clients then get one line)
# rather than living on with a dead scheduler thread, which no client can tell from a long job.
# The launcher sizes the Connect/Thrift server heap from SPARK_DAEMON_MEMORY before --driver-memory.
SPARK_DAEMON_MEMORY=$DRIVER_MEM launch connect "$SPARK_HOME/bin/spark-submit" \
  --class org.apache.spark.sql.connect.service.SparkConnectServer \
  --name abeval-connect --master "$MASTER_URL" \
  --driver-memory "$DRIVER_MEM" --executor-memory "$EXECUTOR_MEM" \
  --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
  --conf spark.connect.grpc.binding.address=127.0.0.1 \
  --conf spark.connect.grpc.binding.port="$CONNECT_PORT" \
  --conf spark.sql.warehouse.dir="$WAREHOUSE" \
  --conf spark.sql.session.timeZone=UTC \
  --conf spark.ui.enabled=false \
  --conf spark.sql.shuffle.partitions="$SHUFFLE_PARTITIONS" \
  --conf spark.sql.catalogImplementation="$CATALOG" \
  --conf spark.local.dir="$SPARK_LOCAL_DIRS" \
  --conf "spark.driver.extraJavaOptions=-Dderby.system.home=$LAB/run/derby -XX:+ExitOnOutOfMemoryError" \
  ${CONNECT_EXTRA_CONF:-}
for i in $(seq 1 "$WORKERS"); do
  wait_for "worker$i" "grep -q 'Successfully registered with master' '$SPARK_LOG_DIR/worker$i.log'"
done
# Ready = gRPC port listening AND executors registered (else the first query waits for them).
wait_for connect "port_open $CONNECT_PORT && grep -q 'Spark Connect server started' '$SPARK_LOG_DIR/connect.log' \
  && [[ \$(grep -c 'is now RUNNING' '$SPARK_LOG_DIR/connect.log') -ge $WORKERS ]]"
printf 'cluster ready in %.1fs: master %s, connect sc://127.0.0.1:%s, warehouse %s\n' \
  "$(echo "$(now) - $T0" | bc)" "$MASTER_URL" "$CONNECT_PORT" "$WAREHOUSE"
