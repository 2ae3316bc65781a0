#!/usr/bin/env bash
# Build the wheel, install it into a clean virtual environment without the test
# dependencies, and use it: packaging mistakes (a missing migrations/ or
# reports/ folder, an undeclared dependency) fail here.
set -euo pipefail
python="${1:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$here"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$work"/dist/abeval-*.whl
cd "$work"
"$work/venv/bin/abeval" --help > /dev/null
"$work/venv/bin/python" -m abeval --help > /dev/null
cat > events.csv <<'CSV'
experiment,arm,user_id,ts,event_type,request_id,item_id,position,value
pkg,control,u1,2024-01-01T00:00:00,exposure,,,,
pkg,control,u1,2024-01-01T00:00:01,impression,r1,i1,1,
pkg,treatment,u2,2024-01-01T00:00:00,exposure,,,,
pkg,treatment,u2,2024-01-01T00:00:02,impression,r2,i2,1,
pkg,treatment,u2,2024-01-01T00:00:03,click,r2,i2,,
CSV
"$work/venv/bin/abeval" ingest events.csv --db "$work/pkg.duckdb" --json > ingest.json
grep -q '"inserted": 5' ingest.json
# Into a file, not a pipe: `grep -q` closes the pipe at its first match, and under
# pipefail the writer's broken pipe would fail the check at random.
"$work/venv/bin/abeval" experiments --db "$work/pkg.duckdb" > experiments.txt
grep -q '^pkg' experiments.txt
echo "package check: wheel installs, abeval --help, ingest and experiments work"
