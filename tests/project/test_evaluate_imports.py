"""What one model's ``evaluate`` loads: neither numpy nor the store's engine.

Their imports are a fixed part of every ``abeval evaluate`` (benchmarks/RESULTS.md,
the evaluate section of issue 23): numpy is read only where per-user arrays are
(the paired comparison of two models), and ``abeval.store.engine`` (SQLAlchemy,
migrations, memory settings) only by commands that open a store. Run in a fresh
interpreter, since this test session has loaded both already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CODE = """
import json, sys
import abeval.api as api
result = api.evaluate(sys.argv[1], {sys.argv[3]: sys.argv[2]}, k=[2], seed=1)
loaded = [m for m in ("numpy", "abeval.store.engine", "sqlalchemy", "scipy") if m in sys.modules]
values = {m.metric: m.value for m in result.metrics}
print(json.dumps({"loaded": loaded, "values": values}))
"""


def _files(tmp_path: Path) -> tuple[Path, Path]:
    truth = tmp_path / "truth.csv"
    truth.write_text("user_id,item_id,relevance\nu1,a,1\nu1,c,2\nu2,b,1\n")
    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,item_id,score\nu1,a,0.9\nu1,b,0.8\nu1,c,0.1\nu2,a,0.5\nu2,b,0.4\n")
    return truth, recs


def _run(*args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CODE, *args], capture_output=True, text=True, check=True
    )
    parsed: dict[str, object] = json.loads(out.stdout)
    return parsed


def test_one_model_loads_neither_numpy_nor_the_store_engine(tmp_path: Path) -> None:
    truth, recs = _files(tmp_path)
    found = _run(str(truth), str(recs), "m")
    assert found["loaded"] == []
    values = found["values"]
    assert isinstance(values, dict)
    # u1: a (relevant) at 1, b at 2 → P@2 = 1/2; u2: a at 1, b (relevant) at 2 → 1/2.
    assert values["precision@2"] == pytest.approx(0.5)
    # MRR: u1 1/1, u2 1/2 → 0.75.
    assert values["mrr"] == pytest.approx(0.75)
