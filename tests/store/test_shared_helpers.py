"""The helpers every layer shares: data file names, SQL quoting, cutoffs, and
completing metric results per group."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abeval.files import format_of, is_data_file, model_names, split_name, write_atomic
from abeval.metrics.base import parse_cutoffs
from abeval.metrics.results import OfflineMetricResult, complete
from abeval.store.quoting import quote_ident, quote_literal


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("events.csv", ("events", "csv", None)),
        ("runs/Recs.CSV.gz", ("Recs", "csv", ".gz")),
        ("a.tsv", ("a", "csv", None)),
        ("a.txt.zst", ("a", "csv", ".zst")),
        ("bm25.parquet", ("bm25", "parquet", None)),
        ("bm25.pq", ("bm25", "parquet", None)),
        ("log.jsonl", ("log", "jsonl", None)),
        ("log.ndjson.gz", ("log", "jsonl", ".gz")),
        ("log.json", ("log", "jsonl", None)),
        ("events.xlsx", ("events.xlsx", None, None)),
        ("archive.gz", ("archive", None, ".gz")),
        ("store.duckdb", ("store.duckdb", None, None)),
    ],
)
def test_split_name(name: str, expected: tuple[str, str | None, str | None]) -> None:
    assert split_name(name) == expected
    assert format_of(Path(name)) == expected[1]
    assert is_data_file(name) == (expected[1] is not None or expected[2] is not None)


def test_model_names_are_stems_unless_two_collide() -> None:
    assert model_names(["runs/bm25.csv.gz", "two_tower.parquet"]) == ["bm25", "two_tower"]
    assert model_names(["a/bm25.csv", "b/bm25.csv"]) == ["a/bm25.csv", "b/bm25.csv"]
    assert model_names([".csv"]) == [".csv"]


def test_write_atomic_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("old", encoding="utf-8")
    write_atomic(out, "new ✓")
    assert out.read_text(encoding="utf-8") == "new ✓"
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


def test_write_atomic_keeps_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(out, "\udcff")  # a lone surrogate cannot be written as UTF-8
    assert out.read_text(encoding="utf-8") == "old"
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


@settings(deadline=None)  # a DuckDB connection per example: slow on a loaded machine
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
    )
)
def test_quoting_round_trips_through_duckdb(text: str) -> None:
    con = duckdb.connect()
    assert con.execute(f"SELECT {quote_literal(text)}").fetchone() == (text,)
    con.execute(f"CREATE TABLE t ({quote_ident(text)} INTEGER)")
    assert [d[0] for d in con.execute("SELECT * FROM t").description] == [text]
    con.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5,10", (5, 10)), ("10, 5, 10", (5, 10)), ("20", (20,)), (" 1 ,", (1,))],
)
def test_parse_cutoffs(text: str, expected: tuple[int, ...]) -> None:
    assert parse_cutoffs(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("five", "whole numbers"),
        ("5.5", "whole numbers"),
        ("0,5", "at least 1"),
        ("-3", "at least 1"),
        ("", "at least 1"),
        (",", "at least 1"),
    ],
)
def test_parse_cutoffs_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_cutoffs(text)


def test_complete_fills_missing_groups_in_metric_major_order() -> None:
    have = OfflineMetricResult(metric="ndcg@10", group="b", value=0.5, convention={"gain": "exp2"})
    out = complete(
        [have],
        [("ndcg@10", {"gain": "exp2"}), ("mrr", {})],
        ["a", "b"],
        {"relevance": "clicks"},
        "the arm has no impressions",
    )
    assert [(r.metric, r.group) for r in out] == [
        ("ndcg@10", "a"),
        ("ndcg@10", "b"),
        ("mrr", "a"),
        ("mrr", "b"),
    ]
    assert out[1] is have
    filled = out[0]
    assert filled.value is None
    assert filled.status == "undefined"
    assert filled.message == "the arm has no impressions"
    assert filled.convention == {"gain": "exp2", "relevance": "clicks"}
