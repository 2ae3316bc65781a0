"""The shell sessions of README.md and docs/*.md print what the docs show.

Each ``$ abeval ...`` line is run (in-process, in a fresh folder per document, in
the order the document gives them) and its output compared with the lines shown
under it, numbers included, by the rule at the top of docs/usage.md
(tests/doc_blocks.py). ``$ cat FILE`` shows a file the next commands read: the test
writes it from the lines shown. Sessions that name the demo's folder (``demo/``) run
on a full ``abeval demo`` (about a minute): they are marked slow.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from doc_blocks import (
    DOCS,
    ROOT,
    Command,
    Session,
    all_sessions,
    json_key_paragraphs,
    json_words,
    mismatch,
    same_line,
    sessions,
)
from typer.testing import CliRunner

from abeval.cli import app

EXAMPLES = ROOT / "docs" / "examples"
#: A time the docs show matches one within the test run: the demo's recordings too.
STARTED = datetime.now(UTC)
runner = CliRunner()


def _runnable(command: Command) -> bool:
    argv = command.argv
    if argv[:1] == ["abeval"]:
        return True
    if argv[:1] == ["cat"] and len(argv) == 2:
        return True
    return argv[:1] == ["cat"] and argv[2:4] == ["|", "abeval"]


def test_every_session_runs_or_says_why() -> None:
    """A session the test cannot run is marked ``<!-- doctest: skip REASON -->``
    with its reason; every command of the others is one the test runs (``abeval``,
    ``cat FILE``, ``cat FILE | abeval``)."""
    problems = []
    for s in all_sessions():
        if s.marker not in ("", "skip", "json-part"):
            problems.append(f"{s.where}: unknown marker {s.marker!r}")
        elif s.marker and not s.reason:
            problems.append(f"{s.where}: a {s.marker} marker must say why or which part")
        elif s.marker != "skip":
            problems += [
                f"{s.where}: cannot run {c.text!r}" for c in s.commands if not _runnable(c)
            ]
    assert problems == []
    assert sum(1 for s in all_sessions() if not s.marker) > 0


def _run(session: Session, folder: Path, env: dict[str, str | None]) -> list[str]:
    """Run the session's commands in ``folder``; the mismatches found."""
    problems = []
    for command in session.commands:
        argv = command.argv
        if argv[0] == "cat" and len(argv) == 2:
            (folder / argv[1]).write_text("".join(f"{x}\n" for x in command.shown))
            continue
        stdin = None
        if argv[0] == "cat":
            stdin, argv = (folder / argv[1]).read_bytes(), argv[3:]
        result = runner.invoke(app, argv[1:], input=stdin, env=env)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        failed = any(x.startswith("Error: ") for x in result.output.splitlines())
        if (result.exit_code != 0) != failed:
            problems.append(f"{session.where}: $ {command.text}\nexit code {result.exit_code}")
        run = (STARTED, datetime.now(UTC))
        if session.marker == "json-part":
            part = json.loads(result.stdout)[session.reason]
            why = _json_mismatch(json.loads("\n".join(command.shown)), part, run, session.reason)
        else:
            real = result.output.replace(str(folder), "/home/me/shop").splitlines()
            why = mismatch(command.shown, real, run)
        if why:
            problems.append(f"{session.where}: $ {command.text}\n{why}")
    return problems


def _json_mismatch(
    shown: object, real: object, run: tuple[datetime, datetime], where: str
) -> str | None:
    """Why the JSON ``real`` is not what ``shown`` shows: the same keys, a shown list
    the first items of the real one, numbers to 1e-9 relative, texts by the line rule."""
    if isinstance(shown, dict) and isinstance(real, dict):
        if shown.keys() != real.keys():
            return f"{where}: keys {sorted(shown)} shown, {sorted(real)} printed"
        found = (_json_mismatch(shown[k], real[k], run, f"{where}.{k}") for k in shown)
        return next((x for x in found if x), None)
    if isinstance(shown, list) and isinstance(real, list) and len(shown) <= len(real):
        pairs = zip(shown, real[: len(shown)], strict=True)
        found = (_json_mismatch(a, b, run, f"{where}[{i}]") for i, (a, b) in enumerate(pairs))
        return next((x for x in found if x), None)
    if isinstance(shown, float) and isinstance(real, float):
        return None if real == pytest.approx(shown, rel=1e-9) else f"{where}: {shown} ≠ {real}"
    if isinstance(shown, str) and isinstance(real, str) and same_line(shown, real, run):
        return None
    return None if shown == real else f"{where}: {shown!r} shown, {real!r} printed"


