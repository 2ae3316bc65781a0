"""Pages at any width (issue 22, item 6): the experiment report and the
evaluation page, like the agreement board (tests/test_agreement_browser.py), at
800 and 1280 px in headless Chromium with every ``details`` opened: no visible
element passes the window's edge and no table scrolls sideways (a column hidden
until scrolled)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_agreement_browser import CLIPPED
from test_browser import Browser, Page, _need_chromium, build_demo
from test_evaluate_html import cli_args, write_inputs
from test_forecast_cli import TYPED, _rows, _write
from typer.testing import CliRunner

from abeval.cli import app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _need_chromium()
    workdir = tmp_path_factory.mktemp("widths")
    report = build_demo(workdir, users=2000)
    inputs = write_inputs(workdir / "evaluate", {"ranker_v1": 0.5, "popular": 0.1})
    evaluation = workdir / "evaluation.html"
    result = CliRunner().invoke(app, [*cli_args(inputs), "--format", "html", "-o", str(evaluation)])
    assert result.exit_code == 0, result.output
    forecast = workdir / "forecast.html"
    history = _write(workdir / "history.csv", _rows())
    args = ["forecast", "--history", str(history), *TYPED, "--format", "html", "-o", str(forecast)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return {"report": report, "evaluation": evaluation, "forecast": forecast}


@pytest.mark.parametrize("width", [800, 1280])
@pytest.mark.parametrize("name", ["report", "evaluation", "forecast"])
def test_no_column_is_clipped(
    pages: dict[str, Path], tmp_path: Path, name: str, width: int
) -> None:
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=width)
        page.open(pages[name])
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        found = json.loads(page.evaluate(CLIPPED))
        assert found == {"wide": [], "scrolled": []}
        assert int(page.evaluate("document.documentElement.scrollWidth")) <= width
    finally:
        browser.close()
