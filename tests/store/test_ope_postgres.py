"""DuckDB and PostgreSQL give the same off-policy estimates to 1e-9
(docs/metrics.md#off-policy-estimates), with empirical and file probabilities,
through the report as a whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ope_helpers import random_logs, write_impressions, write_target_file
from test_postgres_report import assert_same

from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.ope import OpeOptions
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.postgres


def test_duckdb_and_postgres_give_the_same_ope(tmp_path: Path, postgres_database: str) -> None:
    logs = random_logs(5)
    events = write_impressions(tmp_path / "e.csv", "ope", logs.itertuples(index=False, name=None))
    src = logs[logs.arm == "control"]
    probs = np.random.default_rng(3).uniform(0, 0.5, len(src))
    rows = [
        (r.request, r.item, int(r.position), float(q))
        for r, q in zip(src.itertuples(), probs, strict=True)
    ]
    target = write_target_file(tmp_path / "t.csv", rows)
    docs = []
    for db in (str(tmp_path / "s.duckdb"), postgres_database):
        with open_store(db) as store:
            ingest_file(store, events)
        with open_store(db, read_only=True) as store:
            for file in (None, str(target)):
                options = ReportOptions(
                    offline=False, daily=False, ope=OpeOptions(cap=2.0, target_propensities=file)
                )
                ope = build_report(store, "ope", options).ope
                assert ope is not None and ope.status == "ok"
                docs.append(ope.to_dict())
    duck_empirical, duck_file, pg_empirical, pg_file = docs
    assert duck_file["directions"][0]["target_probabilities"] == "file"  # type: ignore[index, call-overload]
    assert_same(duck_empirical, pg_empirical)
    assert_same(duck_file, pg_file)


def test_recorded_target_probabilities_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    """``experiment set --target-propensities`` records on PostgreSQL as on DuckDB
    (same line, same rows), a refused file stores nothing there either, and the
    report reads the record with no flag and equals DuckDB's."""
    from sqlalchemy import text
    from typer.testing import CliRunner

    from abeval.cli import app

    runner = CliRunner()
    logs = random_logs(8)
    events = write_impressions(tmp_path / "e.csv", "ope", logs.itertuples(index=False, name=None))
    probs = np.random.default_rng(4).uniform(0, 0.5, len(logs))
    rows = [
        (r.request, r.item, int(r.position), float(q))
        for r, q in zip(logs.itertuples(), probs, strict=True)
    ]
    target = write_target_file(tmp_path / "t.csv", rows)
    half = write_target_file(tmp_path / "h.csv", [r for r in rows if r[0].endswith("-0")])
    docs, lines = [], []
    for db in (str(tmp_path / "s.duckdb"), postgres_database):
        with open_store(db) as store:
            ingest_file(store, events)
        refused = runner.invoke(app, ["experiment", "set", "ope", "--db", db,
                                      "--target-propensities", str(half)])  # fmt: skip
        assert refused.exit_code == 1 and refused.stderr.startswith(f"Error: {half}: covers ")
        lines.append(refused.stderr)
        with open_store(db, read_only=True) as store, store.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM target_propensities")).scalar() == 0
        done = runner.invoke(app, ["experiment", "set", "ope", "--db", db,
                                   "--target-propensities", str(target)])  # fmt: skip
        assert done.exit_code == 0, done.output
        lines.append(done.stderr)
        with open_store(db, read_only=True) as store:
            options = ReportOptions(offline=False, daily=False, ope=OpeOptions(cap=2.0))
            ope = build_report(store, "ope", options).ope
        assert ope is not None and ope.target_origin == "recorded"
        docs.append({k: v for k, v in ope.to_dict().items() if k != "recorded_at"})
    assert lines[0] == lines[2] and lines[1] == lines[3]
    assert f"ope: target probabilities recorded from {target}: {len(rows):,} rows" in lines[1]
    assert_same(docs[0], docs[1])
