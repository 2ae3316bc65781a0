"""The public names (docs/python.md): ``abeval.__all__`` and ``dir(abeval)`` list
them without importing them, and every public function and class of ``abeval``
and ``abeval.api``, the results the API returns and their public methods carry a
docstring with an example that ``help()`` shows."""

from __future__ import annotations

import inspect
import pydoc
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import abeval
from abeval import api
from abeval.report.evaluate_shown import ShownEvaluation
from abeval.report.notebook import ShownReport
from abeval.report.notebook_across import ShownBoard, ShownForecast
from abeval.report.program_json import ShownProgram

RESULTS = (ShownReport, ShownBoard, ShownForecast, ShownEvaluation, ShownProgram, api.Experiments)


def _example(doc: str | None) -> bool:
    """A doctest line, or an indented example after a ``::`` line."""
    return bool(doc) and (">>>" in doc or re.search(r"::\n\n\s+\S", doc) is not None)


def _public() -> Iterator[tuple[str, Any]]:
    for name in dir(abeval):
        value = getattr(abeval, name)
        if not inspect.ismodule(value) and name != "__version__":
            yield f"abeval.{name}", value
    for name in api.__all__:
        yield f"abeval.api.{name}", getattr(api, name)
    for cls in RESULTS:
        yield cls.__name__, cls


def _methods(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods, but not those an exception or a list has already (nor the
    exceptions' own helpers for the CLI's lines)."""
    if issubclass(cls, Exception):
        return
    for name, value in inspect.getmembers(cls, callable):
        if not name.startswith("_") and name not in dir(list):
            yield f"{cls.__name__}.{name}", value


def test_dir_lists_the_public_names_and_all_is_them_but_open() -> None:
    assert dir(abeval) == sorted({*abeval.__all__, "open"})
    assert {"open", "evaluate", "Store", "render", "api", "OptionError"} <= set(dir(abeval))
    for name in dir(abeval):
        assert getattr(abeval, name) is not None
    code = "import sys, abeval; dir(abeval); print(sorted(m for m in sys.modules if 'abeval' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['abeval']"


def test_every_public_name_and_method_has_a_docstring_with_an_example() -> None:
    missing = []
    for name, value in _public():
        if not _example(inspect.getdoc(value)):
            missing.append(name)
        if inspect.isclass(value):
            missing += [m for m, f in _methods(value) if not _example(inspect.getdoc(f))]
    assert missing == []


@pytest.mark.parametrize("name", ["open", "evaluate", "Store"])
def test_help_shows_the_example(name: str) -> None:
    shown = pydoc.render_doc(getattr(abeval, name), renderer=pydoc.plaintext)
    assert ">>> " in shown


def _table(heading: str) -> list[str]:
    """The names of the docs/python.md table whose first column is ``heading``."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    lines = doc.splitlines()
    start = lines.index(f"| `{heading}` | purpose |")
    names = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        found = re.fullmatch(r"\| `([\w.]+)` \| (.+) \|", line)
        assert found is not None, line
        assert found.group(2).strip(), f"{found.group(1)} has no purpose"
        names.append(found.group(1))
    return names


@pytest.mark.parametrize(
    ("heading", "public"),
    [("abeval.", sorted({*abeval.__all__, "open"})), ("abeval.api.", sorted(api.__all__))],
)
def test_the_docs_list_every_public_name_with_its_purpose(heading: str, public: list[str]) -> None:
    listed = _table(heading)
    assert len(listed) == len(set(listed))
    assert sorted(listed) == public
