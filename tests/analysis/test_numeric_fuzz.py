"""Every numeric column of every file abeval reads, given the values that broke
it before (issue 38 item 9, issue 37 item 6): 0, negative, NaN, ±inf, 1e308,
1e-308 and text in a history (``forecast``'s and ``agreement``'s, and
``program``'s, each as CSV and as Parquet), a target probability file, a
metrics file's cap and ``where`` values, and an evaluation's truth (relevance or
ratings), runs and predictions. Each gives a result or one line (exit 1 or 2),
never a traceback."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from ingest_store import run

from abeval.analysis.metric_file import read_metric_file
from abeval.analysis.ope_file import read_target_propensities
from abeval.errors import AbevalError

pytestmark = pytest.mark.slow  # about 55 s: 135 cases, most through the CLI

VALUES = ("0", "-1", "nan", "inf", "-inf", "1e308", "-1e308", "1e-308", "abc")


def one_line_or_result(result: Any) -> None:
    """Exit 0, or one line on stderr with exit 1 or 2; no exception escaped."""
    shown = result.output + result.stderr
    assert "Traceback" not in shown, shown
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 1, 2), result.exit_code
    if result.exit_code != 0:
        assert result.stderr.startswith(("Error: ", "Usage: ")), result.stderr
        if result.stderr.startswith("Error: "):
            assert result.stderr.count("\n") == 1, result.stderr


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        out.writerows(rows)
    return path


def write_table(
    path: Path, header: Sequence[str], rows: Sequence[Sequence[object]], fmt: str
) -> Path:
    """The rows as CSV, or as Parquet with each column as numbers (float64: NaN and
    ±inf as themselves) when every value reads as one, else as text."""
    if fmt == "csv":
        return write_csv(path.with_suffix(".csv"), header, rows)
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for i, name in enumerate(header):
        values = [r[i] for r in rows]
        try:
            columns[name] = pa.array([float(v) for v in values], pa.float64())  # type: ignore[arg-type]
        except ValueError:
            columns[name] = pa.array([str(v) for v in values], pa.string())
    pq.write_table(pa.table(columns), path.with_suffix(".parquet"))
    return path.with_suffix(".parquet")


HISTORY = (
    "experiment",
    "signal",
    "offline_lift",
    "offline_se",
    "online_lift",
    "online_se",
    "users",
)
HISTORY_ROWS = [
    ("e0", "s", 0.01, 0.002, 0.012, 0.004, 20000),
    ("e1", "s", 0.02, 0.002, 0.018, 0.004, 20000),
    ("e2", "s", 0.03, 0.002, 0.035, 0.004, 20000),
    ("e3", "s", 0.00, 0.002, 0.001, 0.004, 20000),
]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("column", HISTORY[2:])
def test_history(tmp_path: Path, column: str, value: str, fmt: str) -> None:
    rows: list[list[object]] = [list(r) for r in HISTORY_ROWS]
    rows[1][HISTORY.index(column)] = value
    path = write_table(tmp_path / "h", HISTORY, rows, fmt)
    forecast = ("--offline-lift", "0.02", "--offline-se", "0.002", "-f", "json")
    one_line_or_result(run("forecast", "--history", str(path), *forecast))
    one_line_or_result(run("agreement", "--history", str(path), "-f", "json"))


PROGRAM = ("experiment", "metric", "lift", "se", "status")
PROGRAM_ROWS = [
    ("e0", "ctr", 0.010, 0.004, "shipped"),
    ("e1", "ctr", -0.004, 0.005, "abandoned"),
    ("e2", "ctr", 0.002, 0.004, "rolled_back"),
    ("e3", "ctr", 0.015, 0.006, "shipped"),
]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("column", ["lift", "se"])
def test_program_history(tmp_path: Path, column: str, value: str, fmt: str) -> None:
    rows: list[list[object]] = [list(r) for r in PROGRAM_ROWS]
    rows[1][PROGRAM.index(column)] = value
    path = write_table(tmp_path / "p", PROGRAM, rows, fmt)
    one_line_or_result(run("program", "--history", str(path), "-f", "json"))
    one_line_or_result(run("program", "--history", str(path)))


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("option", ["--offline-lift", "--offline-se"])
def test_candidate_options(tmp_path: Path, option: str, value: str) -> None:
    path = write_csv(tmp_path / "h.csv", HISTORY, HISTORY_ROWS)
    given = {"--offline-lift": "0.02", "--offline-se": "0.002", option: value}
    flat = [a for pair in given.items() for a in pair]
    one_line_or_result(run("forecast", "--history", str(path), *flat, "-f", "json"))


TARGET = ("request_id", "item_id", "position", "probability", "probability_given_above")


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("column", TARGET[2:])
def test_target_probabilities(tmp_path: Path, column: str, value: str) -> None:
    rows = [["r1", "a", 1, 0.5, 0.5], ["r1", "b", 2, 0.25, 0.5]]
    rows[1][TARGET.index(column)] = value
    path = write_csv(tmp_path / "t.csv", TARGET, rows)
    try:
        read_target_propensities(path)
    except AbevalError as exc:
        assert "\n" not in exc.message


METRIC_FILES = {
    "cap": '[capped]\nkind = "mean"\nevent = "add_to_cart"\nvalue = "sum"\ncap = {}\n',
    "where": '[filtered]\nkind = "proportion"\nevent = "click"\nwhere = {{ slot = {} }}\n',
}


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("key", list(METRIC_FILES))
def test_metric_file(tmp_path: Path, key: str, value: str) -> None:
    literal = {"abc": '"abc"', "nan": "nan", "inf": "inf", "-inf": "-inf"}.get(value, value)
    path = tmp_path / "m.toml"
    path.write_text(METRIC_FILES[key].format(literal))
    try:
        read_metric_file(path)
    except AbevalError as exc:
        assert "\n" not in exc.message


EVALUATED = {
    "truth": (("user_id", "item_id", "relevance"), [("u1", "a", 1), ("u2", "b", 2)], 2),
    "runs": (
        ("user_id", "item_id", "rank", "score"),
        [("u1", "a", 1, 0.9), ("u1", "x", 2, 0.5), ("u2", "b", 1, 0.8), ("u2", "y", 2, 0.1)],
        (2, 3),
    ),
    "predictions": (("user_id", "item_id", "prediction"), [("u1", "a", 4.0), ("u2", "b", 2.5)], 2),
}


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize(
    ("role", "column"),
    [("truth", 2), ("runs", 2), ("runs", 3), ("predictions", 2), ("ratings", 2)],
)
def test_evaluation_inputs(tmp_path: Path, role: str, column: int, value: str) -> None:
    paths = {}
    for name, (header, rows, _) in EVALUATED.items():
        table = [list(r) for r in rows]
        if name == role:
            table[1][column] = value
        paths[name] = write_csv(tmp_path / f"{name}.csv", header, table)
    if role in ("predictions", "ratings"):
        ratings: list[list[object]] = [["u1", "a", 4.5], ["u2", "b", 2.0]]
        if role == "ratings":
            ratings[1][column] = value
        truth = write_csv(tmp_path / "ratings.csv", ("user_id", "item_id", "rating"), ratings)
        args = ["-t", str(truth), "-p", f"m={paths['predictions']}"]
    else:
        args = ["-t", str(paths["truth"]), "-r", f"control={paths['runs']}"]
        args += ["-r", f"treatment={paths['runs']}"]
    one_line_or_result(run("evaluate", *args, "-f", "json", "-o", str(tmp_path / "out.json")))
