"""Tests live in the folder of the layer they exercise (docs/architecture.md, "Tests"):
no test module sits in tests/ itself, and every folder is one the table names. A new
test file dropped at the top level, or a folder nobody documented, fails here."""

from __future__ import annotations

from pathlib import Path

TESTS = (
    next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists()) / "tests"
)
FOLDERS = {
    "store",
    "analysis",
    "report",
    "cli",
    "api",
    "stats",
    "metrics",
    "simulate",
    "spark",
    "project",
}


def test_no_test_module_at_the_top_level() -> None:
    loose = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert loose == [], f"move these into a layer folder: {loose}"


def test_every_folder_is_a_documented_layer() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders <= FOLDERS, f"undocumented test folders: {sorted(folders - FOLDERS)}"
    doc = (TESTS.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = sorted(f for f in folders if f"tests/{f}/" not in doc)
    assert missing == [], f"docs/architecture.md does not name: {missing}"
