"""Where the seconds of one ``abeval evaluate`` go, phase by phase (run by bench_evaluate.py).

    python benchmarks/evaluate_phases.py TRUTH RECS METRICS

Does what ``python -m abeval evaluate -t TRUTH -r RECS -m METRICS --format json``
does, in one process, and prints a JSON object of phase → [wall s, CPU s] (CPU of
every thread of the process):

- ``imports``: the CLI (as ``python -m abeval`` loads it), DuckDB and
  ``abeval.analysis.evaluate``;
- one phase per step of the run, from the function of
  ``abeval.analysis.evaluate`` that sent each SQL statement: reading and checking
  the truth file, reading and checking the run, the top K of each list, coverage,
  the metric SQL (the kernel and the per-model sums);
- ``python in evaluate``: the rest of ``evaluate()`` (choosing the metrics,
  building results);
- ``output``: the JSON document, as the command writes it.

The interpreter's own start is not in it (bench_evaluate.py times ``python -c pass``).
Statements are timed through a thin wrapper of the DuckDB connection, so the
numbers are the statements' own, fetches included.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

PHASES = {  # function of abeval.analysis.evaluate that sent the statement -> phase
    "load_truth": "truth: read and check",
    "load_model": "run: read and check",
    "build_ranked": "top K of each list",
    "coverage": "coverage",
    "build_per_user": "metric SQL",
    "ranking_results": "metric SQL",
    "compare_models": "paired comparison",
}
totals: dict[str, list[float]] = {}


def add(phase: str, wall: float, cpu: float) -> None:
    entry = totals.setdefault(phase, [0.0, 0.0])
    entry[0] += wall
    entry[1] += cpu


def phase_of_caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("abeval.analysis.evaluate"):
            name = PHASES.get(frame.f_code.co_name)
            if name is not None:
                return name
        frame = frame.f_back  # type: ignore[assignment]
    return "other SQL"


class Timed:
    """A DuckDB connection whose statements and fetches are timed by phase."""

    def __init__(self, con: Any) -> None:
        self._con = con
        self._phase = "other SQL"

    def execute(self, sql: str, params: Any = None) -> Timed:
        self._phase = phase_of_caller()
        w, c = time.perf_counter(), time.process_time()
        if params is None:
            self._con.execute(sql)
        else:
            self._con.execute(sql, params)
        add(self._phase, time.perf_counter() - w, time.process_time() - c)
        return self

    def _fetch(self, name: str) -> Any:
        w, c = time.perf_counter(), time.process_time()
        out = getattr(self._con, name)()
        add(self._phase, time.perf_counter() - w, time.process_time() - c)
        return out

    def fetchone(self) -> Any:
        return self._fetch("fetchone")

    def fetchall(self) -> Any:
        return self._fetch("fetchall")

    def fetchnumpy(self) -> Any:
        return self._fetch("fetchnumpy")

    @property
    def description(self) -> Any:
        return self._con.description

    def close(self) -> None:
        self._con.close()


def main() -> None:
    truth, recs, metrics = sys.argv[1:4]
    w, c = time.perf_counter(), time.process_time()
    import duckdb

    import abeval.cli.commands  # noqa: F401  (what `python -m abeval` loads first)
    from abeval.analysis.evaluate import evaluate

    add("imports", time.perf_counter() - w, time.process_time() - c)
    connect = duckdb.connect
    duckdb.connect = lambda *a, **k: Timed(connect(*a, **k))  # type: ignore[assignment]
    w, c = time.perf_counter(), time.process_time()
    result = evaluate(truth, [recs], metrics=metrics)
    sql_wall = sum(v[0] for k, v in totals.items() if k != "imports")
    sql_cpu = sum(v[1] for k, v in totals.items() if k != "imports")
    add("python in evaluate", time.perf_counter() - w - sql_wall, time.process_time() - c - sql_cpu)
    w, c = time.perf_counter(), time.process_time()
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False)
    sys.stderr.write(f"{len(text)} characters of JSON\n")
    add("output", time.perf_counter() - w, time.process_time() - c)
    print(json.dumps(totals))


if __name__ == "__main__":
    main()
