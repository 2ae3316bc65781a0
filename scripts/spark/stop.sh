#!/usr/bin/env bash
# Stop what start.sh started, by pid file only (never by name): connect, workers, master.
# SIGTERM, wait up to $GRACE seconds, then SIGKILL. Removes the pid files. Idempotent.
set -uo pipefail
LAB=${LAB:-${TMPDIR:-/tmp}/abeval-spark}
PIDS=$LAB/run/pids
GRACE=${GRACE:-20}
rc=0
stop_one() {
  local f=$PIDS/$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    # Our pid is the launcher (bash spark-class/spark-submit); it execs java, so it is the JVM.
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 $((GRACE * 5))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "stop.sh: $1 (pid $pid) ignored SIGTERM for ${GRACE}s, killing" >&2
      kill -KILL "$pid" 2>/dev/null; rc=1
    fi
    echo "stopped $1 (pid $pid)"
  fi
  rm -f "$f"
}
stop_one connect
for f in "$PIDS"/worker*.pid; do [[ -e $f ]] && stop_one "$(basename "$f" .pid)"; done
stop_one master
exit $rc
