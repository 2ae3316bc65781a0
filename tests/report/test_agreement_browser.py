"""The agreement board in headless Chromium (the DevTools driver of
tests/report/test_browser.py): no console error, nothing fetched, every scatter laid out
and painted, each point with its two crosshairs and the diagonal drawn, the
replayed metrics' scatters folded until opened, a legend under every scatter
naming the dots, the crosshairs, the fitted line and y = x, and at 800 and
1280 px no element wider than the window and no table scrolled sideways (no
column clipped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import build_store
from test_browser import WIDTH, Browser, Page, _is_blue, _need_chromium, ink

from abeval.analysis.agreement import AgreementOptions
from abeval.analysis.agreement_board import agreement_board
from abeval.report.agreement_html import render_html
from abeval.store import open_store

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAYOUT = """JSON.stringify({
  scatters: [...document.querySelectorAll('svg.scatter')].map(s => {
    const r = s.getBoundingClientRect();
    const len = l => { const b = l.getBBox(); return Math.max(b.width, b.height); };
    return {x: r.x + scrollX, y: r.y + scrollY, w: r.width, h: r.height,
            source: s.dataset.source, visible: s.checkVisibility(),
            points: s.querySelectorAll('circle.pt').length,
            crossX: [...s.querySelectorAll('line.cross.x')].map(len),
            crossY: [...s.querySelectorAll('line.cross.y')].map(len),
            diagonal: [...s.querySelectorAll('line.diagonal')].map(len)};
  }),
  overflow: [...document.querySelectorAll('main, body')].filter(
    e => e.scrollWidth > e.clientWidth + 1).map(e => e.tagName),
  width: document.documentElement.scrollWidth,
  legends: [...document.querySelectorAll('figure.chart-card')].filter(f => f.checkVisibility())
    .map(f => [...f.querySelectorAll('.scatter-legend li')].map(li => li.dataset.legend)),
  fitLines: [...document.querySelectorAll('svg.scatter line.fit')].length,
})"""

#: Every visible element whose right edge passes the window, and every table
#: wrapper that scrolls sideways (a column hidden until scrolled).
CLIPPED = """JSON.stringify({
  wide: [...document.querySelectorAll('body *')].filter(e => e.checkVisibility()).filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && (r.right > innerWidth + 1 || r.left < -1);
  }).map(e => e.tagName + '.' + (e.className.baseVal ?? e.className)).slice(0, 10),
  scrolled: [...document.querySelectorAll('.table-wrap')].filter(
    e => e.checkVisibility() && e.scrollWidth > e.clientWidth + 1).map(
    e => e.querySelector('table').className),
})"""


@pytest.fixture(scope="module")
def board_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_chromium()
    workdir = tmp_path_factory.mktemp("agreement-browser")
    db = build_store(workdir)
    with open_store(db, read_only=True) as store:
        board = agreement_board(store, AgreementOptions(resamples=200))
    page = workdir / "agreement.html"
    page.write_text(render_html(board), encoding="utf-8")
    return page


def test_board_in_headless_chromium(board_page: Path, tmp_path: Path) -> None:
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser)
        page.open(board_page)
        layout = json.loads(page.evaluate(LAYOUT))
        problems = [
            e for e in page.events("Log.entryAdded", "Runtime.exceptionThrown")
            if e["method"] == "Runtime.exceptionThrown"
            or e["params"]["entry"]["level"] == "error"
        ]  # fmt: skip
        assert problems == []
        requested = {
            e["params"]["request"]["url"] for e in page.events("Network.requestWillBeSent")
        }
        assert requested <= {board_page.resolve().as_uri()}
        assert layout["overflow"] == [] and layout["width"] <= WIDTH

        shown = [s for s in layout["scatters"] if s["visible"]]
        folded = [s for s in layout["scatters"] if not s["visible"]]
        # Independent signals (ope, evaluation) open; replayed ones folded.
        assert {s["source"] for s in shown} == {"ope", "evaluation"}
        assert folded and {s["source"] for s in folded} == {"replay"}
        for s in shown:
            assert s["w"] > 300 and s["h"] > 200, s
            assert s["points"] >= 3
            # Every point has both crosshairs, each of a visible length.
            assert len(s["crossX"]) == len(s["crossY"]) == s["points"], s
            # exp-b's treatment logs with the control's policy, so its off-policy
            # interval is about 1e-7 wide: that one crosshair has no visible length.
            visible = [c for c in s["crossX"] + s["crossY"] if c > 1]
            assert len(visible) >= 2 * s["points"] - (s["source"] == "ope"), s
            share, colours = ink(page.screenshot(s["x"], s["y"], s["w"], s["h"]))
            assert share > 0.02, (s, share)
            assert any(_is_blue(c) for c in colours), s  # the points
        evaluation = next(s for s in shown if s["source"] == "evaluation")
        assert evaluation["diagonal"] and evaluation["diagonal"][0] > 50
        # Every open scatter has its legend: dots, crosshairs, fitted line, y = x.
        assert layout["legends"] and layout["fitLines"] >= len(shown)
        for legend in layout["legends"]:
            assert legend == ["dots", "crosshairs", "fit", "diagonal"], legend

        # Opening the replayed metrics lays their scatters out too.
        page.evaluate("document.querySelectorAll('details.replayed').forEach(d => d.open = true)")
        opened = json.loads(page.evaluate(LAYOUT))["scatters"]
        assert all(s["visible"] and s["w"] > 300 for s in opened)
    finally:
        browser.close()


@pytest.mark.parametrize("width", [800, 1280])
def test_no_column_is_clipped(board_page: Path, tmp_path: Path, width: int) -> None:
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=width)
        page.open(board_page)
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        found = json.loads(page.evaluate(CLIPPED))
        assert found == {"wide": [], "scrolled": []}
        assert json.loads(page.evaluate(LAYOUT))["width"] <= width
    finally:
        browser.close()
