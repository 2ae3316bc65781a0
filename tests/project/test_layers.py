"""The layer table of docs/architecture.md, enforced: every ``abeval`` import of
every module of ``abeval/`` (at module level or inside a function, ``import`` or
``from``, absolute or relative) goes only to a layer the table lets it use.

Imports under ``if TYPE_CHECKING:`` name types only and load nothing at run time;
those that break the table are allowed but listed in :data:`TYPE_ONLY`. The run-time
imports that break it today are listed in :data:`EXCEPTIONS` with the reason, the
to-do list; any other upward import fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import abeval

PACKAGE = Path(abeval.__file__).resolve().parent

#: The shared helpers: any layer may use them, and they use only each other.
HELPERS = frozenset({"errors", "files", "formatting", "choices", "resources", "signals"})

#: Each layer (the first name under ``abeval``) → what it may import besides itself:
#: layers (``stats``: the package and its modules) or single modules
#: (``stats.sufficient``). ``abeval`` is the package itself (its version, and the
#: lazy fronts ``abeval.open`` ... that lead to :mod:`abeval.api`).
ALLOWED: dict[str, frozenset[str]] = {
    "stats": frozenset(),
    "store": HELPERS,
    "simulate": HELPERS | {"store"},
    "metrics": HELPERS | {"stats.sufficient"},
    "analysis": HELPERS | {"abeval", "store", "stats", "metrics"},
    "report": HELPERS | {"abeval", "analysis", "metrics", "stats"},
    "render": HELPERS | {"report", "analysis", "metrics", "stats", "store"},
    "api": HELPERS
    | {"abeval", "render", "report", "analysis", "metrics", "stats", "store", "simulate"},
    "walkthrough": HELPERS | {"abeval", "api", "render", "simulate"},
    "cli": frozenset(
        {"abeval", "api", "render", "walkthrough", "errors", "choices", "formatting", "signals"}
    ),
    "abeval": frozenset({"api", "cli", "errors", "render", "signals"}),
    **{helper: HELPERS for helper in HELPERS},
}

#: Run-time imports that break the table today: (importing module, imported module)
#: → why it is still there. Each is a to-do; remove the line when it is fixed.
EXCEPTIONS: dict[tuple[str, str], str] = {
    # none today (abeval.formatting → abeval.analysis.planning, FEASIBLE_DAYS, was the
    # last: it is abeval.choices.FEASIBLE_DAYS now)
}

#: Type-only imports (under ``if TYPE_CHECKING:``) that break the table: they load
#: nothing at run time; listed so that a new one is seen.
TYPE_ONLY: frozenset[tuple[str, str]] = frozenset(
    {
        # the commands' lines read the store's own summaries (the API returns them)
        ("abeval.report.experiment_lines", "abeval.store.experiments"),
        ("abeval.report.store_lines", "abeval.store.ingest"),
        ("abeval.report.store_lines", "abeval.store.source_mapping"),
        ("abeval.report.store_lines", "abeval.store.sources"),
    }
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return "abeval" if len(parts) == 1 or parts[1] == "__main__" else parts[1]


def _is_module(name: str) -> bool:
    """Whether the dotted ``abeval`` name is a module or package of abeval/."""
    where = PACKAGE.parent.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _from_package(name: str) -> str:
    """What ``from abeval import name`` loads: a module of the package, a lazy front
    (``open`` → ``abeval.api``), or the package itself (``__version__``)."""
    if _is_module(f"abeval.{name}"):
        return f"abeval.{name}"
    return str(getattr(abeval, "_LAZY", {}).get(name, "abeval"))


def _type_only_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def imports_of(
    module: str, source: str, *, package: bool = False
) -> Iterator[tuple[int, str, bool]]:
    """(line, imported module, type only) of every abeval import in ``source``, the
    text of ``module`` (a package's ``__init__`` when ``package``)."""
    tree = ast.parse(source)
    type_only = _type_only_nodes(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt | ast.expr):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + package]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "abeval":
                names = [_from_package(alias.name) for alias in node.names]
            else:
                names = [target]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names = [str(node.args[0].value)]
        for name in names:
            if name == "abeval" or name.startswith("abeval."):
                yield node.lineno, name, id(node) in type_only


