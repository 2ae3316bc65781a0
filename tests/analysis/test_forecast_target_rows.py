"""Which rows of ``forecast --target-propensities FILE -e EXP`` give the
candidate's probabilities: those ``report --target-propensities`` reads for the
direction from the control to the one target arm the file names."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from ope_helpers import small_logs, write_impressions
from typer.testing import CliRunner

from abeval.analysis.ope_candidate import candidate_estimate
from abeval.analysis.ope_file import read_target_propensities
from abeval.cli import app
from abeval.errors import InputError
from abeval.store import open_store
from abeval.store.ingest import ingest_file

EXP = "small"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("targets")
    path = str(folder / "s.duckdb")
    with open_store(path) as store:
        ingest_file(store, write_impressions(folder / "e.csv", EXP, small_logs()))
    return path


def _prob(item: str) -> float:
    """The candidate's probability: item 0 of each position favoured."""
    return 0.6 if item.endswith("0") else 0.2


def _file(path: Path, arms: list[str | None], arm_column: bool = True) -> Path:
    """Rows for every control request, (request, item, position) of all six
    items, once per entry of ``arms``; each arm gets its own probabilities
    (the candidate's for the first, uniform for the others)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["request_id", "item_id", "position", "probability"]
                     + (["arm"] if arm_column else []))  # fmt: skip
        for n, arm in enumerate(arms):
            for u in range(30):
                for q in range(2):
                    for k, letter in ((1, "a"), (2, "b")):
                        for j in range(3):
                            item = f"{letter}{j}"
                            p = _prob(item) if n == 0 else 1 / 3
                            extra = [arm or ""] if arm_column else []
                            out.writerow([f"control{u}-{q}", item, k, p, *extra])
    return path


def _estimate(db: str, path: Path) -> tuple[float, float]:
    with open_store(db, read_only=True) as store, store.connect() as conn:
        est = candidate_estimate(conn, EXP, "control", read_target_propensities(path), str(path))
    lift = est.headline.predicted_lift
    assert lift.value is not None and lift.se is not None
    return lift.value, lift.se


def _by_hand() -> float:
    """SNIPS lift of the candidate over the control from the control's logs:
    w = π / (1/3) per impression, CTR = Σ w c / Σ w against Σ c / n."""
    w_sum = wc = c = n = 0.0
    for arm, _, _, item, _, clicked, logged in small_logs():
        if arm != "control":
            continue
        assert logged is not None
        w = _prob(item) / logged
        w_sum, wc, c, n = w_sum + w, wc + w * clicked, c + clicked, n + 1
    return (wc / w_sum) / (c / n) - 1


def test_the_rows_of_the_control_are_left_out_as_report_does(db: str, tmp_path: Path) -> None:
    """A file with the candidate's rows (arm treatment) and rows naming the
    control on the same requests (which report never reads for the direction
    from the control): the candidate's lift is the one from its rows alone, the
    report's control → treatment prediction, and the hand SNIPS value."""
    alone = _estimate(db, _file(tmp_path / "alone.csv", [None], arm_column=False))
    both = _file(tmp_path / "both.csv", ["treatment", "control"])
    assert _estimate(db, both) == pytest.approx(alone, rel=1e-12)
    assert alone[0] == pytest.approx(_by_hand(), rel=1e-9)
    args = ["report", "-e", EXP, "--db", db, "--no-offline", "--target-propensities", str(both)]
    report = CliRunner().invoke(app, [*args, "-f", "json"])
    assert report.exit_code == 0, report.output
    direction = next(
        d for d in json.loads(report.stdout)["ope"]["directions"]
        if (d["source"], d["target"]) == ("control", "treatment")
    )  # fmt: skip
    head = next(e for e in direction["estimates"] if e["estimator"] == direction["headline"])
    assert head["predicted_lift"]["value"] == pytest.approx(alone[0], rel=1e-12)


def test_rows_for_two_target_arms_are_refused(db: str, tmp_path: Path) -> None:
    """Before, both arms' rows were taken as the candidate's: every logged item
    had two probabilities and was counted twice."""
    path = _file(tmp_path / "two.csv", ["treatment", "third"])
    with pytest.raises(InputError) as err:
        _estimate(db, path)
    assert str(err.value) == (
        f"{path}: rows for 2 target arms ('third', 'treatment'); the candidate is one "
        "target: keep the rows of one arm (those of 'control', the production arm, are "
        "left out anyway)"
    )


def test_rows_of_the_control_only_cover_nothing(db: str, tmp_path: Path) -> None:
    path = _file(tmp_path / "control.csv", ["control"])
    with pytest.raises(InputError, match="covers no request of experiment 'small'"):
        _estimate(db, path)
