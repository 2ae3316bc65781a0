"""A program of experiments: from a history (``abeval program --history FILE``,
``program``) or from the store's experiments (``abeval program``, ``Store.program``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.api.opened import Opened
from abeval.api.options import keywords_checked, share
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.program_store import ProgramFilters
    from abeval.report.program_json import ShownProgram
    from abeval.report.program_store import ShownStoreProgram


@keywords_checked
def program(
    history: str | Path | Any, *, primary: str | None = None, alpha: float = 0.05
) -> ShownProgram:
    """The statistics of a program of experiments, as ``abeval program --history``:
    ``history`` is a CSV or Parquet file, a pandas DataFrame or an Arrow table with
    the columns ``experiment``, ``metric``, ``lift``, ``se`` (optional ``status``,
    ``date``, ``tag``). Each metric's prior of true effects by empirical Bayes,
    every experiment's shrunken lift and interval, and on the ``primary`` metric
    (default: the history's first) the win rate and the shipped experiments'
    impact, raw and de-biased, overall and per tag (docs/metrics.md#a-program-of-experiments).

    >>> result = abeval.program(history="docs/examples/program.csv")
    >>> result.overall.impact.raw, result.overall.impact.debiased
    >>> result.to_frame()[["experiment", "lift", "shrunk"]]
    """
    share("alpha", alpha)
    from abeval.analysis.program import build_program
    from abeval.analysis.program_history import read_program
    from abeval.report.program_json import ShownProgram

    name, entries = read_program(history)
    return ShownProgram.of(build_program(name, entries, primary=primary, alpha=alpha))


class Programs(Opened):
    """``Store.program``."""

    def program(
        self,
        *,
        tag: str | None = None,
        owner: str | None = None,
        since: str | date | None = None,
        until: str | date | None = None,
        primary: str | None = None,
        alpha: float = 0.05,
        reports: str | Path | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> ShownStoreProgram:
        """Every experiment of the store (those with ``tag``, owned by ``owner``,
        dated ``since`` through ``until``: the date of the decision when recorded,
        else of the last event) with its dates, users, status, the report's
        decision, its primary lift and interval under the decision's basis, its
        guardrails and the agreement of its off-policy estimate and recorded
        prediction; and the program's statistics as :func:`program` computes them
        from a history. Each experiment is read as ``store.report`` reads it, under
        its saved configuration; ``reports``: a folder to write each one's report
        page into (linked from the program's page); ``progress``: called with a
        line per experiment read.

        >>> program = store.program(tag="ranking")
        >>> program.overall.win_rate.value, program.overall.impact.raw
        """
        from abeval.analysis.program_store import store_program
        from abeval.api.reporting import report_options
        from abeval.report.program_store import ShownStoreProgram

        filters = program_filters(tag=tag, owner=owner, since=since, until=until)
        share("alpha", alpha)
        catalog = self.catalog()
        options = report_options(catalog=catalog)
        each = None
        if reports is not None:
            folder = Path(reports)

            def each(report: Any) -> str:
                from abeval import render

                page = folder / f"{report.experiment}.html"
                render.write(page, render.html(report), make_folders=True)
                return str(page)

        found = store_program(
            self._store, options, catalog, filters=filters, primary=primary, alpha=alpha,
            progress=progress, each=each,
        )  # fmt: skip
        return ShownStoreProgram.of(found)


@keywords_checked
def program_filters(
    *,
    tag: str | None = None,
    owner: str | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
) -> ProgramFilters:
    """:meth:`Store.program`'s filters, checked: a tag and an owner as
    :func:`~abeval.api.configuration.outcome_options` takes them, ``since`` and
    ``until`` dates (``YYYY-MM-DD``), ``since`` not after ``until``.

    >>> abeval.api.program_filters(tag="ranking", since="2026-01-01")
    """
    from abeval.analysis.program_store import ProgramFilters
    from abeval.api.configuration import outcome_options

    checked = outcome_options(owner=owner, tag=tag)
    first = _date("since", since)
    last = _date("until", until)
    if first is not None and last is not None and first > last:
        raise OptionError("until", until, "must not come before {since}", mentions=("since",))
    return ProgramFilters(
        tag=checked.tags[0] if checked.tags else None, owner=checked.owner, since=first, until=last
    )


def _date(parameter: str, value: str | date | None) -> date | None:
    if value is None or isinstance(value, date):
        return value.date() if isinstance(value, datetime) else value
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise OptionError(
            parameter, value, "give a date as YYYY-MM-DD, such as 2026-03-01", allowed="YYYY-MM-DD"
        ) from None


@keywords_checked
def program_inputs(
    *,
    history: str | Path | Any | None = None,
    tag: str | None = None,
    owner: str | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
    with_reports: str | Path | None = None,
    db: str | Path | None = None,
) -> None:
    """Which program the options ask for, checked: a ``history`` file's, or the
    store's (``abeval program``'s filters, ``with_reports`` and ``db`` read a
    store, so none goes with ``history``).

    >>> abeval.api.program_inputs(history="docs/examples/program.csv")
    """
    if history is None:
        return
    store_only = {"tag": tag, "owner": owner, "since": since, "until": until,
                  "with_reports": with_reports, "db": db}  # fmt: skip
    for name, value in store_only.items():
        if value is not None:
            raise OptionError(
                name, value, "reads the store's experiments; leave it out with {history}",
                mentions=("history",),
            )  # fmt: skip
