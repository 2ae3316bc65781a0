"""The README's picture is made by a script (issue 34, item 5): the image it shows
exists, the script has --help, and, where Chromium is present, it photographs a
report at 800 px."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_browser import CHROMIUM, decode_png

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "screenshot.py"


def test_the_readme_shows_the_script_s_image() -> None:
    readme = (ROOT / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert "docs/report-screenshot.png" in images
    for image in images:
        assert (ROOT / image).is_file(), image
    assert "make screenshot" in readme
    assert "scripts/screenshot.py" in (ROOT / "Makefile").read_text()


def test_the_script_has_help() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "--page" in done.stdout and "--width" in done.stdout


@pytest.mark.browser
def test_the_script_photographs_a_report(tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    out = tmp_path / "shot.png"
    args = ["--users", "800", "--width", "800", "--height", "600", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    width, height, _, _ = decode_png(out.read_bytes())
    assert (width, height) == (800, 600)
