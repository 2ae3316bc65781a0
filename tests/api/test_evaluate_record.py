"""``abeval evaluate`` with named models and ``--experiment``: the evaluation recorded
against the experiment's arms (docs/metrics.md#recorded-evaluations).

The experiment is the hand experiment of test_report.py (arms control and
treatment). The held-out files, one relevant item per user:

    user  relevant  control's list  RR   treatment's list  RR
    u1    a         a, x            1    a, x              1
    u2    b         x, b            1/2  b, x              1
    u3    c         x, y            0    c, x              1
    u4    d         d, x            1    x, d              1/2

so MRR is 0.625 for control and 0.875 for treatment, the per-user differences
are 0, 1/2, 1, −1/2, and coverage@2 is 5/6 for both (catalogue a, b, c, d, x, y).
Expected standard errors and intervals are computed below from these per-user
values with numpy and scipy.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from html_tree import parse
from ingest_store import query, run
from scipy import stats as sps
from test_report import hand_rows, write_csv

from abeval.store import open_store
from abeval.store.evaluations import latest_evaluations
from abeval.store.ingest import ingest_file

EXP = "hand"
TRUTH = {"u1": "a", "u2": "b", "u3": "c", "u4": "d"}
CONTROL = {"u1": ["a", "x"], "u2": ["x", "b"], "u3": ["x", "y"], "u4": ["d", "x"]}
TREATMENT = {"u1": ["a", "x"], "u2": ["b", "x"], "u3": ["c", "x"], "u4": ["x", "d"]}
RR_CONTROL = np.array([1, 0.5, 0, 1])
RR_TREATMENT = np.array([1, 1, 1, 0.5])
COLUMNS = (
    "arm, metric, value, se, users, baseline_arm, difference, difference_se, "
    "difference_low, difference_high, paired_users"
)


def write_lists(path: Path, lists: dict[str, list[str]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user_id", "item_id", "rank"])
        for user, items in lists.items():
            w.writerows([user, item, rank] for rank, item in enumerate(items, 1))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    truth = tmp_path / "truth.csv"
    with truth.open("w", newline="") as f:
        csv.writer(f).writerows([["user_id", "item_id"], *TRUTH.items()])
    return {
        "truth": truth,
        "control": write_lists(tmp_path / "ctl.csv", CONTROL),
        "treatment": write_lists(tmp_path / "trt.csv", TREATMENT),
    }


def ingest_hand(db: str, tmp_path: Path, experiment: str = EXP, arms: tuple = ()) -> str:
    rows = hand_rows(experiment)
    if arms:  # rename the arms
        names = dict(zip(("control", "treatment"), arms, strict=True))
        rows = [[r[0], names[r[1]], *r[2:]] for r in rows]
    with open_store(db) as store:
        ingest_file(store, write_csv(tmp_path / f"{experiment}.csv", rows))
    return db


@pytest.fixture
def store(tmp_path: Path) -> str:
    return ingest_hand(str(tmp_path / "s.duckdb"), tmp_path)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(db: str, files: dict[str, Path], *extra: str, order=("treatment", "control")):
    models = [a for name in order for a in ("-r", f"{name}={files[name]}")]
    return run(
        "evaluate", "-t", str(files["truth"]), *models, "-m", "mrr,coverage@2",
        "--experiment", EXP, "--db", db, *extra,
    )  # fmt: skip


def rows(db: str) -> list[tuple]:
    return query(db, f"SELECT {COLUMNS} FROM offline_evaluations ORDER BY arm, metric")


def expected_rows() -> list[tuple]:
    """The rows by the definitions: mean and its standard error over users; the
    paired t test on the differences (scipy's for the interval)."""
    d = RR_TREATMENT - RR_CONTROL
    se_d = d.std(ddof=1) / 2
    t = sps.t.ppf(0.975, 3)
    ttest = sps.ttest_rel(RR_TREATMENT, RR_CONTROL)
    assert ttest.statistic == pytest.approx(d.mean() / se_d)  # the same test as scipy's
    low, high = ttest.confidence_interval(0.95)
    assert (low, high) == pytest.approx((d.mean() - t * se_d, d.mean() + t * se_d))
    return [
        ("control", "coverage@2", 5 / 6, None, 4, None, None, None, None, None, None),
        ("control", "mrr", 0.625, RR_CONTROL.std(ddof=1) / 2, 4, *[None] * 6),
        ("treatment", "coverage@2", 5 / 6, None, 4, None, None, None, None, None, None),
        (
            "treatment", "mrr", 0.875, RR_TREATMENT.std(ddof=1) / 2, 4,
            "control", 0.25, se_d, low, high, 4,
        ),
    ]  # fmt: skip


def assert_rows(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w), (g, w)
        for a, b in zip(g, w, strict=True):
            if isinstance(b, float):
                assert a == pytest.approx(b, rel=1e-12, abs=1e-15), (g, w)
            else:
                assert a == b, (g, w)


def test_records_the_rows_of_every_arm_and_metric(store: str, files: dict[str, Path]) -> None:
    before = datetime.now(UTC).replace(tzinfo=None)
    result = record(store, files)
    after = datetime.now(UTC).replace(tzinfo=None)
    assert result.exit_code == 0, result.output
    assert_rows(rows(store), expected_rows())
    [(eid, conventions, fingerprints, at)] = query(
        store,
        "SELECT DISTINCT evaluation_id, conventions, fingerprints, recorded_at "
        "FROM offline_evaluations",
    )
    assert before <= at <= after
    assert json.loads(fingerprints) == {
        "truth": sha(files["truth"]),
        "recommendations:control": sha(files["control"]),
        "recommendations:treatment": sha(files["treatment"]),
    }
    conv = json.loads(conventions)
    assert (conv["alpha"], conv["gain"], conv["missing_recommendations"]) == (
        "0.05",
        "linear",
        "skip",
    )
    assert query(store, "SELECT DISTINCT experiment FROM offline_evaluations") == [(EXP,)]
    assert result.stderr.splitlines()[-1] == (
        f"recorded evaluation {eid} against experiment hand (4 rows; baseline: the control "
        "arm control)"
    )
    # What the report and the agreement board read back.
    with open_store(store, read_only=True) as s:
        latest = latest_evaluations(s)[EXP]
    assert latest.evaluation_id == eid


def test_json_says_what_was_recorded(store: str, files: dict[str, Path]) -> None:
    result = record(store, files, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    [(eid,)] = query(store, "SELECT DISTINCT evaluation_id FROM offline_evaluations")
    recorded = doc["recorded"]
    assert recorded.pop("recorded_at")
    assert recorded == {"experiment": EXP, "evaluation_id": eid, "control": "control", "rows": 4}
    # The control is the baseline although it was given second.
    assert doc["models"] == ["control", "treatment"]
    [c] = doc["comparisons"]
    assert (c["baseline"], c["model"], c["difference"]) == ("control", "treatment", 0.25)
    assert c["difference_se"] == pytest.approx((RR_TREATMENT - RR_CONTROL).std(ddof=1) / 2)


def test_the_page_says_what_was_recorded(
    tmp_path: Path, store: str, files: dict[str, Path]
) -> None:
    page = tmp_path / "evaluation.html"
    result = record(store, files, "--format", "html", "-o", str(page))
    assert result.exit_code == 0, result.output
    [(eid,)] = query(store, "SELECT DISTINCT evaluation_id FROM offline_evaluations")
    line = parse(page.read_text()).find(data_field="recorded")
    assert line.field("evaluation-id") == eid
    assert line.clean().startswith("Recorded against experiment hand as evaluation ")


def test_the_order_of_the_files_does_not_change_the_baseline_and_recording_again_replaces(
    store: str, files: dict[str, Path]
) -> None:
    assert record(store, files, order=("control", "treatment")).exit_code == 0
    first = query(store, "SELECT DISTINCT evaluation_id, recorded_at FROM offline_evaluations")
    assert record(store, files, order=("treatment", "control")).exit_code == 0
    second = query(store, "SELECT DISTINCT evaluation_id, recorded_at FROM offline_evaluations")
    assert len(first) == len(second) == 1
    assert second[0][0] == first[0][0]  # the same evaluation ...
    assert second[0][1] > first[0][1]  # ... replaced by the later recording
    assert_rows(rows(store), expected_rows())
    # Other inputs are another evaluation, kept beside it; the latest is the one read.
    write_lists(files["treatment"], {**TREATMENT, "u4": ["d", "x"]})
    assert record(store, files).exit_code == 0
    assert query(store, "SELECT COUNT(DISTINCT evaluation_id) FROM offline_evaluations") == [(2,)]
    with open_store(store, read_only=True) as s:
        latest = latest_evaluations(s)[EXP]
    assert latest.metric("treatment", "mrr").value == 1.0  # type: ignore[union-attr]


def test_an_arm_without_a_model_is_fine_but_the_control_needs_one(
    store: str, files: dict[str, Path]
) -> None:
    only = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"control={files['control']}",
        "-m", "mrr", "--experiment", EXP, "--db", store,
    )  # fmt: skip
    assert only.exit_code == 0, only.output
    assert query(store, "SELECT arm, metric, value FROM offline_evaluations") == [
        ("control", "mrr", 0.625)
    ]
    no_control = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"treatment={files['treatment']}",
        "--experiment", EXP, "--db", store,
    )  # fmt: skip
    assert no_control.exit_code == 2
    assert no_control.stderr == (
        "Error: --recommendations: no model for the control arm 'control' of experiment "
        "'hand': lifts are measured against it; give control=FILE\n"
    )


