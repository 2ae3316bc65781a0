"""Target probabilities recorded with an experiment (``abeval experiment set X
--target-propensities FILE``): what is stored, the report and the agreement board
reading them with no flag, ``--target-propensities`` overriding them for one run,
the refusals (one line, nothing stored), post-hoc estimates without them, and the
warning when the target's own logging is personalised (docs/metrics.md#target-probabilities)."""

from __future__ import annotations

import json
import math
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from html_tree import parse
from ope_helpers import Impression, write_impressions, write_target_file
from ope_helpers import small_logs as _rows
from sqlalchemy import text
from test_ope_cli import EXP, _store
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store import open_store
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file

runner = CliRunner()
POST_HOC = (
    "post-hoc: uses the target arm's own impressions; assumes its lists do not depend on the user"
)


def _invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def _targets(probability: float, rows: list[Impression] | None = None) -> list[tuple]:
    """One row per logged impression: the target's probability of the logged item."""
    return [(r, i, k, probability) for _, _, r, i, k, _, _ in rows or _rows()]


def _stored(db: str) -> tuple[int, list[tuple]]:
    with open_store(db, read_only=True) as store, store.connect() as conn:
        rows = conn.execute(text("SELECT COUNT(*) FROM target_propensities")).scalar()
        files = conn.execute(
            text("SELECT experiment, file, checksum, rows_recorded FROM target_files")
        ).fetchall()
    return int(rows or 0), [tuple(f) for f in files]


def _ope(db: str, *args: str) -> dict:
    result = _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-f", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["ope"]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return _store(tmp_path, _rows())


def test_recorded_probabilities_are_used_with_no_flag(db: str, tmp_path: Path) -> None:
    path = write_target_file(tmp_path / "t.csv", _targets(0.5))
    result = _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"{EXP}: target probabilities recorded from {path}: 240 rows; treatment from "
        "control's logs: 60 of 60 requests (100.0%); control from treatment's logs: 60 of 60 "
        "requests (100.0%)"
    ]
    count, files = _stored(db)
    assert count == 240 and len(files) == 1
    import hashlib

    assert files[0] == (EXP, str(path), hashlib.sha256(path.read_bytes()).hexdigest(), 240)
    ope = _ope(db)
    assert (ope["target_origin"], ope["file"], ope["supply_command"]) == (
        "recorded",
        str(path),
        None,
    )
    for d in ope["directions"]:
        assert (d["target_probabilities"], d["evidence"]) == ("recorded", "prediction")
        # every weight is 0.5 / (1/3) = 1.5
        assert d["diagnostics"]["mean_weight"] == pytest.approx(1.5, rel=1e-12)
    out = _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-f", "text").stdout
    assert f"  target probabilities recorded with the experiment from {path} (" in out
    assert "treatment predicted from control's logs (target probabilities recorded with " in out
    page = tmp_path / "r.html"
    assert _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-o", str(page)).exit_code == 0
    tree = parse(page.read_text())
    assert tree.field("ope-recorded").startswith(
        f"Target probabilities recorded with the experiment from {path} ("
    )
    shown = [n.clean() for n in tree.find_all(data_field="ope-difference")]
    assert len(shown) == 2 and all(x.endswith(": consistent at α = 0.05") for x in shown)


def test_a_file_overrides_the_recorded_ones_for_one_run(db: str, tmp_path: Path) -> None:
    recorded = write_target_file(tmp_path / "t.csv", _targets(0.5))
    assert _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(recorded))
    once = write_target_file(tmp_path / "once.csv", _targets(0.25))
    ope = _ope(db, "--target-propensities", str(once))
    assert (ope["target_origin"], ope["file"]) == ("file", str(once))
    assert ope["supply_command"] == f"abeval experiment set {EXP} --target-propensities FILE"
    assert {d["target_probabilities"] for d in ope["directions"]} == {"file"}
    assert ope["directions"][0]["diagnostics"]["mean_weight"] == pytest.approx(0.75, rel=1e-12)
    # the record is unchanged, and used again without the flag
    assert _ope(db)["directions"][0]["diagnostics"]["mean_weight"] == pytest.approx(1.5)


def test_recording_again_replaces_the_rows(db: str, tmp_path: Path) -> None:
    first = write_target_file(tmp_path / "a.csv", _targets(0.5))
    second = write_target_file(tmp_path / "b.csv", _targets(0.25)[:120])  # control's only
    for path in (first, second):
        result = _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(path))
        assert result.exit_code == 0, result.output
    count, files = _stored(db)
    assert count == 120 and [f[1] for f in files] == [str(second)]
    ope = _ope(db)
    kinds = {(d["source"], d["target"]): d["target_probabilities"] for d in ope["directions"]}
    assert kinds == {("control", "treatment"): "recorded", ("treatment", "control"): "empirical"}


