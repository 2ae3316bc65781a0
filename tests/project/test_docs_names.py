"""Every name README.md and docs/*.md use exists: each ``abeval COMMAND [SUBCOMMAND]``
and its options are in the command tree Typer builds, each ``--option`` named in the
text is some command's, each offline metric written ``name@K`` parses, and each JSON
key a ``<!-- doctest: json-keys SCHEMA -->`` paragraph cites is in that schema."""

from __future__ import annotations

import importlib
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from doc_blocks import DOCS, ROOT, json_key_paragraphs

from abeval.cli import app
from abeval.errors import AbevalError
from abeval.metrics.registry import parse_metric

TREE: Any = typer.main.get_command(app)
_FENCED = re.compile(r"^\s*```.*?^\s*```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")


def _all_options(command: Any) -> set[str]:
    out: set[str] = set()
    for param in command.params:
        out.update(param.opts)
        out.update(param.secondary_opts)
    for sub in getattr(command, "commands", {}).values():
        out |= _all_options(sub)
    return out


EVERY_OPTION = _all_options(TREE) | {"--help"}
#: Options the docs name of other programs than abeval, and the file that has each.
OTHERS = {"--growth": ROOT / "benchmarks" / "bench_report.py"}


def _command_texts(doc: Path) -> Iterator[str]:
    """The abeval command lines of a document: in fenced blocks (with or without
    ``$``) and in inline code spans that start with ``abeval``."""
    text = doc.read_text(encoding="utf-8")
    for block in _FENCED.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            found = re.search(r"(?:^|\$ |\| |: )(abeval [a-z-][^#]*)", line.strip())
            if found and not line.strip().startswith(("Error", "DECISION", "control ")):
                yield found.group(1).strip()
    outside = _FENCED.sub("", text).replace("\n", " ")
    for span in _SPAN.findall(outside):
        if span.startswith("abeval "):
            yield span


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _check(text: str) -> list[str]:
    words = _words(text)[1:]
    command, path = TREE, ["abeval"]
    while words and hasattr(command, "commands") and not words[0].startswith("-"):
        name = words.pop(0)
        if name not in command.commands:
            if len(path) > 1 and command.invoke_without_command:
                break  # a group that also runs alone (``abeval metrics``) takes no word
            return [f"{' '.join(path)} has no command {name!r}"]
        command = command.commands[name]
        path.append(name)
    opts = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    problems = []
    for word in words:
        option = word.split("=", 1)[0]
        if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in opts:
            problems.append(f"{' '.join(path)} has no option {option}")
    return problems


def _commands() -> list[tuple[str, str]]:
    return [(d.name, t) for d in DOCS for t in _command_texts(d)]


def test_every_command_the_docs_show_exists() -> None:
    commands = _commands()
    assert len(commands) > 50
    problems = [f"{doc}: `{text}`: {p}" for doc, text in commands for p in _check(text)]
    assert problems == []


def test_every_option_the_docs_name_exists() -> None:
    problems = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for option in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))):
            if option in OTHERS:
                assert f'"{option}"' in OTHERS[option].read_text(encoding="utf-8"), option
            elif option not in EVERY_OPTION:
                problems.append(f"{doc.name}: {option}")
    assert problems == []


def test_every_offline_metric_the_docs_name_parses() -> None:
    names = set()
    for doc in DOCS:
        for span in _SPAN.findall(doc.read_text(encoding="utf-8")):
            names.update(re.findall(r"^([A-Za-z_]+@(?:\d+|K|k|all))$", span))
    assert {"ndcg@10", "success@K"} <= names
    problems = []
    for name in sorted(names):
        try:
            parse_metric(re.sub(r"@[Kk]$", "@10", name))
        except AbevalError as error:
            problems.append(f"{name}: {error}")
    assert problems == []


_DOTTED = re.compile(r"^abeval(?:\.[A-Za-z_]\w*)+")


def _is_module(name: str) -> bool:
    where = ROOT.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def dotted_name_exists(name: str) -> bool:
    """Whether ``abeval.a.b.C.d`` is a module of abeval/ (found as a file, so that
    ``abeval.__main__`` is not run) or an attribute path from the longest one."""
    parts = name.split(".")
    at = next(i for i in range(len(parts), 0, -1) if _is_module(".".join(parts[:i])))
    value: Any = None if at == len(parts) else importlib.import_module(".".join(parts[:at]))
    for attribute in parts[at:]:
        if not hasattr(value, attribute):
            return False
        value = getattr(value, attribute)
    return True


def test_every_dotted_name_the_docs_write_exists() -> None:
    # the walkthroughs of docs/architecture.md name modules, classes and functions
    names = set()
    for doc in DOCS:
        for span in _SPAN.findall(doc.read_text(encoding="utf-8")):
            names.update(_DOTTED.findall(span))
    assert "abeval.stats.forecast.predict" in names and "abeval.api.store.Store" in names
    assert sorted(n for n in names if not dotted_name_exists(n)) == []


@pytest.mark.parametrize(
    ("name", "exists"),
    [
        ("abeval.stats.forecast", True),
        ("abeval.__main__", True),
        ("abeval.analysis.forecast.ForecastOptions.signal", True),
        ("abeval.stats.RatioStats", True),
        ("abeval.api.session", False),
        ("abeval.analysis.forecast.build_forecasts", False),
        ("abeval.stats.forecast.Forecast.interval_width", False),
    ],
)
def test_a_dotted_name_is_found_or_not(name: str, exists: bool) -> None:
    assert dotted_name_exists(name) is exists


def _schema_words(schema: Any) -> set[str]:
    """The property names and the enumerated values of a JSON schema."""
    out: set[str] = set()
    if isinstance(schema, dict):
        out.update(schema.get("properties", {}))
        out.update(str(v) for v in schema.get("enum", []) if isinstance(v, str))
        if isinstance(schema.get("const"), str):
            out.add(schema["const"])
        for value in schema.values():
            out |= _schema_words(value)
    elif isinstance(schema, list):
        for value in schema:
            out |= _schema_words(value)
    return out


def _schema_paragraphs() -> Iterator[tuple[str, Path, set[str]]]:
    for doc in DOCS:
        for source, cited in json_key_paragraphs(doc):
            if not source.startswith("$ "):  # a command's: tests/project/test_docs_run.py
                yield doc.name, ROOT / source, cited


@pytest.mark.parametrize(("doc", "schema", "cited"), list(_schema_paragraphs()))
def test_every_json_key_the_docs_cite_is_in_the_schema(
    doc: str, schema: Path, cited: set[str]
) -> None:
    words = _schema_words(json.loads(schema.read_text(encoding="utf-8")))
    assert cited, f"{doc}: the json-keys paragraph cites no key"
    assert sorted(cited - words) == []