def test_unknown_arm_names_the_experiment_the_name_and_the_arms(
    store: str, files: dict[str, Path]
) -> None:
    result = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"contrl={files['control']}",
        "-r", f"treatment={files['treatment']}", "--experiment", EXP, "--db", store,
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Error: --recommendations 'contrl': experiment 'hand' has no arm 'contrl'; did you "
        "mean control? its arms are control, treatment; name each model after an arm, as "
        "ARM=FILE\n"
    )
    assert query(store, "SELECT COUNT(*) FROM offline_evaluations") == [(0,)]
    # A model named after its file (ctl) is not an arm either.
    plain = run(
        "evaluate", "-t", str(files["truth"]), "-r", str(files["control"]),
        "--experiment", EXP, "--db", store,
    )  # fmt: skip
    assert plain.exit_code == 2
    assert plain.stderr.startswith("Error: --recommendations 'ctl': experiment 'hand' has no arm")
    assert query(store, "SELECT COUNT(*) FROM offline_evaluations") == [(0,)]


def test_unknown_experiment(store: str, files: dict[str, Path]) -> None:
    result = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"control={files['control']}",
        "--experiment", "hnd", "--db", store,
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no experiment 'hnd' in the store; did you mean hand? "
        "(list them with `abeval experiments`)\n"
    )
    assert query(store, "SELECT COUNT(*) FROM offline_evaluations") == [(0,)]