def _folder(tmp: Path) -> Path:
    folder = tmp / "work"
    if EXAMPLES.is_dir():
        shutil.copytree(EXAMPLES, folder)
    else:
        folder.mkdir()
    return folder


def _run_doc(
    doc: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, *, demo: bool
) -> tuple[int, list[str]]:
    monkeypatch.chdir(folder)
    env: dict[str, str | None] = {"ABEVAL_DB": None, "COLUMNS": "200"}
    problems, ran = [], 0
    for s in sessions(doc):
        if s.marker == "skip" or s.needs_demo != demo:
            continue
        ran += 1
        problems += _run(s, folder, env)
    for source, cited in json_key_paragraphs(doc):
        if source.startswith("$ ") and ("demo/" in source) == demo:
            printed = runner.invoke(app, shlex.split(source[2:])[1:], env=env)
            assert printed.exit_code == 0, printed.output
            missing = sorted(cited - json_words(json.loads(printed.stdout)))
            if not cited or missing:
                problems.append(f"{doc.name}: {source} prints no key {missing or cited}")
    return ran, problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_sessions_without_the_demo_print_what_the_docs_show(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, problems = _run_doc(doc, _folder(tmp_path), monkeypatch, demo=False)
    assert not problems, "\n\n".join(problems)


@pytest.fixture(scope="session")
def full_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``abeval demo`` as the README runs it (30,000 users, seed 7), in ``demo/``."""
    folder = tmp_path_factory.mktemp("full-demo")
    subprocess.run(
        [sys.executable, "-m", "abeval", "demo"], cwd=folder, check=True, capture_output=True
    )
    return folder / "demo"


ON_DEMO = [d for d in DOCS if any(s.needs_demo and s.marker != "skip" for s in sessions(d))]


@pytest.mark.slow
@pytest.mark.parametrize("doc", ON_DEMO, ids=lambda p: p.name)
def test_the_sessions_on_the_demo_print_what_the_docs_show(
    doc: Path, full_demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    shutil.copytree(full_demo, folder / "demo")
    _, problems = _run_doc(doc, folder, monkeypatch, demo=True)
    assert not problems, "\n\n".join(problems)


def test_the_shipped_lake_is_what_its_script_writes() -> None:
    """docs/examples/lake/events.parquet, read in place by docs/usage.md, is the
    table docs/examples/make_lake.py builds (the same rows, in the same order)."""
    import importlib.util

    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("make_lake", EXAMPLES / "make_lake.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = pq.read_table(EXAMPLES / "lake" / "events.parquet")
    assert shipped.equals(module.lake_table())
    assert shipped.num_rows == 46_595 + 88  # the counts docs/usage.md shows


def test_the_shipped_past_experiments_are_the_history_tests_rows() -> None:
    """docs/examples/past.csv, the history docs/usage.md's backtest reads, holds the
    rows tests/analysis/test_agreement_history.py checks (written from them)."""
    import csv

    from test_agreement_history import _rows

    with (EXAMPLES / "past.csv").open(newline="") as f:
        shipped = list(csv.DictReader(f))
    assert shipped == [{k: str(v) for k, v in row.items()} for row in _rows()]


@pytest.mark.slow
def test_the_stated_size_of_the_demo_report_is_its_size(full_demo: Path) -> None:
    """docs/html-report.md states the demo page's size: within 10% of the page's."""
    import re

    text = " ".join((ROOT / "docs" / "html-report.md").read_text(encoding="utf-8").split())
    found = re.search(r"The demo report is about (\d+) KB", text)
    assert found, "docs/html-report.md no longer states the demo report's size"
    stated, real = int(found.group(1)), (full_demo / "home-reco-v2.html").stat().st_size / 1000
    assert abs(real - stated) <= 0.1 * stated, real