def _content(rows: list[str], header: str = "request_id,item_id,position,probability") -> str:
    return "\n".join([header, *rows]) + "\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (_content(["control0-0,a0,1,1.5"]),
         "{f}:2:probability: 1.5 is not a probability between 0 and 1; fix or remove the row"),
        (_content(["control0-0,a0,1,-0.1"]),
         "{f}:2:probability: -0.1 is not a probability between 0 and 1; fix or remove the row"),
        (_content(["control0-0,a0,1,0.5", "control0-0,a0,1,0.4"]),
         "{f}:3:request_id: request control0-0 lists the same item at the same position "
         "twice; keep one row"),
        (_content(["control0-0,a0,1,0.5"], "request_id,item_id,position,probability_given_above"),
         "{f}: column probability_given_above without probability; the marginal probability "
         "of each row is needed beside the given-above one: add a column probability"),
        (_content(["control0-0,a0,1,0.5,"],
                  "request_id,item_id,position,probability,probability_given_above"),
         "{f}:2:probability_given_above: the value is missing (1 rows without one); fill it in "
         "or remove the rows"),
        (_content(["control0-0,a0,1,0.5,2"],
                  "request_id,item_id,position,probability,probability_given_above"),
         "{f}:2:probability_given_above: 2 is not a probability between 0 and 1; fix or remove "
         "the row"),
        (_content(["control0-0,a0,1,0.5,third"], "request_id,item_id,position,probability,arm"),
         "{f}: arm 'third' is not an arm of experiment 'small' (its arms are control, "
         "treatment); name the target arm of each row in column arm"),
        (_content([f"control{u}-{q},a{(u + q) % 3},1,0.5" for u in range(14) for q in range(2)]),
         "{f}: covers 28 of 60 requests of arm control (46.7%) for target treatment; a target "
         "file must give the logged item's probability for at least 50% of the source arm's "
         "requests: check that it is the file of experiment 'small'"),
        (_content(["nowhere,a0,1,0.5"]),
         "{f}: covers no request of experiment 'small' (0 of its requests show an item at a "
         "position the file gives); give this experiment's target probabilities"),
    ],
)  # fmt: skip
def test_bad_files_are_refused_and_nothing_is_stored(
    db: str, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(content)
    args = ("experiment", "set", EXP, "--db", db, "--control", "treatment")
    result = _invoke(*args, "--target-propensities", str(path))
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == "Error: " + message.format(f=path)
    assert _stored(db) == (0, [])
    with open_store(db, read_only=True) as store:
        assert list_experiments(store)[0].control_arm is None  # --control not applied either
    # the same file for one report is refused with the same line, and no report is written
    out = tmp_path / "r.html"
    once = _invoke(
        "report", "-e", EXP, "--db", db, "--target-propensities", str(path), "-o", str(out)
    )
    assert once.exit_code == 1 and once.stderr.strip() == "Error: " + message.format(f=path)
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "renamed"),
    [
        ("other", lambda u, r, i: ("o" + u, "o" + r, i)),  # its own request ids
        ("twin", lambda u, r, i: ("t" + u, r, "z" + i)),  # this one's ids (simulated ids repeat)
    ],
)
def test_another_experiments_file_is_refused(tmp_path: Path, name: str, renamed: Any) -> None:
    other = [(a, *renamed(u, r, i), k, c, p) for a, u, r, i, k, c, p in _rows()]
    db = _store(tmp_path, _rows())
    with open_store(db) as store:
        ingest_file(store, write_impressions(tmp_path / "o.csv", name, other))
    path = write_target_file(tmp_path / "t.csv", _targets(0.5, other))
    result = _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(path))
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {path}: gives the logged item of 120 requests of experiment {name!r} and of 0 "
        "of 'small'; give experiment 'small''s target probabilities"
    )
    assert _stored(db) == (0, [])
    # recorded with its own experiment, it is accepted
    ok = _invoke("experiment", "set", name, "--db", db, "--target-propensities", str(path))
    assert ok.exit_code == 0, ok.output
    assert _stored(db)[0] == 240


def test_without_target_probabilities_the_estimate_is_post_hoc(db: str, tmp_path: Path) -> None:
    ope = _ope(db)
    assert ope["target_origin"] == "none" and ope["file"] is None
    assert ope["supply_command"] == f"abeval experiment set {EXP} --target-propensities FILE"
    assert {(d["target_probabilities"], d["evidence"]) for d in ope["directions"]} == {
        ("empirical", "post_hoc")
    }
    out = _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-f", "text").stdout
    assert (
        "  to predict instead, record the target policy's probabilities: abeval experiment set "
        f"{EXP} --target-propensities FILE"
    ) in out.splitlines()
    assert (
        "  treatment predicted from control's logs (target probabilities = the target arm's "
        f"frequency of (item, position); {POST_HOC}; 30 users, 120 impressions)"
    ) in out.splitlines()
    page = tmp_path / "r.html"
    assert _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-o", str(page)).exit_code == 0
    html = unescape(page.read_text())
    assert POST_HOC in html and 'data-field="ope-supply"' in html


