"""``abeval.evaluate`` on tables in memory (pandas DataFrames, pyarrow Tables): the
same reader as the files, so the same numbers and the same messages, with the
argument (``truth``, ``runs['control']``) where a file's message names the file."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import abeval
from abeval.errors import AbevalError


def _data(seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = random.Random(seed)
    items = [f"i{j}" for j in range(12)]
    truth, control, candidate = [], [], []
    for u in range(40):
        user = f"u{u}"
        for item in rng.sample(items, 3):
            truth.append((user, item, rng.choice([1, 2, 3])))
        for rows in (control, candidate):
            for rank, item in enumerate(rng.sample(items, 5), 1):
                rows.append((user, item, rank))
    return (
        pd.DataFrame(truth, columns=["user_id", "item_id", "relevance"]),
        pd.DataFrame(control, columns=["user_id", "item_id", "rank"]),
        pd.DataFrame(candidate, columns=["user_id", "item_id", "rank"]),
    )


def _numbers(result: Any) -> dict[str, Any]:
    """Everything the result says but where its inputs came from."""
    doc = result.to_dict()
    for f in doc["files"]:
        f.pop("path")
    return doc


def _same(a: Any, b: Any, rel: float = 1e-12) -> bool:
    """``a`` and ``b`` alike, floats to ``rel`` (DuckDB's parallel sums may differ
    in their last bits between two reads of the same data)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15) or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rel) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y, rel) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_frames_give_the_numbers_of_the_same_data_in_csv(tmp_path: Path) -> None:
    truth, control, candidate = _data()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    control.to_csv(tmp_path / "control.csv", index=False)
    candidate.to_csv(tmp_path / "candidate.csv", index=False)
    from_files = abeval.evaluate(
        tmp_path / "truth.csv",
        {"control": tmp_path / "control.csv", "candidate": tmp_path / "candidate.csv"},
    )
    from_frames = abeval.evaluate(truth=truth, runs={"control": control, "candidate": candidate})
    from_arrow = abeval.evaluate(
        truth=pa.Table.from_pandas(truth),
        runs={"control": pa.Table.from_pandas(control), "candidate": candidate},
    )
    assert from_files.models == from_frames.models == ("control", "candidate")
    assert _same(_numbers(from_frames), _numbers(from_files))
    assert _same(_numbers(from_arrow), _numbers(from_files))
    assert [f.path for f in from_frames.files] == ["truth", "runs['control']", "runs['candidate']"]
    assert [(f.rows, f.users) for f in from_frames.files] == [
        (len(truth), truth.user_id.nunique()),
        (len(control), control.user_id.nunique()),
        (len(candidate), candidate.user_id.nunique()),
    ]
    # An independent count: hit rate at 5 is the share of users with a truth item in the top 5.
    relevant = set(zip(truth.user_id, truth.item_id, strict=True))
    hits = {u for u, i in zip(control.user_id, control.item_id, strict=True) if (u, i) in relevant}
    hit_rate = next(
        m.value for m in from_frames.metrics if m.group == "control" and m.metric == "hit_rate@5"
    )
    assert math.isclose(hit_rate, len(hits) / truth.user_id.nunique())


def _message(truth: Any, runs: dict[str, Any]) -> str:
    with pytest.raises(AbevalError) as caught:
        abeval.evaluate(truth=truth, runs=runs)
    return str(caught.value)


@pytest.mark.parametrize(
    ("change", "file_words", "frame_words"),
    [
        (  # a missing column
            lambda df: df.rename(columns={"rank": "position"}),
            "{path}: missing column rank or score;",
            "runs['control']: missing column rank or score;",
        ),
        (  # a value that is not a number, in the 3rd row (the CSV's line 4)
            lambda df: df.assign(
                rank=[*df["rank"][:2].astype(str), "x", *df["rank"][3:].astype(str)]
            ),
            "{path}:4:rank: 'x' is not a number;",
            "runs['control']:row 3:rank: 'x' is not a number;",
        ),
        (  # a missing value, in the 2nd row
            lambda df: df.assign(user_id=[df.user_id[0], None, *df.user_id[2:]]),
            "{path}:3:user_id: the value is missing (1 rows without one);",
            "runs['control']:row 2:user_id: the value is missing (1 rows without one);",
        ),
    ],
)
def test_a_mistake_in_a_frame_reads_as_in_a_file(
    tmp_path: Path, change: Any, file_words: str, frame_words: str
) -> None:
    truth, control, candidate = _data()
    bad = change(control)
    path = tmp_path / "control.csv"
    bad.to_csv(path, index=False)
    from_file = _message(truth, {"control": path, "candidate": candidate})
    from_frame = _message(truth, {"control": bad, "candidate": candidate})
    assert from_file.startswith(file_words.format(path=path))
    assert from_frame.startswith(frame_words)
    # the same words after where it is
    assert from_frame.split(": ", 1)[1] == from_file.split(": ", 1)[1]


def test_not_a_table_is_one_line() -> None:
    truth, control, _ = _data()
    message = _message(truth, {"control": control, "candidate": [1, 2]})
    assert message == (
        "runs['candidate']: expected a file path, a pandas DataFrame or a pyarrow Table, got list"
    )


def test_the_forecasts_offline_evidence_from_frames(tmp_path: Path) -> None:
    from abeval.api import forecast_evidence

    truth, control, candidate = _data()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    control.to_csv(tmp_path / "control.csv", index=False)
    candidate.to_csv(tmp_path / "candidate.csv", index=False)
    files = forecast_evidence(
        truth=tmp_path / "truth.csv",
        recommendations={"control": tmp_path / "control.csv", "new": tmp_path / "candidate.csv"},
    )
    frames = forecast_evidence(truth=truth, recommendations={"control": control, "new": candidate})
    assert frames.lifts and _same(frames.lifts, files.lifts)
    assert frames.description == "held-out evaluation of new against control on truth"
