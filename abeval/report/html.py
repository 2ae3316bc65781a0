"""HTML rendering of the experiment report (placeholder until the full template lands)."""

from __future__ import annotations

import html
from pathlib import Path

from abeval.analysis.report_model import ExperimentReport
from abeval.report.text import render_text


def default_path(experiment: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in experiment)
    return Path("reports") / f"{safe}.html"


def render_html(report: ExperimentReport) -> str:
    body = html.escape(render_text(report))
    return f"<!doctype html><meta charset='utf-8'><title>abeval</title><pre>{body}</pre>\n"
