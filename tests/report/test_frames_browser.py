"""The notebook's tables (``_repr_html_``) in headless Chromium at 1280 px, inside
an output area styled as Jupyter's are (tables centred, collapsed borders, 12 px
text, right-aligned cells, the prompt's column taken from the width): every
table fits the output area and no cell's text passes its cell's edge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_browser import Browser, Page, _need_chromium
from test_frames import results  # noqa: F401  (the fixture)

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The rules a Jupyter output area applies to rendered HTML, as this test assumes
#: them; the tables bring no style of their own.
HOST = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font: 13px sans-serif; }
.cell { display: flex; }
.prompt { flex: 0 0 64px; }
.output { flex: 1 1 auto; min-width: 0; overflow-x: auto; padding: 0 8px; }
.output table { border-collapse: collapse; border-spacing: 0; border: none;
  font-size: 12px; margin-left: auto; margin-right: auto; }
.output th, .output td { text-align: right; padding: 0.5em; vertical-align: middle;
  white-space: nowrap; }
</style></head><body>%s</body></html>"""

MEASURE = """JSON.stringify([...document.querySelectorAll('.output')].map(o => ({
  output: o.clientWidth,
  table: o.querySelector('table').getBoundingClientRect().width,
  clipped: [...o.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => c.textContent),
})))"""


def test_notebook_tables_fit_at_1280_px(results: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    _need_chromium()
    cells = "".join(
        f'<div class="cell"><div class="prompt">[{i}]:</div><div class="output">'
        f"{results[name]._repr_html_()}</div></div>"
        for i, name in enumerate(["report", "board", "forecast", "evaluation"], start=1)
    )
    page_path = tmp_path / "notebook.html"
    page_path.write_text(HOST % cells, encoding="utf-8")
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=1280)
        page.open(page_path)
        found = json.loads(page.evaluate(MEASURE))
        height = float(page.evaluate("document.body.scrollHeight"))
        (tmp_path / "notebook.png").write_bytes(page.screenshot(0, 0, 1280, height))
    finally:
        browser.close()
    assert len(found) == 4
    for output in found:
        assert output["clipped"] == []
        assert 0 < output["table"] <= output["output"]
