"""No import circle in abeval at run time: every module's imports of abeval, those
inside functions included, form no cycle. Imports under ``if TYPE_CHECKING:`` are
for the type checker only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "abeval"

#: Circles allowed: none.
ALLOWED: set[frozenset[str]] = set()


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of each module under ``root`` (a package named as its folder)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``name`` imports at run time: at the top, in
    functions, classes, ``try`` and every other block but ``if TYPE_CHECKING:``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def owner(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(owner(alias.name) or "")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else owner(base) or "")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard("")
    found.discard(name)
    return found


def cycles(root: Path) -> list[frozenset[str]]:
    """The strongly connected components of more than one module of the run-time
    import graph of the package at ``root`` (Tarjan's algorithm, iterative)."""
    modules = module_names(root)
    graph = {m: sorted(imported(m, p, modules)) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(graph[node]):
                work.append((node, i + 1))
                nxt = graph[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(frozenset(members))
    return found


def test_no_import_circle_at_run_time() -> None:
    found = [sorted(c) for c in cycles(ROOT) if c not in ALLOWED]
    assert found == [], (
        "import circles (move the shared part down a layer, or import a type under "
        f"TYPE_CHECKING): {found}"
    )


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_guard_sees_a_circle_through_a_function_and_skips_type_checking(
    tmp_path: Path,
) -> None:
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from pkg.sub import c\n",
            "sub/__init__.py": "",
            "sub/c.py": "from .. import a\n",
            "d.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg import e\nelse:\n    import pkg.sub\n"
            ),
            "e.py": "import pkg.d\n",
        },
    )
    # a -> b (module) -> sub.c (inside a function) -> a (relative): one circle;
    # d -> e only for the type checker, so d and e make none.
    assert cycles(pkg) == [frozenset({"pkg.a", "pkg.b", "pkg.sub.c"})]
