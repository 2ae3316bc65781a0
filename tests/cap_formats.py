"""What every format of a capped report must say of its one cap (the tests of
docs/metrics.md#outlier-capping)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()


def check_cap_formats(
    args: list[str], page: Path, variable: str, metrics: str, quantile: float, cap: float
) -> dict[str, Any]:
    """``abeval ARGS`` in JSON, text and HTML (written to ``page``): the one cap, its
    value (``cap``, shown with three decimals), the metrics it caps (``metrics`` as
    the text shows them) and the users above it; the JSON report, for more checks."""
    doc = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)
    (info,) = doc["caps"]
    assert (info["variable"], info["quantile"]) == (variable, quantile)
    assert info["cap"] == pytest.approx(cap, rel=1e-12)
    n = info["users_capped_total"]
    shown = f"{cap:.3f}"
    text = runner.invoke(app, [*args, "-f", "text"]).stdout
    q = f"{quantile:g}"
    assert f"capped {variable} at its {q} quantile, {shown} ({metrics}): {n} users" in text
    assert runner.invoke(app, [*args, "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert f"Per-user {variable} capped at its {q} quantile over both arms, {shown}" in html
    # the bias the cap brings, with its size from the data, beside the cap and each
    # capped metric's row (docs/metrics.md#outlier-capping)
    kept = info["lift_kept"]
    said = (
        f"the cap keeps about {kept:.0%} of a lift that scales every user's value: "
        f"a true +5.0% reads about {0.05 * kept:+.1%}"
    )
    assert f"; {said}" in text
    rows = html.count('data-field="capping-bias">' + said.capitalize().replace("'", "&#39;"))
    assert rows == len(doc["caps"][0]["metrics"]) * (len(doc["arms"]) - 1)
    return doc
