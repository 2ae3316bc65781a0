"""Thousands of experiments (issue 25, item 5): listing the experiments runs the
same few queries whatever their number, and its Python work is one pass over the
rows (it sorted every arm row again for each experiment: quadratic). The timing
is in benchmarks/bench_experiments.py; here, what can be counted."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from abeval.store import open_store
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file


def store_with(tmp_path: Path, n: int) -> Path:
    csv = tmp_path / f"e{n}.csv"
    rows = ["experiment,arm,user_id,ts,event_type"]
    rows += [f"x{e:04d},{a},{a}{e},2024-05-01,exposure" for e in range(n) for a in ("b", "a")]
    csv.write_text("\n".join(rows) + "\n")
    db = tmp_path / f"s{n}.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, csv)
    return db


def listed(db: Path) -> tuple[int, list]:
    """The experiments listed, and the statements it took."""
    with open_store(str(db), read_only=True) as store:
        statements: list[str] = []
        event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        found = list_experiments(store)
    return len(statements), found


def test_listing_runs_the_same_queries_for_10_and_300_experiments(tmp_path: Path) -> None:
    few, small = listed(store_with(tmp_path, 10))
    many, large = listed(store_with(tmp_path, 300))
    assert few == many
    assert [e.experiment for e in large] == [f"x{e:04d}" for e in range(300)]
    # Each experiment gets its own arms, sorted, and nothing of the others.
    assert all([a.arm for a in e.arms] == ["a", "b"] for e in large)
    assert all(a.users == 1 and a.events == {"exposure": 1} for e in small for a in e.arms)


def test_listing_sorts_each_row_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import abeval.store.experiments as experiments

    sorted_items = 0

    def counting(items: Iterable, **kwargs: Any) -> list:
        nonlocal sorted_items
        out = builtins.sorted(items, **kwargs)
        sorted_items += len(out)
        return out

    monkeypatch.setattr(experiments, "sorted", counting, raising=False)
    _, found = listed(store_with(tmp_path, 300))
    assert len(found) == 300
    # 300 experiments of 2 arms: linear work sorts a few times 600 rows; the old
    # listing sorted all 600 arm rows again for each experiment (180,000).
    assert sorted_items <= 10 * 600, sorted_items
