"""Regenerate the README's picture of the demo report: ``make screenshot``.

Renders the README demo's report (20,000 simulated users, seed 1, segments by
device; or the page given with ``--page``, e.g. ``demo/home-reco-v2.html`` from
``make demo``) and photographs the top of it in headless Chromium, the browser
the browser tests drive (``tests/report/test_browser.py``: Debian's ``chromium``, or
``ABEVAL_CHROMIUM``), into ``docs/report-screenshot.png``. Not part of ``make
test``: tests/report/test_screenshot.py runs it at 800 px into a temporary folder when
Chromium is present.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / "docs" / "report-screenshot.png"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "report"))  # test_browser: the demo, Chromium


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", type=Path, help="an HTML report (default: render the README demo)")
    p.add_argument("--out", type=Path, default=IMAGE, help=f"default {IMAGE.relative_to(ROOT)}")
    p.add_argument("--width", type=int, default=1280, help="window width in px (default 1280)")
    p.add_argument("--height", type=int, default=2400, help="height shot in px (default 2400)")
    p.add_argument("--users", type=int, default=20_000, help="demo users (default 20,000)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from test_browser import CHROMIUM, build_demo, save_screenshot

    if not CHROMIUM.is_file():
        print(f"screenshot: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        html = args.page or build_demo(Path(tmp), args.users, seed=1)
        size = save_screenshot(
            html, args.out, Path(tmp) / "profile", width=args.width, height=args.height
        )
    print(f"wrote {args.out} ({size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
