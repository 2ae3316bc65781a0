"""``abeval metrics`` and ``abeval metrics add FILE`` on a small store: exit codes,
exact messages, and what the store holds after each command (nothing recorded
when any definition of the file is wrong)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ingest_store import query
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

EVENTS = """\
experiment,arm,user_id,ts,event_type,value,device
shop,control,u1,2024-05-01T08:00:00,exposure,,mobile
shop,control,u1,2024-05-01T08:05:00,add_to_cart,12.5,mobile
shop,control,u2,2024-05-01T08:00:00,exposure,,desktop
shop,treatment,u3,2024-05-01T09:00:00,exposure,,mobile
shop,treatment,u3,2024-05-01T09:01:00,Add_To_Cart,30,mobile
shop,treatment,u3,2024-05-01T09:02:00,add_to_cart,10,mobile
shop,treatment,u4,2024-05-01T09:00:00,exposure,,desktop
shop,treatment,u4,2024-05-01T09:03:00,play,120,desktop
"""
GOOD = """\
[cart_rate]
kind = "proportion"
event = "add_to_cart"
description = "share of users who add to cart"

[value_per_cart]
kind = "ratio"
numerator = { event = "add_to_cart", value = "sum" }
denominator = { event = "add_to_cart" }
where = { device = "mobile" }
"""
TEAM = (
    "expected one of exposure, impression, click, purchase, rating, or a lower-case "
    "identifier (letters, digits and _, at most 64 characters) for a team-defined metric"
)


def invoke(*args: str) -> Any:
    return runner.invoke(app, [*args, "--db", "s.duckdb"])


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABEVAL_DB", raising=False)
    (tmp_path / "events.csv").write_text(EVENTS)
    assert invoke("ingest", "events.csv").exit_code == 0
    return tmp_path / "s.duckdb"


def recorded(db: Path) -> list[tuple[str, dict[str, Any], str]]:
    rows = query(db, "SELECT name, definition, source FROM metric_definitions ORDER BY name")
    return [(r[0], json.loads(r[1]), r[2]) for r in rows]


def test_ingest_keeps_a_team_event_type_lower_cased(store: Path) -> None:
    types = query(store, "SELECT event_type, COUNT(*) FROM events GROUP BY 1 ORDER BY 1")
    assert types == [("add_to_cart", 3), ("exposure", 4), ("play", 1)]


def test_ingest_refuses_an_event_type_that_is_no_identifier(store: Path) -> None:
    Path("bad.csv").write_text(
        "experiment,arm,user_id,ts,event_type\nshop,control,u9,2024-05-01,add-to-cart\n"
    )
    result = invoke("ingest", "bad.csv")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(
        f"Error: bad.csv:2:event_type: unknown event_type 'add-to-cart'; {TEAM} (1 bad row;"
    )


def test_add_records_and_lists(store: Path) -> None:
    Path("metrics.toml").write_text(GOOD)
    result = invoke("metrics", "add", "metrics.toml")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "recorded 2 metrics from metrics.toml: cart_rate, value_per_cart\n"
    assert recorded(store) == [
        (
            "cart_rate",
            {
                "kind": "proportion",
                "numerator": {"event": "add_to_cart", "value": False},
                "denominator": None,
                "where": {},
                "lower_is_better": False,
                "cap": None,
                "description": "share of users who add to cart",
            },
            "metrics.toml",
        ),
        (
            "value_per_cart",
            {
                "kind": "ratio",
                "numerator": {"event": "add_to_cart", "value": True},
                "denominator": {"event": "add_to_cart", "value": False},
                "where": {"device": "mobile"},
                "lower_is_better": False,
                "cap": None,
                "description": "",
            },
            "metrics.toml",
        ),
    ]
    listing = invoke("metrics")
    assert listing.exit_code == 0
    lines = listing.stdout.splitlines()
    assert lines[0] == "built-in"
    assert lines[1] == (
        "  ctr                   ratio       Σ clicks / Σ impressions over users (delta method)"
    )
    assert lines[8:10] == [
        "recorded (team-defined)",
        "  cart_rate             proportion  share of users with at least one add_to_cart event",
    ]
    assert lines[10].startswith(
        "                                    share of users who add to cart; from metrics.toml, "
    )
    assert lines[11] == (
        "  value_per_cart        ratio       Σ value of add_to_cart / count of add_to_cart "
        "over users, device = 'mobile' (delta method)"
    )
    rows = json.loads(invoke("metrics", "-f", "json").stdout)
    assert [r["name"] for r in rows] == [
        *("ctr", "conversion", "revenue_per_user", "clicks_per_user", "purchases_per_user"),
        *("impressions_per_user", "aov", "cart_rate", "value_per_cart"),
    ]
    assert rows[-1]["recorded"] == recorded(store)[1][1]
    assert (rows[-1]["builtin"], rows[0]["builtin"]) == (False, True)
    assert (rows[0]["label"], rows[0]["description"], rows[7]["description"]) == (
        "CTR",
        "",
        "share of users who add to cart",
    )


def test_add_again_replaces_the_definition(store: Path) -> None:
    Path("metrics.toml").write_text(GOOD)
    assert invoke("metrics", "add", "metrics.toml").exit_code == 0
    Path("more.toml").write_text('[cart_rate]\nkind = "mean"\nevent = "play"\n')
    result = invoke("metrics", "add", "more.toml")
    assert result.stdout == (
        "recorded 1 metric from more.toml: cart_rate\n"
        "replaced the earlier definitions of cart_rate\n"
    )
    assert [(n, d["kind"], s) for n, d, s in recorded(store)] == [
        ("cart_rate", "mean", "more.toml"),
        ("value_per_cart", "ratio", "metrics.toml"),
    ]


BAD = [
    (
        '[a]\nkind = proportion\nevent = "add_to_cart"\n',
        "bad.toml:2:8: not valid TOML: invalid value; write each setting as key = value, text "
        "in double quotes, one [metric_name] table per metric",
    ),
    (
        '[ctr]\nkind = "mean"\nevent = "add_to_cart"\n',
        "bad.toml:1: [ctr] is a built-in metric; give the team metric another name",
    ),
    (
        '[a]\nkind = "avg"\nevent = "add_to_cart"\n',
        "bad.toml:2: [a] kind 'avg' is not a kind of metric; "
        'write kind = "proportion", "mean" or "ratio"',
    ),
    (
        '[a]\nevent = "add_to_cart"\n',
        'bad.toml:1: [a] needs kind = "proportion", "mean" or "ratio"',
    ),
    ('[a]\nkind = "mean"\n', 'bad.toml:1: [a] needs event = "EVENT_TYPE" (kind "mean")'),
    (
        '[a]\nkind = "mean"\nevnt = "add_to_cart"\n',
        "bad.toml:3: [a] has no setting 'evnt'; did you mean event? settings: kind, event, "
        "value, numerator, denominator, where, lower_is_better, cap, description",
    ),
    (
        '[a]\nkind = "mean"\nevent = "play"\nvalue = "total"\n',
        'bad.toml:4: [a] value must be "sum" (the sum of the events\' value) or left out '
        "(a count of events), got 'total'",
    ),
    (
        '[a]\nkind = "ratio"\nnumerator = { event = "play" }\n',
        'bad.toml:1: [a] a ratio needs denominator = { event = "EVENT_TYPE" } '
        '(add value = "sum" to sum the events\' value)',
    ),
    (
        '[Carts]\nkind = "mean"\nevent = "play"\n',
        "bad.toml:1: metric name 'Carts' must be a lower-case identifier (letters, digits and "
        "_, at most 64 characters)",
    ),
    (
        '[a]\nkind = "mean"\nevent = "play"\ncap = 1.5\n',
        "bad.toml:4: [a] cap is the quantile the per-user value is capped at, between 0 and 1 "
        "(such as 0.99); got 1.5",
    ),
    ("", "bad.toml:1: no metric defined; add a table such as [add_to_cart_rate]"),
    # the first metric is good, the second is not: neither is recorded
    (
        GOOD + '\n[b]\nkind = "proportion"\nevent = "play"\nvalue = "sum"\n',
        "bad.toml:15: [b] a proportion counts users with an event and takes no value; "
        'use kind = "mean" with value = "sum" for the sum of values',
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_file_records_nothing(store: Path, text: str, message: str) -> None:
    Path("bad.toml").write_text(text)
    result = invoke("metrics", "add", "bad.toml")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert recorded(store) == []


def test_a_missing_file_and_a_missing_argument(store: Path) -> None:
    result = invoke("metrics", "add", "nope.toml")
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: nope.toml: no such file; give the path of a metrics file (TOML)\n",
    )
    assert runner.invoke(app, ["metrics", "add"]).exit_code == 2
    assert recorded(store) == []


def test_report_takes_a_recorded_metric_and_names_a_misspelt_one(store: Path) -> None:
    Path("metrics.toml").write_text(GOOD)
    assert invoke("metrics", "add", "metrics.toml").exit_code == 0
    result = invoke("report", "-e", "shop", "-f", "json", "--primary", "cart_rate", "--no-offline")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    rate = next(m for m in doc["metrics"] if m["metric"] == "cart_rate")
    assert (rate["role"], rate["control"]["value"], rate["treatment"]["value"]) == (
        "primary",
        0.5,
        0.5,
    )
    ratio = next(m for m in doc["metrics"] if m["metric"] == "value_per_cart")
    assert (ratio["control"]["value"], ratio["treatment"]["value"]) == (12.5, 20.0)
    wrong = invoke("report", "-e", "shop", "-f", "json", "--primary", "cart_rat")
    assert wrong.exit_code == 2
    assert wrong.stderr == (
        "Error: --primary 'cart_rat': unknown metric 'cart_rat'; did you mean cart_rate or ctr? "
        "known: ctr, conversion, revenue_per_user, clicks_per_user, purchases_per_user, "
        "impressions_per_user, aov, cart_rate, value_per_cart\n"
    )


def test_experiment_set_takes_a_recorded_guardrail(store: Path) -> None:
    Path("metrics.toml").write_text(GOOD)
    assert invoke("metrics", "add", "metrics.toml").exit_code == 0
    assert invoke("experiment", "set", "shop", "--guardrails", "cart_rate:2%").exit_code == 0
    wrong = invoke("experiment", "set", "shop", "--guardrails", "cart_rat")
    assert wrong.exit_code == 2
    assert "did you mean cart_rate or ctr?" in wrong.stderr


def test_ingest_warns_of_a_team_type_that_looks_like_a_builtin(store: Path) -> None:
    Path("typo.csv").write_text(
        "experiment,arm,user_id,ts,event_type\nshop,control,u9,2024-05-01,clik\n"
    )
    result = invoke("ingest", "typo.csv")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[1:] == [
        "Warning: event type 'clik' is not built in and is kept as a team's own type "
        "(docs/metrics.md#team-defined-metrics); did you mean click? fix the files if so"
    ]
    assert query(store, "SELECT COUNT(*) FROM events WHERE event_type = 'clik'") == [(1,)]


def _shown(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["metrics"] if m["metric"] == name)


def test_a_metric_before_its_events(store: Path) -> None:
    """Metrics may be set up before launch: ``metrics add`` records a metric over an
    event type no row has yet with a warning, the report's row says there are no
    such events yet, and once they are ingested the row has the numbers."""
    Path("early.toml").write_text(
        '[checkout_rate]\nkind = "proportion"\nevent = "checkout"\n\n'
        '[checkouts_per_user]\nkind = "mean"\nevent = "checkout"\n\n'
        '[typo_rate]\nkind = "proportion"\nevent = "add_to_crt"\n'
    )
    added = invoke("metrics", "add", "early.toml")
    assert added.exit_code == 0
    assert added.stdout == (
        "recorded 3 metrics from early.toml: checkout_rate, checkouts_per_user, typo_rate\n"
    )
    assert added.stderr.splitlines() == [
        "Warning: [checkout_rate] no ingested row has event type 'checkout' yet; "
        "the metric will count them once they arrive",
        "Warning: [checkouts_per_user] no ingested row has event type 'checkout' yet; "
        "the metric will count them once they arrive",
        "Warning: [typo_rate] no ingested row has event type 'add_to_crt' yet; "
        "the metric will count them once they arrive (did you mean add_to_cart?)",
    ]
    assert [name for name, _, _ in recorded(store)] == [
        "checkout_rate",
        "checkouts_per_user",
        "typo_rate",
    ]

    before = invoke("report", "-e", "shop", "-f", "json", "--no-offline")
    assert before.exit_code == 0, before.stderr
    doc = json.loads(before.stdout)
    for name in ("checkout_rate", "checkouts_per_user"):
        row = _shown(doc, name)
        assert (row["status"], row["message"]) == ("no_events", "no events of type checkout yet")
    assert _shown(doc, "ctr")["status"] != "no_events"
    text = invoke("report", "-e", "shop", "-f", "text", "--no-offline")
    assert text.exit_code == 0, text.stderr
    rows = [line for line in text.stdout.splitlines() if "checkout_rate" in line]
    assert rows and rows[0].endswith("(no events of type checkout yet)")  # words, not the code
    assert invoke("report", "-e", "shop", "--no-offline", "-o", "shop.html").exit_code == 0
    page = Path("shop.html").read_text()
    assert (
        '<tr class="row-message"><td colspan="9">checkout_rate: no events of type checkout yet'
        in page
    )

    # u1 and u3 check out (u3 twice), u2 and u4 do not: control 1 of 2, treatment 1 of 2.
    Path("later.csv").write_text(
        "experiment,arm,user_id,ts,event_type\n"
        "shop,control,u1,2024-05-01T08:10:00,checkout\n"
        "shop,treatment,u3,2024-05-01T09:05:00,checkout\n"
        "shop,treatment,u3,2024-05-01T09:06:00,checkout\n"
    )
    assert invoke("ingest", "later.csv").exit_code == 0
    after = json.loads(invoke("report", "-e", "shop", "-f", "json", "--no-offline").stdout)
    rate, per_user = _shown(after, "checkout_rate"), _shown(after, "checkouts_per_user")
    assert rate["status"] != "no_events" and per_user["status"] != "no_events"
    assert (rate["control"]["value"], rate["treatment"]["value"]) == (1 / 2, 1 / 2)
    assert (per_user["control"]["value"], per_user["treatment"]["value"]) == (1 / 2, 2 / 2)
    assert _shown(after, "typo_rate")["message"] == "no events of type add_to_crt yet"
