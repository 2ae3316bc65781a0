"""The CLI's only way into the library is its public API: every ``abeval`` module
that abeval/cli/*.py imports, at module level or inside a function (type-only
imports included), is one of the allowed fronts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "abeval" / "cli"

#: The modules the CLI may import: the API and its presenters, the CLI itself,
#: and the small modules of names both share (errors, choices, formatting, signals).
ALLOWED = ("abeval", "abeval.api", "abeval.render", "abeval.errors", "abeval.choices")
ALLOWED += ("abeval.formatting", "abeval.signals", "abeval.walkthrough")
#: ``from abeval import X``: the package's own names, and the allowed modules.
ALLOWED_FROM_PACKAGE = {"api", "render", "errors", "choices", "formatting", "signals"}
ALLOWED_FROM_PACKAGE |= {"walkthrough"}
ALLOWED_FROM_PACKAGE |= {"__version__", "open", "evaluate", "Store"}
ALLOWED_FROM_PACKAGE |= {"AbevalError", "InputError", "OptionError"}


def _allowed(module: str) -> bool:
    return module in ALLOWED or module == "abeval.cli" or module.startswith("abeval.cli.")


def imports_of(source: str) -> list[tuple[int, str]]:
    """(line, what) of every abeval import in ``source`` that is not allowed."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                if (name == "abeval" or name.startswith("abeval.")) and not _allowed(name):
                    found.append((node.lineno, f"import {name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module == "abeval":
                for alias in node.names:
                    if alias.name not in ALLOWED_FROM_PACKAGE:
                        found.append((node.lineno, f"from abeval import {alias.name}"))
            elif module.startswith("abeval.") and not _allowed(module):
                found.append((node.lineno, f"from {module} import ..."))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "a relative import"))  # the CLI spells its imports
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
        ):
            found.append((node.lineno, "importlib.import_module"))
    return found


def test_the_cli_has_modules_to_check() -> None:
    assert len(list(CLI.glob("*.py"))) >= 10


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_the_cli_imports_only_the_public_api(path: Path) -> None:
    bad = imports_of(path.read_text(encoding="utf-8"))
    assert not bad, "\n".join(
        f"{path.name}:{line}: {what} (the CLI goes through abeval.api and abeval.render)"
        for line, what in bad
    )


@pytest.mark.parametrize(
    "source",
    [
        "from abeval.store import open_store",
        "def f():\n    from abeval.analysis.forecast import build_forecast\n",
        "import abeval.report.text",
        "if TYPE_CHECKING:\n    from abeval.store.sources import X\n",
        "from abeval import stats",
        "class C:\n    def m(self):\n        import abeval.files as f\n",
    ],
)
def test_the_check_catches_a_direct_import(source: str) -> None:
    assert imports_of(source)


@pytest.mark.parametrize(
    "source",
    [
        "from abeval import api, render",
        "from abeval.cli.app import command",
        "from abeval.errors import OptionError",
        "import typer\nfrom abeval.formatting import printable",
    ],
)
def test_the_check_lets_the_fronts_through(source: str) -> None:
    assert not imports_of(source)


def test_starting_the_cli_imports_no_layer_of_the_library() -> None:
    # `abeval --help` stays fast: the commands import the API's parts when they run.
    import subprocess
    import sys

    code = (
        "import sys, abeval.cli; print(' '.join(m for m in sys.modules if m.startswith('abeval')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "abeval.cli.app" in loaded and "abeval.cli.report_commands" in loaded
    heavy = ("abeval.render", "abeval.store", "abeval.analysis", "abeval.report", "abeval.stats")
    heavy += ("abeval.metrics", "abeval.simulate", "abeval.files")
    assert [m for m in loaded if m.startswith(heavy)] == []
