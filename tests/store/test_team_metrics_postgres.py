"""Team-defined metrics on PostgreSQL: migration 0009 keeps the definitions, and a
report that uses recorded metrics (primary, guardrail, capped, segments, CUPED) has
the same numbers as on DuckDB."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_files import _write
from team_log import EXP, METRICS_TOML, team_log
from test_postgres_report import assert_same

from abeval.analysis.metric_records import add_metrics, list_metrics
from abeval.analysis.online import ReportOptions, build_report
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.postgres


def test_a_recorded_metric_gives_the_same_report(tmp_path: Path, postgres_database: str) -> None:
    events = _write(tmp_path / "events.csv", team_log())
    (tmp_path / "metrics.toml").write_text(METRICS_TOML)
    options = ReportOptions(
        primary=("cart_rate", "value_per_cart"),
        guardrails=("mobile_plays",),
        segment="device",
        offline=False,
    )
    docs = []
    for url in (str(tmp_path / "s.duckdb"), postgres_database):
        with open_store(url) as store:
            ingest_file(store, events)
            added = add_metrics(store, tmp_path / "metrics.toml")
            assert [m.name for m in added.metrics] == [
                *("cart_rate", "carts", "cart_value", "value_per_cart"),
                *("mobile_plays", "capped_value"),
            ]
            listed = [(r.name, r.kind, r.definition) for r in list_metrics(store)]
            docs.append((listed, build_report(store, EXP, options).to_dict()))
    (duck_listed, duck), (pg_listed, pg) = docs
    assert pg_listed == duck_listed
    names = {(m["metric"], m["role"]) for m in pg["metrics"]}
    assert {("cart_rate", "primary"), ("mobile_plays", "guardrail")} <= names
    assert [c["metrics"] for c in pg["caps"]] == [["capped_value"]]
    assert_same(duck, pg)
