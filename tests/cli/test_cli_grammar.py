"""One grammar for every command (docs/usage.md#one-grammar): the walk below visits
every command and option of the click tree Typer builds, so a new option is
checked the day it is added. A bad value is a usage error: exit code 2 and one line
on stderr, ``Error: `` and the option's name, no validation library's words."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from abeval.cli import app
from abeval.cli.app import SECTIONS

runner = CliRunner()
ROOT: Any = typer.main.get_command(app)


def _commands(
    group: Any = ROOT, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield (*path, name), cmd
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


COMMANDS = dict(_commands())
LEAVES = {path: cmd for path, cmd in COMMANDS.items() if not hasattr(cmd, "commands")}

#: What each command needs besides the option under test (nothing is opened: the
#: store named does not exist, and every usage error comes first).
BASE: dict[tuple[str, ...], list[str]] = {
    ("report",): ["-e", "x"],
    ("evaluate",): ["-t", "truth.csv", "-r", "recs.csv"],
    ("forecast",): ["--offline-lift", "0.03", "--offline-se", "0.01"],
    ("ingest",): ["events.csv"],
    ("experiment", "set"): ["x", "--control", "a"],
    ("experiment", "show"): ["x"],
    ("experiment", "unset"): ["x", "--control"],
    ("source", "add"): ["n", "--table", "t"],
    ("source", "remove"): ["n"],
    ("power",): ["--baseline", "0.05", "--mde", "0.02"],
    ("program",): ["--history", "h.csv"],
}

#: A value that is a usage error for options whose type alone does not refuse one.
BAD_TEXT: dict[str, str] = {
    "--primary": "x@@",  # a name that is no identifier (an identifier may be recorded)
    "--secondary": "x@@",  # a name that is no identifier (an identifier may be recorded)
    "--guardrails": "x@@",  # a name that is no identifier (an identifier may be recorded)
    "--cap": "revenue_per_user=2",
    "--k": "0",
    "--from": "not-a-date",
    "--to": "not-a-date",
    "--fail-on": "nope",
    "--metric": "nope",
    "--metrics": "nope@x",
    "--map": "nope=x",
    "--event-type": "nope=x",
    "--attributes": "a=",
    "--experiment-column": " ",
    "--interleaving-of": " ",  # a name is looked up in the store; a blank one is no name
    "--table": None,  # checked against the store
    "--recommendations": "=",
    "--predictions": "=",
    "--signal": None,  # named against the history: a data error
    "--format": "pdf",
    "--owner": " ",
    "--hypothesis": " ",
    "--tag": "a;b",
    "--decided-on": "2026-13-01",
    "--since": "not-a-date",
    "--until": "not-a-date",
    "--prior": "bayes",
}

#: Options no value of which is a usage error: names looked up in the store or a
#: file, and paths (a missing file or store is a data error, exit code 1).
LOOKED_UP = {
    "--db",
    "--out",
    "--out-dir",
    "--truth",
    "--items",
    "--history",
    "--with-reports",
    "--per-user",
    "--target-propensities",
    "--control",
    "--segment",
    "--experiment",
    "--experiments",
    "--signal",
    "--split",  # checked against the experiment's arms
    "--table",  # checked against the store's database
}


def _options() -> Iterator[tuple[tuple[str, ...], str, str]]:
    for path, cmd in LEAVES.items():
        for param in cmd.params:
            if param.param_type_name != "option" or param.hidden or param.is_flag:
                continue
            name = next((o for o in param.opts if o.startswith("--")), param.opts[0])
            if name in LOOKED_UP:
                continue
            if path == ("forecast",) and name in ("--recommendations", "--k"):
                continue  # with a held-out evaluation: test_forecast_cli
            if path == ("program",) and name == "--primary":
                continue  # named against the history: a data error (test_program_cli)
            desc = param.type_descriptor
            if desc.is_choice or desc.annotation in (int, float):
                yield path, name, "junk"
            else:
                assert BAD_TEXT.get(name) is not None, f"{' '.join(path)} {name}: add a bad value"
                yield path, name, BAD_TEXT[name]


OPTIONS = list(_options())


@pytest.mark.parametrize(
    ("path", "option", "value"), OPTIONS, ids=[f"{' '.join(p)} {o}" for p, o, _ in OPTIONS]
)
def test_a_bad_value_is_one_line_naming_the_option(
    path: tuple[str, ...], option: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [*path, *BASE.get(path, []), option, value]
    if path not in (("demo",), ("evaluate",), ("program",)):  # evaluate: --db with -e
        args += ["--db", str(tmp_path / "none.duckdb")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    param = next(p for p in LEAVES[path].params if option in p.opts)
    assert any(o in lines[0] for o in param.opts), lines[0]
    for words in ("Value error", "Input should be", "Traceback", "Invalid value", "Usage:"):
        assert words not in result.stderr
    assert not (tmp_path / "none.duckdb").exists()


def test_the_walk_sees_every_command() -> None:
    # Typed and chosen options, and the text options with a known bad value.
    assert len(OPTIONS) > 60
    assert {("report",), ("evaluate",), ("experiment", "set"), ("source", "add")} <= set(LEAVES)


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_help_of_every_command(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: abeval " + " ".join(path) in result.stdout


def test_top_help_lists_the_sections_in_workflow_order_and_the_exit_codes() -> None:
    text = runner.invoke(app, ["--help"]).stdout
    titles = ["Load:", "Analyse:", "Offline:", "Across experiments:", "Plan:", "Store:"]
    at = [text.index(t) for t in titles]
    assert at == sorted(at)
    assert text.index("ingest") < text.index("report") < text.index("evaluate")
    assert text.index("agreement") < text.index("power") < text.index("migrate")
    placed = {name for _, names in SECTIONS for name in names}
    assert placed == set(ROOT.commands)  # every command in a section
    codes = text[text.index("Exit codes:") :]
    for code, meaning in (("1", "data"), ("2", "usage error"), ("3", "--fail-on")):
        assert any(
            line.split()[0] == code and meaning in line for line in codes.splitlines()[1:]
        ), codes


@pytest.mark.parametrize(
    "path",
    [p for p, c in LEAVES.items() if any(getattr(o, "name", "") == "fmt" for o in c.params)],
    ids=" ".join,
)
def test_every_format_is_dash_f_and_json_is_its_hidden_alias(path: tuple[str, ...]) -> None:
    params = {p.name: p for p in LEAVES[path].params}
    assert {"-f", "--format"} <= set(params["fmt"].opts)
    assert params["as_json"].opts == ["--json"] and params["as_json"].hidden
    assert "--json" not in runner.invoke(app, [*path, "--help"]).stdout


def test_json_is_format_json(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["migrate", "--db", db]).exit_code == 0
    by_alias = runner.invoke(app, ["experiments", "--db", db, "--json"])
    by_format = runner.invoke(app, ["experiments", "--db", db, "-f", "json"])
    assert by_alias.exit_code == by_format.exit_code == 0
    assert by_alias.stdout == by_format.stdout == "[]\n"


def test_experiment_is_dash_e_wherever_one_is_named() -> None:
    for path, cmd in LEAVES.items():
        for param in cmd.params:
            if "--experiment" in param.opts:
                assert "-e" in param.opts, path


def _raised_text(node: ast.AST) -> str:
    """The words of an error's strings, commands (in backticks or not) left out."""
    parts = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            parts.append(sub.value)
    text = re.sub(r"`[^`]*`", "", " ".join(parts))
    # A command written out (abeval evaluate --experiment) names its own options.
    return re.sub(r"\babeval [a-z]+(?: [a-z]+)?(?: -{1,2}[\w-]+(?: [\w=.]+)?)*", "", text)


def test_the_library_names_parameters_not_options() -> None:
    # Outside the CLI an error names the library's parameter ({input_format}); the
    # CLI spells it as its option. A command to run, in backticks, may name options.
    options = {o for cmd in LEAVES.values() for p in cmd.params for o in p.opts}
    options = {o for o in options if o.startswith("--") and o != "--help"}
    package = Path(__file__).parents[2] / "abeval"
    found = []
    for folder in ("store", "analysis", "metrics", "stats"):
        for path in sorted((package / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = getattr(node, "func", None)
                name = getattr(name, "id", getattr(name, "attr", ""))
                if isinstance(node, ast.Call) and str(name).endswith("Error"):
                    words = re.findall(r"(?<![\w`-])--[a-z][a-z-]*", _raised_text(node))
                    found += [f"{path.name}:{node.lineno} {w}" for w in words if w in options]
    assert found == []
