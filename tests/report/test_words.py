"""Words, not codes (issue 34 item 5): every status code a result can carry has a
sentence (abeval.report.words), and reports on degenerate experiments (a zero
baseline, zero variance, one user per arm, a guardrail that cannot be checked, a
team metric whose events have not arrived) show no code outside JSON and code."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import pkgutil
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from html_tree import Node, parse
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.metrics.registry import known_names
from abeval.report.words import STATUS_WORDS, said
from abeval.stats.ope_ranking import EstimatorName

runner = CliRunner()

CODE = re.compile(r"[a-z]+_[a-z_]+")
#: Where a result's code is stored: a field of one of these names, or a type alias
#: of a module whose name says it is a status.
CODE_FIELDS = re.compile(r"(^|_)(status|reason|state|evidence|origin)$")
CODE_ALIASES = re.compile(r"(Status|Reason|State|StatusWord|Evidence)$")


def _literal_values(hint: Any) -> set[str]:
    """The string values of a Literal, or of every Literal in a union."""
    if typing.get_origin(hint) is typing.Literal:
        return {v for v in typing.get_args(hint) if isinstance(v, str)}
    return {v for arg in typing.get_args(hint) for v in _literal_values(arg)}


def _hint(annotation: Any, module: Any) -> Any:
    """A field's annotation evaluated in its module (None where it names a type
    imported only for type checking: not a Literal)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, {**vars(typing), **vars(module)})
    except (NameError, TypeError):
        return None


def _modules() -> list[Any]:
    names = [m.name for m in pkgutil.walk_packages(abeval.__path__, "abeval.")]
    wanted = ("abeval.stats", "abeval.analysis", "abeval.metrics")
    return [importlib.import_module(n) for n in names if n.startswith(wanted)]


def result_codes() -> dict[str, set[str]]:
    """Every code a result can carry: the values of the ``Literal`` types of its
    status-like fields and of the modules' status aliases, by where they come from."""
    found: dict[str, set[str]] = {}
    for module in _modules():
        for name, value in vars(module).items():
            if CODE_ALIASES.search(name) and _literal_values(value):
                found[f"{module.__name__}.{name}"] = _literal_values(value)
            if not (isinstance(value, type) and dataclasses.is_dataclass(value)):
                continue
            if value.__module__ != module.__name__:
                continue
            for f in dataclasses.fields(value):
                codes = _literal_values(_hint(f.type, module))
                if CODE_FIELDS.search(f.name) and codes:
                    found[f"{module.__name__}.{name}.{f.name}"] = codes
    # A team metric's row waiting for its events (a plain ``str`` status).
    found["abeval.analysis.comparisons.no_events"] = {"no_events"}
    return found


def test_the_walk_finds_the_known_codes() -> None:
    """The walk is not vacuous: it reaches the comparisons', the off-policy
    section's and the forecast's codes."""
    every = set().union(*result_codes().values())
    assert {"zero_baseline", "personalised_target", "noise_only", "no_events"} <= every
    assert {"too_few_experiments", "ceiling_too_small", "other_baseline"} <= every


@pytest.mark.parametrize("where", sorted(result_codes()))
def test_every_code_has_a_sentence(where: str) -> None:
    for code in sorted(result_codes()[where] - {""}):  # "": no code (no reason)
        assert code in STATUS_WORDS, f"{where}: {code!r} has no sentence in abeval.report.words"
        sentence = said(code)
        assert sentence and not codes_in(sentence), (code, sentence)


def test_a_message_says_more_than_the_code() -> None:
    assert said("zero_baseline", "control mean is 0") == "control mean is 0"
    assert said("zero_baseline") == "the control's value is 0, so there is no relative lift"
    assert said("some_new_code") == "some new code"


# --- Reports on degenerate experiments -------------------------------------------

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,device"


def _user(rows: list[list[str]], exp: str, arm: str, user: str, **n: int) -> None:
    """One exposed user with ``impressions`` (one request), ``clicks`` and
    ``purchases`` of value 5."""

    def event(minute: int, kind: str, item: str = "", position: str = "", value: str = "") -> None:
        ts = f"2024-05-01T08:0{minute}:00"
        request = f"r{user}" if kind != "exposure" else ""
        rows.append([exp, arm, user, ts, kind, request, item, position, value, "mobile"])

    event(0, "exposure")
    for i in range(n.get("impressions", 1)):
        event(1, "impression", f"i{i}", str(i + 1))
    for i in range(n.get("clicks", 0)):
        event(2, "click", f"i{i}")
    for _ in range(n.get("purchases", 0)):
        event(3, "purchase", "i0", value="5")


def degenerate_events() -> list[list[str]]:
    """``zb``: no control user buys (a zero baseline for conversion and revenue);
    ``zv``: every user has two impressions and one click (zero variance); ``tiny``:
    one user per arm."""
    rows: list[list[str]] = []
    for k in range(30):
        _user(rows, "zb", "control", f"zc{k}", impressions=2, clicks=k % 2)
        _user(rows, "zb", "treatment", f"zt{k}", impressions=2, clicks=int(k % 3 == 0),
              purchases=int(k % 4 == 0))  # fmt: skip
    for k in range(20):
        _user(rows, "zv", "control", f"vc{k}", impressions=2, clicks=1)
        _user(rows, "zv", "treatment", f"vt{k}", impressions=2, clicks=1)
    _user(rows, "tiny", "control", "tc0", impressions=1, clicks=1)
    _user(rows, "tiny", "treatment", "tt0", impressions=2)
    return rows


