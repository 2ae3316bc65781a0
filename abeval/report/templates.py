"""The Jinja environment both HTML pages render with.

Templates come from the top-level ``reports/`` folder (found through
:func:`abeval.resources.data_dir`, in a checkout and in a wheel): ``base.html.j2``
is the page shell (head, inlined ``report.css``, body) that ``report.html.j2``
and ``evaluate.html.j2`` extend; ``_macros.html.j2`` holds the shared pieces.
Autoescaping is on and an undefined name is an error. Numbers become text only
through the filters of :mod:`abeval.formatting`.
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from abeval.formatting import DIFFERENCE_FILTERS, FILTERS
from abeval.report.words import said
from abeval.resources import data_dir


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The experiment report's environment: templates from ``reports/``,
    autoescaping on, undefined names are errors, :data:`~abeval.formatting.FILTERS`
    registered, and ``said`` (a status code in words,
    :func:`abeval.report.words.said`)."""
    env = Environment(
        loader=FileSystemLoader(str(data_dir("reports"))),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    env.filters["said"] = said
    return env


@lru_cache(maxsize=1)
def evaluation_environment() -> Environment:
    """The evaluation page's environment: :func:`environment` overlaid with its
    own copy of the filters plus :data:`~abeval.formatting.DIFFERENCE_FILTERS`
    (and its own template cache), so the shared environment is untouched."""
    env = environment().overlay(cache_size=50)
    env.filters = {**env.filters, **DIFFERENCE_FILTERS}
    return env
