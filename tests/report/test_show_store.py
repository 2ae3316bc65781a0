"""A shared page names the store only by its kind unless ``--show-store`` (issue 34
item 5): the report, the agreement board and the forecast; the JSON keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest
from agreement_store import build_store
from typer.testing import CliRunner

from abeval import render
from abeval.cli import app
from abeval.errors import OptionError
from abeval.report.words import history_shown, store_kind, store_shown

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_store(tmp_path_factory.mktemp("show-store"), users=400)


COMMANDS = {
    "report": ["report", "-e", "exp-c", "--no-ope", "--no-offline"],
    "agreement": ["agreement"],
    "forecast": ["forecast", "--offline-lift", "0.03", "--offline-se", "0.01", "-f", "html"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_page_names_the_store_only_when_asked(db: str, command: str, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    base = [*COMMANDS[command], "--db", db, "-o", str(page)]
    done = runner.invoke(app, base)
    assert done.exit_code == 0, done.output
    shared = page.read_text()
    assert "DuckDB store" in shared
    assert db not in shared and Path(db).name not in shared
    done = runner.invoke(app, [*base, "--show-store"])
    assert done.exit_code == 0, done.output
    assert db in page.read_text()


def test_the_json_keeps_the_store(db: str) -> None:
    done = runner.invoke(app, [*COMMANDS["report"], "--db", db, "-f", "json"])
    assert db in done.stdout


def test_show_store_is_checked_by_the_library(db: str) -> None:
    import abeval

    with abeval.open(db, read_only=True) as store:
        result = store.report("exp-c", ope=False, offline=False)
    with pytest.raises(OptionError) as e:
        render.html(result, show_store="yes")
    assert e.value.parameter == "show_store"
    assert db in render.html(result, show_store=True)


@pytest.mark.parametrize(
    ("display", "kind"),
    [
        ("demo/demo.duckdb", "DuckDB store"),
        ("duckdb:///tmp/x.duckdb", "DuckDB store"),
        ("postgresql+psycopg://abeval:***@db:5432/ab", "PostgreSQL store"),
        ("sqlite:///x.db", "SQLite store"),
        ("sc://spark:15002", "Spark store"),
    ],
)
def test_the_kind_of_a_store(display: str, kind: str) -> None:
    assert store_kind(display) == kind
    assert store_shown(display, False) == kind
    assert store_shown(display, True) == display


def test_a_history_file_is_named() -> None:
    assert store_shown("history file past.csv", False) == "history file past.csv"
    assert history_shown("past.csv", False) == "past.csv"
    assert history_shown("the store /home/me/ab.duckdb", False) == "the DuckDB store"


# --- Long diagnostics folded (the same store: its experiments carry off-policy logs) --


def test_off_policy_weights_fold_under_one_line(db: str, tmp_path: Path) -> None:
    """Each direction's weights read as one line (the lowest ESS share of any
    position, the largest weight), the positions only with --verbose in text and in
    a <details> on the page."""
    import json

    from html_tree import parse

    from abeval.formatting import fixed, share

    base = ["report", "-e", "exp-c", "--no-offline", "--db", db]
    doc = json.loads(runner.invoke(app, [*base, "-f", "json"]).stdout)
    lines = []
    for d in doc["ope"]["directions"]:
        positions = d["positions"]
        assert positions
        lowest = min(p["ess_share"] for p in positions)
        largest = max([d["diagnostics"]["max_weight"]] + [p["max_weight"] for p in positions])
        lines.append(
            f"weights: ESS at least {share(lowest)} of N at every position; "
            f"largest weight {fixed(largest, 1)}"
        )
    text = runner.invoke(app, [*base, "-f", "text"]).stdout
    assert [line.strip() for line in text.splitlines() if "weights: ESS" in line] == [
        f"{line} (each position's weights: --verbose)" for line in lines
    ]
    assert "position 1:" not in text
    verbose = runner.invoke(app, [*base, "-f", "text", "--verbose"]).stdout
    assert verbose.count("      position 1:") == len(lines)
    page = tmp_path / "r.html"
    assert runner.invoke(app, [*base, "-o", str(page)]).exit_code == 0
    folds = [
        d
        for d in parse(page.read_text()).find_all("details")
        if d.find_all("table", class_="ope-weights")
    ]
    assert [d.find("summary").clean() for d in folds] == [f"{line} — details" for line in lines]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_code_on_the_board_forecast_or_report(db: str, command: str, tmp_path: Path) -> None:
    """Words, not codes (tests/report/test_words.py) on the other pages and their text."""
    from html_tree import parse
    from test_words import codes_in, visible_text

    page = tmp_path / "page.html"
    args = [a for a in COMMANDS[command] if a not in ("-f", "html")]
    done = runner.invoke(app, [*args, "--db", db, "-f", "html", "-o", str(page)])
    assert done.exit_code == 0, done.output
    assert codes_in(visible_text(parse(page.read_text()))) == []
    text = runner.invoke(app, [*args, "--db", db, "-f", "text"])
    assert text.exit_code == 0, text.output
    assert codes_in(text.stdout) == []
