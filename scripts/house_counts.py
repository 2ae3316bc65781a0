"""The house's counts for issue 37's closing note, from the code: modules, lines,
the largest module, import circles at run time, and imports that break the layer
table (upward), at run time and under ``TYPE_CHECKING``.

The circles and the upward imports are computed by the tests that enforce them
(``test_import_cycles.py``, ``test_layers.py``, found wherever they are under
``tests/``), so the note and the guards count the same thing.

Run: ``.venv/bin/python scripts/house_counts.py``
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _root() -> Path:
    here = Path(__file__).resolve().parent
    while not (here / "pyproject.toml").is_file():
        here = here.parent
    return here


ROOT = _root()
PACKAGE = ROOT / "abeval"


def _test_module(name: str) -> ModuleType:
    """The test module ``name`` (``test_layers``) wherever it is under tests/."""
    path = next((ROOT / "tests").rglob(f"{name}.py"))
    sys.path[:0] = [str(ROOT / "tests"), str(path.parent)]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    largest = max(sizes, key=lambda p: sizes[p])
    over = sorted(p for p, n in sizes.items() if n > 500)
    circles = _test_module("test_import_cycles").cycles(PACKAGE)
    breaks = list(_test_module("test_layers")._breaks())
    runtime = sorted({(m, i) for m, _, i, t in breaks if not t})
    typing = sorted({(m, i) for m, _, i, t in breaks if t})
    print(f"modules: {len(sizes)} ({sum(sizes.values()):,} lines under abeval/)")
    print(f"largest module: {largest}, {sizes[largest]} lines; over 500 lines: {len(over)}")
    print(f"import circles at run time: {len(circles)}")
    for circle in circles:
        print(f"  {' <-> '.join(sorted(circle))}")
    print(f"upward imports at run time: {len(runtime)}")
    for module, imported in runtime:
        print(f"  {module} -> {imported}")
    print(f"upward imports under TYPE_CHECKING (allowed, listed): {len(typing)}")
    for module, imported in typing:
        print(f"  {module} -> {imported}")


if __name__ == "__main__":
    main()