def _personalised() -> list[Impression]:
    """The control logs a0 at position 1 with 1/3 for some users and 1/4 for others."""
    return [
        (a, u, r, i, k, c, 0.25 if a == "control" and k == 1 and int(u[7:]) % 2 else p)
        for a, u, r, i, k, c, p in _rows()
    ]


def test_personalised_logging_is_judged_by_the_target(tmp_path: Path) -> None:
    """The control logs a0 at position 1 with 1/3 for some users and 1/4 for others:
    the treatment is still estimated from its logs (each weight divides by its own
    propensity); the control, whose own lists vary, is estimated from the
    treatment's logs with a warning; a file takes the warning away."""
    rows = _personalised()
    db = _store(tmp_path, rows)
    ope = _ope(db)
    assert "not_estimated" not in ope
    by = {(d["source"], d["target"]): d["varying_target"] for d in ope["directions"]}
    assert by == {
        ("control", "treatment"): None,
        ("treatment", "control"): {
            "status": "personalised_target", "pairs": 6, "varying": 3, "share": 0.5
        },
    }  # fmt: skip
    out = _invoke("report", "-e", EXP, "--db", db, "--no-offline", "-f", "text").stdout
    assert any(
        line.startswith("!! control from treatment's logs: control's own logged probabilities "
                        "vary between requests for 50% of (item, position) pairs (3 of 6)")
        for line in out.splitlines()
    )  # fmt: skip
    path = write_target_file(tmp_path / "t.csv", _targets(0.5, rows))
    with_file = _ope(db, "--target-propensities", str(path))
    assert [d["varying_target"] for d in with_file["directions"]] == [None, None]


def test_the_difference_from_the_online_lift(db: str, tmp_path: Path) -> None:
    """predicted − online with se √(se_p² + se_o²), re-derived from the JSON's own
    lifts and checked against the normal quantile."""
    from scipy.stats import norm

    path = write_target_file(tmp_path / "t.csv", _targets(0.2))
    ope = _ope(db, "--target-propensities", str(path))
    for d in ope["directions"]:
        head = next(e for e in d["estimates"] if e["estimator"] == d["headline"])
        p, o = head["predicted_lift"], d["online_lift"]
        diff = d["difference"]
        se = math.hypot(p["se"], o["se"])
        assert diff["difference"] == pytest.approx(p["value"] - o["value"], abs=1e-12)
        assert diff["se"] == pytest.approx(se, rel=1e-12)
        z = (p["value"] - o["value"]) / se
        assert diff["z"] == pytest.approx(z, rel=1e-12)
        half = norm.ppf(0.975) * se
        assert diff["ci"] == pytest.approx([z * se - half, z * se + half], rel=1e-9)
        assert diff["verdict"] == ("consistent" if abs(z) < norm.ppf(0.975) else "inconsistent")


def test_the_board_counts_post_hoc_estimates_as_not_independent(db: str, tmp_path: Path) -> None:
    def board() -> dict:
        result = _invoke("agreement", "--db", db, "--format", "json", "--resamples", "100")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    before = board()
    ope = [p for p in before["pairs"] if p["source"] == "ope"]
    assert ope and not any(p["independent"] for p in ope)
    assert not any(s["independent"] for s in before["summary"] if s["source"] == "ope")
    text_out = _invoke("agreement", "--db", db, "--format", "text", "--resamples", "100").stdout
    assert "off-policy* post hoc: without target probabilities" in text_out
    path = write_target_file(tmp_path / "t.csv", _targets(1 / 3))
    assert _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(path))
    after = board()
    assert all(p["independent"] for p in after["pairs"] if p["source"] == "ope")


def test_reports_with_recorded_and_without_estimates_follow_the_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "reports" / "report.schema.json").read_text())
    rows = _personalised()
    db = _store(tmp_path, rows)
    args = ["report", "-e", EXP, "--db", db, "-f", "json", "--no-offline"]
    personalised = json.loads(_invoke(*args).stdout)
    assert any(d["varying_target"] for d in personalised["ope"]["directions"])
    jsonschema.validate(personalised, schema)
    control_only = [r for r in rows if r[0] == "control"]
    path = write_target_file(tmp_path / "t.csv", _targets(0.5, control_only))
    assert _invoke("experiment", "set", EXP, "--db", db, "--target-propensities", str(path))
    recorded = json.loads(_invoke(*args).stdout)
    assert recorded["ope"]["target_origin"] == "recorded"
    verdict = recorded["ope"]["directions"][0]["difference"]["verdict"]
    assert verdict in ("consistent", "inconsistent")
    jsonschema.validate(recorded, schema)
