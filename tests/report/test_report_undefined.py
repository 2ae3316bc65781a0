"""Undefined statistics render as undefined in every format, and the default HTML
file name is safe whatever the experiment is called (issue 11, items 4 and 7)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.online_metrics import Catalog
from abeval.analysis.report_model import ExperimentReport, Settings
from abeval.cli import app
from abeval.formatting import NA
from abeval.report.html import MAX_STEM_BYTES, default_path, render_html
from abeval.report.text import render_text
from abeval.report.words import said
from abeval.store import open_store

runner = CliRunner()

SCHEMA = Path(__file__).parents[2] / "reports" / "report.schema.json"

EVENTS = """\
experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,device
ov,control,c1,2024-05-01T08:00:00,exposure,,,,,mobile
ov,control,c1,2024-05-01T08:01:00,impression,r1,i1,1,,mobile
ov,control,c1,2024-05-01T08:01:00,impression,r1,i2,2,,mobile
ov,control,c1,2024-05-01T08:02:00,click,r1,i1,,,mobile
ov,control,c1,2024-05-01T08:03:00,purchase,r1,i1,,1e15,mobile
ov,control,c1,2024-05-01T08:04:00,purchase,r1,i1,,1e15,mobile
ov,control,c2,2024-05-01T08:00:00,exposure,,,,,desktop
ov,control,c2,2024-05-01T08:01:00,impression,r2,i1,1,,desktop
ov,control,c3,2024-05-01T08:00:00,exposure,,,,,mobile
ov,control,c3,2024-05-01T08:01:00,impression,r5,i1,1,,mobile
ov,control,c3,2024-05-01T08:02:00,click,r5,i1,,,mobile
ov,treatment,t1,2024-05-01T08:00:00,exposure,,,,,mobile
ov,treatment,t1,2024-05-01T08:01:00,impression,r3,i1,1,,mobile
ov,treatment,t1,2024-05-01T08:02:00,click,r3,i1,,,mobile
ov,treatment,t1,2024-05-01T08:03:00,purchase,r3,i1,,3,mobile
ov,treatment,t2,2024-05-01T08:00:00,exposure,,,,,desktop
ov,treatment,t2,2024-05-01T08:01:00,impression,r4,i1,1,,desktop
ov,treatment,t2,2024-05-01T08:01:00,impression,r4,i2,2,,desktop
ov,treatment,t3,2024-05-01T08:00:00,exposure,,,,,mobile
ov,treatment,t3,2024-05-01T08:01:00,impression,r6,i1,1,,mobile
"""


@pytest.fixture(scope="module")
def overflow_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Control's revenue is 1e308 + 1e308: the sum overflows to infinity. Ingest
    refuses such values, so they are written behind its back, as a store from an
    older abeval or a table read in place may hold them."""
    tmp = tmp_path_factory.mktemp("overflow")
    (tmp / "ov.csv").write_text(EVENTS)
    db = str(tmp / "ov.duckdb")
    result = runner.invoke(app, ["ingest", str(tmp / "ov.csv"), "--db", db, "-q"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(db) as con:
        con.execute("UPDATE events SET value = 1e308 WHERE value = 1e15")
        assert con.execute("SELECT count(*) FROM events WHERE value = 1e308").fetchone() == (2,)
    return db


# Options, not statistics: validated finite by the CLI, so never undefined.
OPTIONS = {"alpha", "threshold", "target_mde", "power", "expected_share"}
# The same, named by class where the field name alone is ambiguous.
OPTION_FIELDS = {("OpeSection", "cap")}


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def undefine(value: Any) -> Any:
    """Every statistic in ``value`` undefined: each field typed optional None, each
    float None (a non-finite float becomes None in any result), each ``ok`` status
    ``invalid_input``; settings, options and the metric catalog are left as they are."""
    if isinstance(value, Settings | Catalog):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value))
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:  # derived from the other fields when the copy is made
                continue
            x = getattr(value, f.name)
            if f.name == "status" and x == "ok":
                changes[f.name] = "invalid_input"
            elif isinstance(x, float) and (
                f.name in OPTIONS or (type(value).__name__, f.name) in OPTION_FIELDS
            ):
                continue
            elif (
                _optional(hints[f.name])
                and not isinstance(x, str)
                and not (
                    dataclasses.is_dataclass(x)
                    or (isinstance(x, tuple) and x and not isinstance(x[0], float))
                )
            ):
                changes[f.name] = None
            else:
                changes[f.name] = undefine(x)
        return dataclasses.replace(value, **changes)
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return None
    if isinstance(value, tuple):
        if value and all(isinstance(x, float) for x in value):
            return None
        return tuple(undefine(x) for x in value)
    if isinstance(value, dict):
        return {k: undefine(x) for k, x in value.items()}
    return value