def test_experiment_without_a_control(tmp_path: Path, files: dict[str, Path]) -> None:
    db = ingest_hand(str(tmp_path / "two.duckdb"), tmp_path, "rankers", ("old", "new"))
    result = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"old={files['control']}",
        "-r", f"new={files['treatment']}", "--experiment", "rankers", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: experiment 'rankers' has no recorded control and no arm named 'control' "
        "(arms: new, old); record it with `abeval experiment set rankers --control ARM`\n"
    )
    assert query(db, "SELECT COUNT(*) FROM offline_evaluations") == [(0,)]
    # Recorded, the control is the baseline.
    assert run("experiment", "set", "rankers", "--control", "old", "--db", db).exit_code == 0
    again = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"new={files['treatment']}",
        "-r", f"old={files['control']}", "-m", "mrr", "--experiment", "rankers", "--db", db,
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert query(
        db, "SELECT arm, baseline_arm, difference FROM offline_evaluations ORDER BY arm"
    ) == [
        ("new", "old", 0.25),
        ("old", None, None),
    ]


def test_predictions_are_recorded_with_their_values(
    tmp_path: Path, store: str, files: dict[str, Path]
) -> None:
    truth = tmp_path / "ratings.csv"
    truth.write_text("user_id,item_id,rating\nu1,a,4\nu2,b,2\n")
    control = tmp_path / "p1.csv"
    control.write_text("user_id,item_id,prediction\nu1,a,3\nu2,b,2\n")
    treatment = tmp_path / "p2.csv"
    treatment.write_text("user_id,item_id,prediction\nu1,a,4\n")
    result = run(
        "evaluate", "-t", str(truth), "--predictions", f"control={control}",
        "--predictions", f"treatment={treatment}", "--experiment", EXP, "--db", store,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # rmse: control √((1² + 0²)/2), treatment 0 over its one pair; users = pairs predicted.
    assert query(
        store,
        "SELECT arm, metric, value, se, users, baseline_arm FROM offline_evaluations "
        "ORDER BY arm, metric",
    ) == [
        ("control", "mae", 0.5, None, 2, None),
        ("control", "rmse", pytest.approx(math.sqrt(0.5)), None, 2, None),
        ("treatment", "mae", 0.0, None, 1, None),
        ("treatment", "rmse", 0.0, None, 1, None),
    ]


@pytest.mark.postgres
def test_recording_on_postgres_gives_the_same_rows(
    tmp_path: Path, files: dict[str, Path], postgres_database: str
) -> None:
    ingest_hand(postgres_database, tmp_path)
    assert record(postgres_database, files).exit_code == 0
    assert record(postgres_database, files).exit_code == 0  # replaced, not doubled
    with open_store(postgres_database) as s, s.connect() as conn:
        [(n,)] = conn.exec_driver_sql("SELECT COUNT(*) FROM offline_evaluations").fetchall()
        latest = latest_evaluations(s)[EXP]
    assert n == 4
    got = [
        (m.arm, m.metric, m.value, m.se, m.users, m.baseline_arm, m.difference, m.difference_se,
         m.difference_low, m.difference_high, m.paired_users)
        for m in latest.metrics
    ]  # fmt: skip
    assert_rows(got, expected_rows())
    assert latest.fingerprints["truth"] == sha(files["truth"])