@pytest.fixture(scope="module")
def degenerate_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The three experiments, and a team metric over ``add_to_cart`` events that have
    not arrived."""
    tmp = tmp_path_factory.mktemp("degenerate")
    with (tmp / "events.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER.split(","))
        writer.writerows(degenerate_events())
    db = str(tmp / "s.duckdb")
    done = runner.invoke(app, ["ingest", str(tmp / "events.csv"), "--db", db, "-q"])
    assert done.exit_code == 0, done.output
    (tmp / "m.toml").write_text('[cart_rate]\nkind = "proportion"\nevent = "add_to_cart"\n')
    done = runner.invoke(app, ["metrics", "add", str(tmp / "m.toml"), "--db", db])
    assert done.exit_code == 0, done.output
    return db


#: Names a page may show with underscores: metrics (online, team and offline),
#: estimators, event types and the columns of an input file; and option names
#: written ``name=value``.
NAMES = {
    *known_names(),
    *typing.get_args(EstimatorName),
    "revenue_per_user",
    "clicks_per_user",
    "purchases_per_user",
    "impressions_per_user",
    "average_order_value",
    "cart_rate",
    "add_to_cart",
    "propensity_given_above",
    "probability_given_above",
}


def codes_in(text: str) -> list[str]:
    """The underscore codes of ``text`` that are not a name of :data:`NAMES`, an
    option written ``name=`` or something quoted as code in backticks."""
    text = re.sub(r"`[^`]*`", "", text)
    found = []
    for m in CODE.finditer(text):
        start = m.start()
        while start and re.match(r"[\w@]", text[start - 1]):
            start -= 1
        end = m.end()
        while end < len(text) and re.match(r"[\w]", text[end]):
            end += 1
        word = text[start:end].split("@")[0]
        after, before = text[end : end + 1], text[start - 1 : start]
        # a name, an option (name=), a file (name.csv, dir/name) or a formula's se_x²
        file = (after == "." and text[end + 1 : end + 2].isalpha()) or before == "/"
        if word in NAMES or after == "=" or word.endswith("²") or file:
            continue
        found.append(text[max(0, start - 40) : end + 40])
    return found


def visible_text(doc: Node) -> str:
    """The page's text a reader sees: not its scripts, styles, JSON or code."""
    hidden = {"script", "style", "code", "pre", "template"}

    def walk(node: Node) -> str:
        if node.tag in hidden:
            return ""
        return " ".join(c if isinstance(c, str) else walk(c) for c in node.children)

    return walk(doc)


OPTIONS = ["--primary", "conversion,ctr,cart_rate", "--guardrails", "revenue_per_user"]


@pytest.mark.parametrize("experiment", ["zb", "zv", "tiny"])
def test_no_code_in_text_or_html(degenerate_store: str, experiment: str, tmp_path: Path) -> None:
    base = ["report", "-e", experiment, "--db", degenerate_store, *OPTIONS]
    text = runner.invoke(app, [*base, "-f", "text"])
    assert text.exit_code == 0, text.output
    assert codes_in(text.stdout) == []
    page = tmp_path / "r.html"
    done = runner.invoke(app, [*base, "-f", "html", "-o", str(page)])
    assert done.exit_code == 0, done.output
    assert codes_in(visible_text(parse(page.read_text()))) == []


def test_the_scan_sees_a_code() -> None:
    """The scan is not vacuous: a code in a line is found, names and options are not."""
    assert codes_in("could not compare Conversion (zero_baseline)")
    assert not codes_in("hit_rate@10 and cart_rate, empty=skip, `abeval experiment set x`")


def test_decisions_say_why_in_words(degenerate_store: str) -> None:
    text = runner.invoke(
        app, ["report", "-e", "zb", "--db", degenerate_store, "-f", "text", *OPTIONS]
    ).stdout
    first = text.splitlines()[0]
    assert first == (
        "DECISION treatment: INVALID: could not compare Conversion (Conversion: the "
        "control's value is 0, so there is no relative lift)"
    )
    assert "guardrail Revenue per user: could not be checked: the control's value is 0" in text


def test_a_primary_without_events_waits(degenerate_store: str) -> None:
    """A primary team metric whose events have not arrived keeps the test running
    (issue 35 item 6), in the decision and in its verdict; JSON keeps the code."""
    base = ["report", "-e", "zv", "--db", degenerate_store, "--primary", "cart_rate"]
    text = runner.invoke(app, [*base, "-f", "text"]).stdout
    assert text.splitlines()[0] == (
        "DECISION treatment: KEEP RUNNING: no events of type add_to_cart yet"
    )
    assert "VERDICT cart_rate (treatment): KEEP RUNNING: no events of type add_to_cart yet" in text
    import json

    doc = json.loads(runner.invoke(app, [*base, "-f", "json"]).stdout)
    (decision,) = doc["decisions"]
    assert decision["decision"] == "keep_running"
    assert decision["primaries"][0]["status"] == "no_events"