@pytest.fixture(scope="module")
def undefined(overflow_store: str) -> ExperimentReport:
    with open_store(overflow_store, read_only=True) as store:
        report = build_report(store, "ov", ReportOptions(segment="device"))
    assert report.offline and report.segments and report.daily and report.power
    out = undefine(report)
    assert out.metrics[0].comparison.relative.effect is None
    assert out.metrics[0].control.numerator is None
    return out


def test_undefined_report_renders_in_json(undefined: ExperimentReport) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = undefined.to_dict()
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert "NaN" not in json.dumps(doc, allow_nan=False)


def test_undefined_report_renders_in_text(undefined: ExperimentReport) -> None:
    text = render_text(undefined)
    # The status in words (abeval.report.words), never its code.
    said_ = {f"({said(m.status, m.message)})" for m in undefined.metrics}
    assert all(m.status == "invalid_input" for m in undefined.metrics)
    rows = [line for line in text.splitlines() if any(w in line for w in said_)]
    assert "invalid_input" not in text
    assert len(rows) == len(undefined.metrics)
    assert all(f" {NA} " in row for row in rows)
    assert f"could detect {NA} at 80% power; a 2% lift needs an unknown number of users" in text


def test_undefined_report_renders_in_html(undefined: ExperimentReport) -> None:
    page = render_html(undefined)
    for m in undefined.metrics:
        start = page.index(f'data-metric="{m.metric}" data-arm="{m.arm}" data-basis=')
        row = page[start : page.index("</tr>", start)]
        assert row.count(NA) >= 4, m.metric  # control, treatment, lift, interval at least


def test_overflowing_revenue_renders_in_every_format(overflow_store: str, tmp_path: Path) -> None:
    base = ["report", "-e", "ov", "--db", overflow_store]
    as_json = runner.invoke(app, [*base, "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    revenue = next(
        m for m in json.loads(as_json.stdout)["metrics"] if m["metric"] == "revenue_per_user"
    )
    assert revenue["status"] == "invalid_input"
    assert (revenue["control"]["numerator"], revenue["control"]["value"]) == (None, None)
    text = runner.invoke(app, [*base, "--format", "text"]).stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("Revenue per user"))
    assert line.split()[4:6] == [NA, "1.000"] and line.endswith(
        "(control: a sum is not finite or a count/sum of squares < 0)"
    )
    page = tmp_path / "ov.html"
    result = runner.invoke(app, [*base, "-o", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    start = html.index('data-metric="revenue_per_user"')
    row, message = html[start:].split("</tr>")[:2]
    assert NA in row
    assert "Revenue per user: control: a sum is not finite" in message


# --------------------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("experiment", "expected"),
    [
        ("home-reco-v2", "home-reco-v2.html"),
        ("a/b\\c", "a_b_c-"),
        ("../../etc/passwd", "_.._etc_passwd-"),
        ("bell\x07and\x1b]0;pwned", "bell_and__0_pwned-"),
        ("..", None),
        ("", None),
    ],
)
def test_default_path_is_safe(experiment: str, expected: str | None) -> None:
    path = default_path(experiment)
    assert path.parent == Path("reports")
    digest = hashlib.sha256(experiment.encode()).hexdigest()[:12]
    if expected is None:  # nothing usable is left: a hash of the name
        assert path.stem == digest
    elif expected.endswith(".html"):  # a safe name as it is
        assert path.name == expected
    else:  # the safe characters, then a hash of the whole name
        assert path.name == f"{expected}{digest}.html"


def test_default_paths_never_collide() -> None:
    # Issue 25: `a/b\\c` and `a_b_c` wrote the same page, the second over the first.
    names = ["a/b\\c", "a_b_c", "a b c", "A_b_c", "a_b_c-" + "0" * 12, "a?b*c", "x" * 300]
    paths = [default_path(n) for n in names]
    assert len({str(p).lower() for p in paths}) == len(names)


def test_long_names_are_shortened_with_a_hash() -> None:
    long_a, long_b = "x" * 300, "x" * 299 + "y"
    a, b = default_path(long_a), default_path(long_b)
    assert a != b
    assert len(a.stem.encode()) <= MAX_STEM_BYTES and a.stem.startswith("x" * 80)
    wide = default_path("é" * 200)  # two bytes each: cut on a character boundary
    assert len(wide.stem.encode()) <= MAX_STEM_BYTES and wide.stem.startswith("é" * 40)


def test_cli_writes_a_long_named_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "exp-" + "n" * 300
    (tmp_path / "e.csv").write_text(EVENTS.replace("\nov,", f"\n{name},"))
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "e.duckdb")
    assert runner.invoke(app, ["ingest", "e.csv", "--db", db, "-q"]).exit_code == 0
    result = runner.invoke(app, ["report", "-e", name, "--db", db, "--no-offline"])
    assert result.exit_code == 0, result.output
    written = default_path(name)
    assert (tmp_path / written).is_file()
    assert result.stderr.strip() == f"wrote {written}"
