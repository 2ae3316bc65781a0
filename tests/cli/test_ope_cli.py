"""``abeval report`` with off-policy estimates: --target-propensities errors,
--ope-cap, --no-ope, reports without (or with some missing) propensities, and the
section in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from html_tree import parse
from ope_helpers import Impression, small_logs, write_impressions, write_target_file
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store import open_store
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file

runner = CliRunner()
EXP = "small"


def _store(tmp_path: Path, rows: list[Impression]) -> str:
    db = str(tmp_path / "s.duckdb")
    with open_store(db) as store:
        ingest_file(store, write_impressions(tmp_path / "e.csv", EXP, rows))
    return db


@pytest.fixture
def db(tmp_path: Path) -> str:
    return _store(tmp_path, small_logs())


def _report(db: str, *args: str) -> object:
    return runner.invoke(app, ["report", "-e", EXP, "--db", db, "--no-offline", *args])


def test_text_json_and_html_show_the_section(db: str, tmp_path: Path) -> None:
    text = _report(db, "-f", "text")
    assert text.exit_code == 0, text.output  # type: ignore[attr-defined]
    out = text.stdout  # type: ignore[attr-defined]
    assert "Off-policy estimates (CTR per impression; clustered by user; cap λ = 100" in out
    assert "treatment predicted from control's logs (target probabilities = the target " in out
    assert "control predicted from treatment's logs" in out
    assert "impressions with a propensity: control 120 of 120; treatment 120 of 120" in out
    doc = json.loads(_report(db, "-f", "json").stdout)  # type: ignore[attr-defined]
    assert doc["ope"]["status"] == "ok"
    assert [(d["source"], d["target"]) for d in doc["ope"]["directions"]] == [
        ("control", "treatment"),
        ("treatment", "control"),
    ]
    page = tmp_path / "r.html"
    assert _report(db, "-o", str(page)).exit_code == 0  # type: ignore[attr-defined]
    html = page.read_text()
    assert 'id="ope"' in html and 'data-estimator="snips"' in html


def test_no_ope_and_cap(db: str) -> None:
    out = _report(db, "-f", "text", "--no-ope").stdout  # type: ignore[attr-defined]
    assert "Off-policy estimates: not requested (--no-ope)" in out
    doc = json.loads(_report(db, "-f", "json", "--ope-cap", "1.5").stdout)  # type: ignore[attr-defined]
    assert doc["ope"]["cap"] == 1.5


@pytest.mark.parametrize("cap", ["0", "-1", "inf", "nan"])
def test_a_bad_cap_is_a_usage_error(db: str, cap: str) -> None:
    result = _report(db, "--ope-cap", cap)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stderr.splitlines()[-1] == (  # type: ignore[attr-defined]
        f"Error: --ope-cap {float(cap):g}: must be a number above 0"
    )


def test_a_report_without_propensities(tmp_path: Path) -> None:
    db = _store(tmp_path, small_logs(propensity=False))
    out = _report(db, "-f", "text").stdout  # type: ignore[attr-defined]
    assert "Off-policy estimates: no impression of this experiment carries a propensity" in out
    doc = json.loads(_report(db, "-f", "json").stdout)  # type: ignore[attr-defined]
    assert doc["ope"]["status"] == "no_propensities" and doc["ope"]["directions"] == []


def test_target_probabilities_for_logs_without_propensities_are_refused(tmp_path: Path) -> None:
    # An option that can do nothing is one usage line, not a report that ignores it.
    db = _store(tmp_path, small_logs(propensity=False))
    target = tmp_path / "target.csv"
    target.write_text("request_id,item_id,position,probability\nr1,a,1,0.5\n")
    result = _report(db, "-f", "json", "--target-propensities", str(target))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]
    assert result.stderr.splitlines() == [  # type: ignore[attr-defined]
        f"Error: --target-propensities '{target}': no impression of {EXP!r} carries a logged "
        "propensity, so no off-policy estimate can use target probabilities; leave it out, "
        "or ingest logs with a propensity column"
    ]


def test_impressions_without_propensity_are_counted_not_dropped_silently(tmp_path: Path) -> None:
    db = _store(tmp_path, small_logs(missing_every=3))
    doc = json.loads(_report(db, "-f", "json").stdout)  # type: ignore[attr-defined]
    arms = {a["arm"]: a for a in doc["ope"]["arms"]}
    # Users 0, 3, ..., 27 of each arm: 10 impressions without a propensity.
    assert (arms["control"]["impressions"], arms["control"]["without_propensity"]) == (120, 10)
    assert doc["ope"]["directions"][0]["impressions"] == 110
    warning = "control: 10 impressions have no propensity and are left out of the estimates"
    assert any(w.startswith(warning) for w in doc["ope"]["warnings"])
    out = _report(db, "-f", "text").stdout  # type: ignore[attr-defined]
    assert f"!! {warning}" in out
    assert "impressions with a propensity: control 110 of 120; treatment 110 of 120" in out
    page = tmp_path / "r.html"
    assert _report(db, "-o", str(page)).exit_code == 0  # type: ignore[attr-defined]
    shown = [n.clean() for n in parse(page.read_text()).find_all(data_field="ope-warning")]
    assert any(warning in w for w in shown)


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "target.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("request_id,item_id,position\nr,a0,1\n", "{f}: missing column probability or "
         "propensity; expected columns request_id, item_id, position, probability (and "
         "optionally arm, probability_given_above) (found: request_id, item_id, position); "
         "rename the columns in the header"),
        ("request_id,item_id,position,probability\nr,a0,1,0.5\nr,a1,1,1.5\n",
         "{f}:3:probability: 1.5 is not a probability between 0 and 1; fix or remove the row"),
        ("request_id,item_id,position,probability\nr,a0,0,0.5\n",
         "{f}:2:position: 0 is not a whole number from 1 (the top of the list) to 2147483647; "
         "fix or remove the row"),
        ("request_id,item_id,position,probability\nr,a0,1,x\n",
         "{f}:2:probability: 'x' is not a number; write a number in column probability or "
         "remove the row"),
        ("request_id,item_id,position,probability\nr,a0,1,0.5\nr,a1,1,0.2\nr,a0,1,0.3\n",
         "{f}:4:request_id: request r lists the same item at the same position twice; "
         "keep one row"),
        ("", "{f}: the file is empty; expected columns request_id, item_id, position, "
         "probability (and optionally arm, probability_given_above)"),
    ],
)  # fmt: skip
def test_target_propensities_errors(db: str, tmp_path: Path, content: str, message: str) -> None:
    path = _file(tmp_path, content)
    out = tmp_path / "r.html"
    result = _report(db, "--target-propensities", str(path), "-o", str(out))
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    assert result.stderr.strip() == "Error: " + message.format(f=path)  # type: ignore[attr-defined]
    assert not out.exists()
    with open_store(db, read_only=True) as store:
        assert [e.experiment for e in list_experiments(store)] == [EXP]


def test_missing_file(db: str, tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    result = _report(db, "--target-propensities", str(path), "-f", "json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert result.stderr.strip() == (  # type: ignore[attr-defined]
        f"Error: {path}: no such target propensities file; check the path"
    )
    assert result.stdout == ""  # type: ignore[attr-defined]


def test_no_arm_column_with_two_treatments(tmp_path: Path) -> None:
    rows = small_logs() + [(a.replace("treatment", "third"), u + "x", r + "x", i, k, c, p)
                      for a, u, r, i, k, c, p in small_logs() if a == "treatment"]  # fmt: skip
    db = _store(tmp_path, rows)
    path = write_target_file(tmp_path / "t.csv", [("control0-0", "a0", 1, 0.5)])
    result = _report(db, "--target-propensities", str(path), "-f", "json")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert result.stderr.strip() == (  # type: ignore[attr-defined]
        f"Error: {path}: no arm column and 2 treatment arms; add a column arm naming the "
        "target arm of each row"
    )


def test_a_file_is_used_for_the_directions_it_covers(db: str, tmp_path: Path) -> None:
    rows = [(f"control{u}-{q}", f"a{j}", 1, 1 / 3) for u in range(30) for q in range(2)
            for j in range(3)]  # fmt: skip
    rows += [("elsewhere", "a0", 1, 0.5), ("elsewhere", "a1", 1, 0.5)]
    path = write_target_file(tmp_path / "t.csv", rows)
    doc = json.loads(_report(db, "--target-propensities", str(path), "-f", "json").stdout)  # type: ignore[attr-defined]
    d = {(x["source"], x["target"]): x for x in doc["ope"]["directions"]}
    assert d[("control", "treatment")]["target_probabilities"] == "file"
    assert d[("treatment", "control")]["target_probabilities"] == "empirical"
    assert doc["ope"]["file"] == str(path)
    assert (
        f"{path}: 2 rows name no request of this experiment and are not used"
        in (doc["ope"]["warnings"])
    )
    # Position 1: weights (1/3) / (1/3) = 1; position 2 has no file rows: weights 0.
    pos = {p["position"]: p for p in d[("control", "treatment")]["positions"]}
    assert pos[1]["mean_weight"] == pytest.approx(1.0, rel=1e-12)
    assert pos[2]["mean_weight"] == 0


def test_an_arm_without_impressions_is_named(tmp_path: Path) -> None:
    events = write_impressions(tmp_path / "e.csv", EXP, small_logs())
    with events.open("a") as f:  # a third arm whose only user clicked, with no impression
        f.write(f"{EXP},third,x1,2024-03-01T10:00:00+00:00,click,r,a0,,\n")
    db = str(tmp_path / "s.duckdb")
    with open_store(db) as store:
        ingest_file(store, events)
    doc = json.loads(_report(db, "-f", "json").stdout)  # type: ignore[attr-defined]
    assert "third: no impressions, so no estimate from or of it" in doc["ope"]["warnings"]
    assert {(d["source"], d["target"]) for d in doc["ope"]["directions"]} == {
        ("control", "treatment"),
        ("treatment", "control"),
    }


def test_json_with_ope_validates_and_replay_is_not_judged(db: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "reports" / "report.schema.json").read_text())
    result = runner.invoke(app, ["report", "-e", EXP, "--db", db, "-f", "json", "--k", "2"])
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, schema)
    assert doc["ope"]["status"] == "ok"
    # Replayed metrics (ranking and beyond accuracy alike) carry no agreement label.
    assert doc["offline"] and {o["agreement"] for o in doc["offline"]} == {None}
    text = runner.invoke(app, ["report", "-e", EXP, "--db", db, "-f", "text", "--k", "2"]).stdout
    assert "Replayed metrics come from the same logged lists and clicks as CTR" in text
    replay = text.split("Offline metrics replayed")[1].split("Replayed metrics come")[0]
    assert replay.count("\n") > 3
    assert not any(w in replay for w in ("agree", "disagree", "inconclusive", " with ctr"))
