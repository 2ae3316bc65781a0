"""No module of ``abeval/`` is longer than 500 lines (issue 37, "rooms that show
the design"): a module that grows past it is split along its responsibilities."""

from __future__ import annotations

from pathlib import Path

import abeval

PACKAGE = Path(abeval.__file__).resolve().parent
LIMIT = 500


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_walk_finds_the_modules() -> None:
    modules = list(PACKAGE.rglob("*.py"))
    assert len(modules) > 200
    assert PACKAGE / "render.py" in modules and PACKAGE / "store" / "sql" / "__init__.py" in modules


def test_no_module_exceeds_the_limit() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := _lines(p)) > LIMIT
    }
    assert long == {}, f"modules over {LIMIT} lines (split them): {long}"


def test_the_count_is_of_lines(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("a = 1\n" * 501, encoding="utf-8")
    assert _lines(sample) == 501 > LIMIT
    sample.write_text("a = 1\n" * 500, encoding="utf-8")
    assert _lines(sample) == LIMIT