def allowed(importer: str, imported: str) -> bool:
    """Whether the table lets ``importer`` import ``imported``."""
    mine = layer_of(importer)
    if mine == layer_of(imported):
        return True
    inside = imported.removeprefix("abeval.")
    return any(inside == rule or inside.startswith(rule + ".") for rule in ALLOWED[mine])


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _breaks() -> Iterator[tuple[str, int, str, bool]]:
    for path in _modules():
        module = module_name(path)
        source = path.read_text(encoding="utf-8")
        for line, imported, type_only in imports_of(
            module, source, package=path.name == "__init__.py"
        ):
            if not allowed(module, imported):
                yield module, line, imported, type_only


def test_every_layer_has_a_row() -> None:
    layers = {layer_of(module_name(p)) for p in _modules()}
    assert layers and layers <= set(ALLOWED), sorted(layers - set(ALLOWED))


def test_every_import_follows_the_layer_table() -> None:
    bad = [
        f"{module}:{line}: imports {imported}"
        for module, line, imported, type_only in _breaks()
        if (module, imported) not in (TYPE_ONLY if type_only else EXCEPTIONS)
    ]
    assert not bad, "\n".join([*bad, "(the layers: docs/architecture.md)"])


def test_every_listed_exception_is_still_there() -> None:
    # A fixed exception leaves the lists, so that they stay the to-do list.
    found = {(module, imported, type_only) for module, _, imported, type_only in _breaks()}
    runtime = {(m, i) for m, i, t in found if not t}
    typing = {(m, i) for m, i, t in found if t}
    assert set(EXCEPTIONS) <= runtime, set(EXCEPTIONS) - runtime
    assert typing >= TYPE_ONLY, TYPE_ONLY - typing


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("abeval.store.engine", "from abeval.analysis.online import build_report"),
        ("abeval.stats.ope", "def f():\n    from abeval.errors import AbevalError\n"),
        ("abeval.metrics.kernel", "from abeval.stats import compare"),
        ("abeval.analysis.online", "def f():\n    import abeval.report.text\n"),
        ("abeval.report.text", "from abeval import api"),
        ("abeval.simulate.demo", "from abeval.analysis.ope_file import target_file"),
        ("abeval.files", "from abeval.store.quoting import quote_ident"),
        ("abeval.cli.app", "from abeval.store import open_store"),
        ("abeval.analysis.online", "from abeval import open"),
        ("abeval.store.ingest.run", "from ...analysis import online"),
        ("abeval.render", "importlib.import_module('abeval.cli.app')"),
    ],
)
def test_the_check_catches_an_upward_import(module: str, source: str) -> None:
    assert [i for _, i, _ in imports_of(module, source) if not allowed(module, i)]


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("abeval.metrics.kernel", "from abeval.stats.sufficient import MeanStats"),
        ("abeval.analysis.online", "from abeval import __version__"),
        ("abeval.api.store", "def f():\n    from abeval.simulate.demo import demo_config\n"),
        ("abeval.store.ingest.run", "from ..engine import Store"),
        ("abeval.cli.app", "from abeval import api, render"),
        ("abeval.errors", "from abeval import signals"),
    ],
)
def test_the_check_lets_the_table_through(module: str, source: str) -> None:
    found = list(imports_of(module, source))
    assert found and all(allowed(module, i) for _, i, _ in found)


def test_a_relative_import_is_resolved_from_the_module() -> None:
    assert [i for _, i, _ in imports_of("abeval.store.ingest.run", "from ..engine import X")] == [
        "abeval.store.engine"
    ]
    assert [
        i for _, i, _ in imports_of("abeval.store.ingest", "from .run import X", package=True)
    ] == ["abeval.store.ingest.run"]


def test_the_demo_goes_through_the_public_api() -> None:
    # `abeval demo` runs as a user's script would: abeval.open and the Store's
    # methods, abeval.evaluate, abeval.render; the simulator only writes its files.
    path = PACKAGE / "walkthrough.py"
    module = module_name(path)
    fronts = ("abeval", "abeval.api", "abeval.render", "abeval.formatting")
    used = {i for _, i, t in imports_of(module, path.read_text(encoding="utf-8")) if not t}
    assert used and all(i in fronts or i.startswith("abeval.simulate.") for i in used), used
