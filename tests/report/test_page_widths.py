"""Pages at any width (issue 22, item 6; issue 34, item 6): the experiment report,
the evaluation page, the agreement board and the forecast's page at 800 and 1280
px in headless Chromium with every ``details`` opened: no visible element passes
the window's edge, no table scrolls sideways (a column hidden until scrolled), no
two pieces of text overlap and no table cell's content is wider than its cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import build_store
from test_agreement_browser import CLIPPED
from test_browser import Browser, Page, _need_chromium, build_demo
from test_evaluate_html import cli_args, write_inputs
from test_forecast_cli import TYPED, _rows, _write
from typer.testing import CliRunner

from abeval.cli import app

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The pages checked at every width.
PAGES = ("report", "evaluation", "board", "forecast")
WIDTHS = (800, 1280)

#: Text only screen readers hear (``.sr-only``, a 1 px clipped box) is taken out of
#: the layout before measuring: it is meant to sit outside its cell.
HIDE_SR = r"""(() => {
  const s = document.createElement('style');
  s.textContent = '.sr-only { display: none !important; }';
  document.head.append(s);
  return true;
})()"""
#: Pieces of text drawn on each other: the line boxes of every visible text node,
#: any two of different nodes overlapping by more than 2 px across and 40% of a
#: line's height.
OVERLAP = r"""JSON.stringify((() => {
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!n.data.trim() || !parent || !parent.checkVisibility({visibilityProperty: true})) continue;
    // What shows of the text: its line boxes cut to every box that clips them
    // (a scrolled <pre>, a table wrapper), so text scrolled out of view is not seen.
    const clips = [];
    for (let e = parent; e; e = e.parentElement) {
      if (getComputedStyle(e).overflow !== 'visible') clips.push(e.getBoundingClientRect());
    }
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const line of range.getClientRects()) {
      let [left, top, right, bottom] = [line.left, line.top, line.right, line.bottom];
      for (const c of clips) {
        left = Math.max(left, c.left); top = Math.max(top, c.top);
        right = Math.min(right, c.right); bottom = Math.min(bottom, c.bottom);
      }
      const r = {left, top, right, bottom, height: bottom - top};
      if (right - left > 1 && bottom - top > 1) boxes.push({r, n});
    }
  }
  boxes.sort((a, b) => a.r.top - b.r.top);
  const found = [];
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i].r;
    for (let j = i + 1; j < boxes.length && boxes[j].r.top < a.bottom; j++) {
      const b = boxes[j].r;
      if (boxes[i].n === boxes[j].n) continue;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 2 && h > 0.4 * Math.min(a.height, b.height)) {
        const said = k => boxes[k].n.data.trim().slice(0, 30);
        found.push(said(i) + ' | ' + said(j));
      }
    }
  }
  return found.slice(0, 10);
})())"""

#: Table cells whose content is wider than the cell (it spills into the next
#: column or is cut off): scrollWidth > clientWidth.
CLIPPED_CELLS = r"""JSON.stringify([...document.querySelectorAll('td, th')].filter(
  e => e.checkVisibility() && e.scrollWidth > e.clientWidth + 1
).map(e => e.textContent.trim().slice(0, 40)).slice(0, 10))"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _need_chromium()
    workdir = tmp_path_factory.mktemp("widths")
    report = build_demo(workdir, users=2000)
    inputs = write_inputs(workdir / "evaluate", {"ranker_v1": 0.5, "popular": 0.1})
    evaluation = workdir / "evaluation.html"
    result = CliRunner().invoke(app, [*cli_args(inputs), "--format", "html", "-o", str(evaluation)])
    assert result.exit_code == 0, result.output
    board = workdir / "agreement.html"
    db = build_store(workdir / "board", users=600)
    result = CliRunner().invoke(app, ["agreement", "--db", db, "-o", str(board)])
    assert result.exit_code == 0, result.output
    forecast = workdir / "forecast.html"
    history = _write(workdir / "history.csv", _rows())
    args = ["forecast", "--history", str(history), *TYPED, "--format", "html", "-o", str(forecast)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return {"report": report, "evaluation": evaluation, "board": board, "forecast": forecast}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_no_column_is_clipped(
    pages: dict[str, Path], tmp_path: Path, name: str, width: int
) -> None:
    """Nothing past the window's edge, no table scrolled sideways; then, screen
    readers' text set aside, no text on other text and no cell wider than its column."""
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=width)
        page.open(pages[name])
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        found = json.loads(page.evaluate(CLIPPED))
        assert found == {"wide": [], "scrolled": []}
        assert int(page.evaluate("document.documentElement.scrollWidth")) <= width
        page.evaluate(HIDE_SR)
        assert json.loads(page.evaluate(OVERLAP)) == []
        assert json.loads(page.evaluate(CLIPPED_CELLS)) == []
    finally:
        browser.close()


def test_the_checks_see_an_overlap_and_a_clipped_cell(tmp_path: Path) -> None:
    """Not vacuous: two pieces of text placed on each other, and a cell too narrow
    for its unbreakable text, are found."""
    _need_chromium()
    html = tmp_path / "bad.html"
    html.write_text(
        "<!doctype html><body><p style='position:absolute;top:10px;left:10px'>first words</p>"
        "<p style='position:absolute;top:12px;left:14px'>second words</p>"
        "<table style='table-layout:fixed;width:80px;margin-top:80px'><tr>"
        "<td style='width:40px;white-space:nowrap'>a very long cell</td><td>b</td></tr></table>"
    )
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=800)
        page.open(html)
        # the long cell's text runs over the next cell's too
        found = json.loads(page.evaluate(OVERLAP))
        assert found == ["first words | second words", "a very long cell | b"]
        assert json.loads(page.evaluate(CLIPPED_CELLS)) == ["a very long cell"]
    finally:
        browser.close()
