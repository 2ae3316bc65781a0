"""A team metric that fails at report time fails its own row, never the whole
report (issue 38, item 2): a recorded definition that no longer reads (not JSON, a
field this abeval does not know, a field of the wrong type, a cap outside (0, 1))
and a filter the engine refuses on the events (an attribute text that is no JSON)
give that metric's row the status ``failed`` and a reason with the fix, in text,
JSON and HTML; the other metrics keep their numbers, a failed primary makes the
decision say it could not compare it, and ``abeval metrics`` lists the definition
with its reason. On DuckDB and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from test_team_metrics_cli import EVENTS
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

# test_team_metrics_cli's events: control u1 (mobile, one add_to_cart) and u2
# (desktop, none); treatment u3 (mobile, add_to_cart and Add_To_Cart: two, as ingest
# lower-cases event types) and u4 (desktop, a play). So each arm's share with a cart
# is 1/2, and the mobile carts per user are 1/2 in control and 2/2 in treatment.
METRICS = """\
[cart_rate]
kind = "proportion"
event = "add_to_cart"

[mobile_carts]
kind = "mean"
event = "add_to_cart"
where = { device = "mobile" }
"""
FIX = "remove it with `abeval metrics remove {}`"

# (the stored definition of cart_rate, what its reason says)
UNREADABLE = [
    ('{"kind": "proportion"', "is not a JSON object"),
    (
        '{"kind": "proportion", "numerator": {"event": "add_to_cart", "value": false}, '
        '"window": 3}',
        "field 'window' is not one this abeval reads (written by a newer abeval?)",
    ),
    ('{"kind": "median", "numerator": {"event": "add_to_cart"}}', "kind 'median'"),
    ('{"kind": "proportion", "numerator": {"event": 5}}', "numerator {'event': 5}"),
    ('{"kind": "mean", "numerator": {"event": "add_to_cart"}, "cap": 1.5}', "cap 1.5"),
    ('{"kind": "proportion", "numerator": {"event": "add_to_cart"}, "where": []}', "where []"),
    ("[1, 2]", "is not a JSON object"),
]


@pytest.fixture(params=["duckdb", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABEVAL_DB", raising=False)
    url = (
        request.getfixturevalue("postgres_database")
        if request.param == "postgresql"
        else str(tmp_path / "s.duckdb")
    )
    Path("events.csv").write_text(EVENTS)
    Path("m.toml").write_text(METRICS)
    assert invoke(url, "ingest", "events.csv").exit_code == 0
    assert invoke(url, "metrics", "add", "m.toml").exit_code == 0
    return url


def invoke(url: str, *args: str) -> Any:
    return runner.invoke(app, [*args, "--db", url])


def execute(url: str, statement: str, **params: Any) -> None:
    if "://" not in url:
        import duckdb

        con = duckdb.connect(url)
        con.execute(statement.replace(":d", "$d").replace(":n", "$n"), params)
        con.close()
        return
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(statement), params)
    engine.dispose()


def report(url: str, *extra: str) -> dict[str, Any]:
    result = invoke(url, "report", "-e", "shop", "-f", "json", "--no-offline", *extra)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def row(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["metrics"] if m["metric"] == name)


@pytest.mark.parametrize(("stored", "said"), UNREADABLE)
def test_an_unreadable_definition_fails_its_row(db: str, stored: str, said: str) -> None:
    execute(db, "UPDATE metric_definitions SET definition = :d WHERE name = 'cart_rate'", d=stored)
    doc = report(db, "--primary", "cart_rate", "--guardrails", "mobile_carts")
    failed = row(doc, "cart_rate")
    assert failed["status"] == "failed"
    assert said in failed["message"] and FIX.format("cart_rate") in failed["message"]
    assert failed["control"]["value"] is None and failed["comparison"]["relative"]["effect"] is None
    # the other team metric and the built-ins keep their numbers
    mobile = row(doc, "mobile_carts")
    assert mobile["status"] == "ok"
    assert (mobile["control"]["value"], mobile["treatment"]["value"]) == (1 / 2, 2 / 2)
    assert row(doc, "impressions_per_user")["status"] != "failed"
    (decision,) = doc["decisions"]
    assert decision["decision"] == "invalid"
    assert decision["reason"] == "could not compare cart_rate"  # why: in words, on its row

    listed = invoke(db, "metrics")
    assert listed.exit_code == 0 and "Traceback" not in listed.output
    line = next(x for x in listed.stdout.splitlines() if x.lstrip().startswith("cart_rate"))
    assert "failed" in line and said in line and FIX.format("cart_rate") in line
    as_json = json.loads(invoke(db, "metrics", "-f", "json").stdout)
    assert next(r for r in as_json if r["name"] == "cart_rate")["kind"] == "failed"

    text_report = invoke(db, "report", "-e", "shop", "--no-offline", "-f", "text")
    assert text_report.exit_code == 0, text_report.output
    shown = [x for x in text_report.stdout.splitlines() if x.lstrip().startswith("cart_rate")]
    assert shown and "(its recorded definition cannot be read: " in shown[0]
    assert "failed:" not in shown[0]  # the code stays in JSON; the row says why in words

    power = invoke(db, "power", "-e", "shop", "--metric", "cart_rate", "-f", "json")
    assert power.exit_code == 0, power.output
    (planned,) = json.loads(power.stdout)
    assert planned["needed_for_target"]["total_users"] is None
    for part in ("detectable", "needed_for_target"):
        assert (planned[part]["status"], planned[part]["message"]) == ("failed", failed["message"])
        assert planned[part]["mde_relative"] is None

    assert invoke(db, "metrics", "remove", "cart_rate").exit_code == 0
    assert "cart_rate" not in {r["metric"] for r in report(db)["metrics"]}


def test_a_filter_the_engine_refuses_fails_its_row(db: str) -> None:
    """An attribute text that is no JSON (written by another tool): the metric that
    filters on attributes fails, the one that does not has its numbers."""
    execute(db, "UPDATE events SET attributes = 'device=mobile' WHERE user_id = 'u3'")
    doc = report(db, "--primary", "cart_rate", "--guardrails", "mobile_carts")
    refused = row(doc, "mobile_carts")
    assert refused["status"] == "failed"
    assert refused["message"].startswith("the store refused its filter on the events (")
    assert FIX.format("mobile_carts") in refused["message"]
    rate = row(doc, "cart_rate")
    assert rate["status"] == "ok"
    assert (rate["control"]["value"], rate["treatment"]["value"]) == (1 / 2, 1 / 2)
    (decision,) = doc["decisions"]
    assert decision["decision"] != "invalid"
    page = invoke(db, "report", "-e", "shop", "--no-offline", "-o", "shop.html")
    assert page.exit_code == 0, page.output
    assert (
        "mobile_carts: the store refused its filter on the events" in Path("shop.html").read_text()
    )
