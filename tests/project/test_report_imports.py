"""What a report, and the commands that compute no statistic, do not load.

Imports are most of the fixed cost of every ``abeval report`` (the start-up
section of benchmarks/RESULTS.md): the JSON and text reports load neither the
HTML presenters (Jinja), nor pandas, pyarrow or statsmodels, nor scipy.optimize
(a fixed-horizon test's power needs no general root finder), nor the file readers
of ``abeval evaluate`` (only a ``--target-propensities`` file needs those);
commands that only read the store's records (``metrics``, ``experiment show``)
load no scipy or numpy either, nor does ``ingest`` (nor anything of
``abeval.analysis``); a report loads neither the agreement board nor the
forecast. Each command runs in a fresh interpreter, since this test session has
loaded all of them already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ingest_store import simulated_store

HEAVY = (
    "jinja2",
    "pandas",
    "pyarrow",
    "statsmodels",
    "scipy",
    "scipy.optimize",
    "numpy",
    "abeval.report.html",
    "abeval.analysis.evaluate",
    "abeval.analysis.agreement",
    "abeval.analysis.forecast",
)

CODE = """
import json, runpy, sys
heavy = json.loads(sys.argv[1])
sys.argv = ["abeval", *sys.argv[2:]]
out = sys.stdout
try:
    runpy.run_module("abeval", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
out.write("\\n" + json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}))
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return simulated_store(tmp_path_factory.mktemp("imports"), users=300, seed=5)


def _loaded(*args: str, heavy: tuple[str, ...] = HEAVY) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", CODE, json.dumps(heavy), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    printed, _, last = done.stdout.rpartition("\n")
    found = json.loads(last)
    assert found["code"] in (0, None), done.stderr
    return printed, found["loaded"]


def test_a_json_report_loads_no_presenter_or_data_frame_library(db: str) -> None:
    printed, loaded = _loaded("report", "-e", "home-reco-v2", "--db", db, "-f", "json")
    report = json.loads(printed)
    assert report["experiment"] == "home-reco-v2" and report["metrics"] and report["power"]
    # The statistics need scipy's special functions (and numpy under them), nothing
    # else: the power's noncentrality is found without scipy.optimize. Neither the
    # agreement board nor the forecast is loaded.
    assert sorted(loaded) == ["numpy", "scipy"]


def test_a_text_report_loads_no_html_presenter(db: str) -> None:
    printed, loaded = _loaded("report", "-e", "home-reco-v2", "--db", db, "-f", "text")
    assert "home-reco-v2" in printed
    assert sorted(loaded) == ["numpy", "scipy"]


@pytest.mark.parametrize(
    "command", [("metrics",), ("experiment", "show", "home-reco-v2"), ("experiments",)]
)
def test_commands_that_compute_no_statistic_load_no_scipy(
    db: str, command: tuple[str, ...]
) -> None:
    printed, loaded = _loaded(*command, "--db", db)
    assert printed.strip()
    assert loaded == []


def test_ingest_loads_no_statistic_and_no_analysis(tmp_path: Path) -> None:
    # A plain file (no line near the 2 MB limit, so no numpy for the long-line scan).
    events = tmp_path / "events.csv"
    events.write_text(
        "experiment,arm,user_id,ts,event_type,request_id,item_id,position\n"
        "x,control,u1,2025-01-01T00:00:00,impression,r1,i1,1\n"
        "x,treatment,u2,2025-01-01T00:00:01,impression,r2,i2,1\n"
        "x,treatment,u2,2025-01-01T00:00:02,click,r2,i2,1\n"
    )
    db = str(tmp_path / "store.duckdb")
    command = ("ingest", str(events), "--db", db, "--json", "--quiet")
    printed, loaded = _loaded(*command, heavy=(*HEAVY, "abeval.analysis"))
    assert [f["inserted"] for f in json.loads(printed)["files"]] == [3]
    assert loaded == []
