"""docs/notebook.ipynb, run as a data scientist would run it (issue 35, item 7).

The notebook is executed afresh by nbconvert in a Jupyter kernel, in a folder
holding a small store of the demo's shape (tests/notebook_store.py) under
``demo/``, and each code cell's outputs are checked against those saved in the
notebook, as the docs' commands are (tests/doc_blocks.py): line by line, an
elapsed time or a time within the run matching any such, and the run's folder
shown as nothing (``demo/demo.duckdb``, as it is in the saved outputs). The
executed notebook is then rendered to HTML by nbconvert (JupyterLab's own
styles), opened in headless Chromium at 1280 px and screenshot: no cell of a
table a result shows (``_repr_html_``) nor of a DataFrame is cut, no output
area scrolls sideways and nothing passes the window's edge.

``python tests/api/test_notebook.py`` runs the notebook on a new small store and
saves its outputs in docs/notebook.ipynb (after a change to the notebook or to
what it shows).
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbconvert")
pytest.importorskip("ipykernel")
pytest.importorskip("pandas")

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
#: A cell may take long on a loaded machine (the board resamples).
CELL_TIMEOUT = 900


def execute(folder: Path) -> Any:
    """docs/notebook.ipynb executed in ``folder`` (which holds ``demo/``), its
    outputs with ``folder`` shown as nothing."""
    from nbconvert.preprocessors import ExecutePreprocessor

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    runner = ExecutePreprocessor(timeout=CELL_TIMEOUT, kernel_name="python3")
    runner.preprocess(notebook, {"metadata": {"path": str(folder)}})
    prefix = f"{folder.resolve()}/"
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for key, value in _texts(output):
                _put(output, key, value.replace(prefix, ""))
    return notebook


def _texts(output: Any) -> list[tuple[str, str]]:
    """Each text of an output (a stream's, an error's, each text MIME type's)."""
    if output["output_type"] == "stream":
        return [("text", output["text"])]
    if output["output_type"] == "error":
        return [("traceback", "\n".join(output["traceback"]))]
    data = output.get("data", {})
    return [(mime, data[mime]) for mime in sorted(data) if mime.startswith("text/")]


def _put(output: Any, key: str, value: str) -> None:
    if key in ("text", "traceback"):
        output[key] = value if key == "text" else value.split("\n")
    else:
        output["data"][key] = value


def _outputs(cell: Any) -> list[tuple[str, str, str]]:
    """A cell's outputs as (kind, MIME type or stream, text), a stream's texts in a
    row joined (the kernel sends a stream in as many parts as it flushed)."""
    out: list[tuple[str, str, str]] = []
    for output in cell.get("outputs", []):
        for key, text in _texts(output):
            kind = output["output_type"]
            mime = output.get("name", key) if kind == "stream" else key
            if kind == "stream" and out and out[-1][:2] == (kind, mime):
                text = out.pop()[2] + text
            out.append((kind, mime, text))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, tuple[datetime, datetime]]:
    from notebook_store import build_small_demo

    folder = tmp_path_factory.mktemp("notebook")
    build_small_demo(folder)
    started = datetime.now(UTC)
    executed = execute(folder)
    return executed, folder, (started, datetime.now(UTC))


def test_the_notebook_walks_through_what_a_data_scientist_does() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    for step in (
        "abeval.open(DB)",  # open, held between calls
        "with abeval.open(",  # and in a with block
        "store.experiments()",
        'store.report("home-reco-v2")',
        ".to_frame()",
        "store.agreement(",
        "store.forecast(",
        "abeval.evaluate(truth=truth, runs=runs",  # DataFrames
        '"-m", "abeval", "experiments"',  # the CLI reads the store meanwhile
        "store.close()",
    ):
        assert step in code, step
    assert all(c.cell_type != "code" or c.outputs for c in notebook.cells), "a cell has no output"


def test_saved_outputs_are_a_fresh_run_s(run: tuple[Any, Path, tuple[datetime, datetime]]) -> None:
    from doc_blocks import mismatch

    executed, folder, window = run
    saved = nbformat.read(NOTEBOOK, as_version=4)
    assert len(saved.cells) == len(executed.cells)
    problems = []
    for number, (old, new) in enumerate(zip(saved.cells, executed.cells, strict=True), start=1):
        if old.cell_type != "code":
            continue
        shown, real = _outputs(old), _outputs(new)
        assert [x[:2] for x in shown] == [x[:2] for x in real], f"cell {number}'s outputs"
        for (kind, mime, text), (_, _, fresh) in zip(shown, real, strict=True):
            assert str(folder) not in fresh
            why = mismatch(tuple(text.splitlines()), fresh.splitlines(), window)
            if why is not None:
                problems.append(f"cell {number} ({kind} {mime}): {why}")
    assert problems == [], "\n".join(problems)


#: Every visible element inside the window, no output area scrolled sideways, no
#: table cell of an output cut (its text wider than its box).
MEASURE = """JSON.stringify({
  width: document.documentElement.scrollWidth,
  wide: [...document.querySelectorAll('body *')].filter(e => e.checkVisibility()).filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && (r.right > innerWidth + 1 || r.left < -1);
  }).map(e => e.tagName + '.' + (e.className.baseVal ?? e.className)).slice(0, 10),
  scrolled: [...document.querySelectorAll('.jp-OutputArea-output')].filter(
    e => e.scrollWidth > e.clientWidth + 1).length,
  tables: document.querySelectorAll('.jp-OutputArea-output table').length,
  cut: [...document.querySelectorAll('.jp-OutputArea-output td, .jp-OutputArea-output th')]
    .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent).slice(0, 10),
})"""


@pytest.mark.browser
def test_the_notebook_in_jupyter_s_styles_fits_1280_px(
    run: tuple[Any, Path, tuple[datetime, datetime]], tmp_path: Path
) -> None:
    from nbconvert import HTMLExporter
    from test_browser import Browser, Page, _need_chromium, ink

    _need_chromium()
    executed, _, _ = run
    exporter = HTMLExporter(template_name="lab")
    page_html, _ = exporter.from_notebook_node(executed)
    # The page's scripts from the web (MathJax, require.js) draw nothing here: left
    # out, so that the test needs no network (mermaid's loads only for a diagram).
    page_html = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", page_html)
    assert not re.search(r"<script[^>]*\bsrc=\"https?:", page_html)
    path = tmp_path / "notebook.html"
    path.write_text(page_html, encoding="utf-8")
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser, width=1280)
        page.open(path)
        found = json.loads(page.evaluate(MEASURE))
        height = float(page.evaluate("document.body.scrollHeight"))
        shot = page.screenshot(0, 0, 1280, min(height, 8000))
    finally:
        browser.close()
    (tmp_path / "notebook.png").write_bytes(shot)
    # the report, the board, the forecast and five DataFrames, laid out in the window
    assert found["tables"] == 8
    assert (found["width"], found["wide"], found["scrolled"], found["cut"]) == (1280, [], 0, [])
    inked, colours = ink(shot)
    assert inked > 0.02 and len(colours) > 3  # a page was painted, not a blank one


if __name__ == "__main__":  # save a fresh run's outputs in docs/notebook.ipynb
    import tempfile

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from notebook_store import build_small_demo

    with tempfile.TemporaryDirectory(prefix="abeval-notebook-") as scratch:
        build_small_demo(Path(scratch))
        fresh = execute(Path(scratch))
    for cell in fresh.cells:
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(fresh, NOTEBOOK)
    print(f"wrote {NOTEBOOK}")
