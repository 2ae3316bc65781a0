"""The program of a store's experiments (``abeval program`` without ``--history``)
as text and JSON, and as the API returns it (:class:`ShownStoreProgram`).

The JSON is the history's document (:func:`abeval.report.program_json.program_document`:
``program`` and ``experiments``, one object per experiment and metric) with, in
``program``, the ``filters`` and ``min_experiments``, each entry of
``experiments`` completed with the store's fields of its experiment (dates,
users, what was decided, the report's decision and its words, the metric's
``basis`` and ``interval``, guardrails, agreement, report page), and
``store_experiments``: one object per experiment of the store, those without a
lift (and the ``problem`` that kept their report from being made) included. Each
of these has ``interleaving``: the interleaved runs linked to the A/B test (or, on
an interleaved run's own row, the run itself), each with ``experiment``,
``interleaving_of``, ``team_a``, ``team_b``, ``delta`` (Δ_AB credited by clicks),
``interval``, ``p_value``, ``decision``, ``preferred``, ``preference_words`` and
``users``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from abeval.analysis.program_store import InterleavedRun, StoredExperiment, StoreProgram
from abeval.formatting import NA, interval, pct, signed, signed_interval
from abeval.report import frames
from abeval.report.experiment_text import status_text
from abeval.report.program_json import program_document
from abeval.report.program_text import summary_lines
from abeval.report.shown import Shown
from abeval.report.words import said

#: The widest the text's tables are (columns of a terminal).
WIDTH = 100


def decision_words(code: str | None) -> str:
    """``keep_running`` → ``keep running``; ``no report`` when there is none."""
    return said(code) if code else "no report"


def preference_words(run: InterleavedRun) -> str:
    """``candidate preferred``, ``no preference yet``, or why Δ_AB is undetermined."""
    s = run.section
    if s.decision == "ranker_preferred" and s.preferred is not None:
        return f"{s.preferred} preferred"
    if s.decision == "no_preference":
        return "no preference yet"
    return said(s.clicks.status, s.clicks.message)


def row_decision_words(row: StoredExperiment) -> str:
    """The decision's words; an interleaved run's own row says its preference."""
    run = row.run
    return preference_words(run) if run is not None else decision_words(row.decision)


def run_cells(run: InterleavedRun) -> tuple[str, str, str, str]:
    """An interleaved run's (preference, users, Δ_AB, interval) as the tables show them."""
    c = run.section.clicks
    users = f"{run.users:,}" if run.users is not None else NA
    return preference_words(run), users, f"Δ_AB {signed(c.delta)}", signed_interval(c.interval)


def run_json(run: InterleavedRun) -> dict[str, Any]:
    """An interleaved run of ``store_experiments``' ``interleaving`` (module docstring)."""
    s, c = run.section, run.section.clicks
    return {
        "experiment": run.experiment,
        "interleaving_of": run.of,
        "team_a": s.team_a,
        "team_b": s.team_b,
        "delta": c.delta,
        "interval": list(c.interval) if c.interval is not None else None,
        "p_value": c.p_value,
        "decision": s.decision,
        "preferred": s.preferred,
        "preference_words": preference_words(run),
        "users": run.users,
    }


def guardrail_words(guardrails: tuple[tuple[str, str], ...]) -> str:
    """``passed`` when every guardrail passed, else how many did not by their
    reading (``1 worse, 1 unchecked``: passed, worse, underpowered, unchecked; the
    report names them); ``none`` when the experiment has no guardrail."""
    if not guardrails:
        return "none"
    counts: dict[str, int] = {}
    for _, state in guardrails:
        counts[state] = counts.get(state, 0) + 1
    if set(counts) == {"passed"}:
        return "passed"
    return ", ".join(f"{n} {state}" for state, n in counts.items() if state != "passed")


def agreement_parts(row: StoredExperiment, metric: str) -> tuple[str, ...]:
    """``("off-policy agree", "ndcg@10 inconclusive")``: the off-policy estimate's
    and the recorded prediction's agreement with the online lift of ``metric``,
    those that exist (a dash when neither does)."""
    parts = [f"off-policy {row.off_policy}"] if row.off_policy else []
    predicted = row.prediction(metric)
    if predicted is not None:
        parts.append(f"{predicted[0]} {predicted[1]}")
    return tuple(parts) or ("—",)


def store_row(row: StoredExperiment, metric: str, page: str | None) -> dict[str, Any]:
    """The store's fields of one experiment, as JSON."""
    o = row.outcome
    shown = row.lift(metric)
    predicted = row.prediction(metric)
    return {
        "experiment": row.experiment,
        "first_day": row.first_day,
        "last_day": row.last_day,
        "date": row.date or None,
        "users": row.users,
        "owner": o.owner,
        "hypothesis": o.hypothesis,
        "tags": list(o.tags),
        "status": o.status,
        "decided_on": o.decided_on,
        "arm": row.arm,
        "decision": row.decision,
        "decision_words": row_decision_words(row),
        "reason": row.reason,
        "metric": metric if shown is not None else None,
        "lift": shown.lift if shown is not None else None,
        "se": shown.se if shown is not None else None,
        "interval": list(shown.interval) if shown and shown.interval else None,
        "basis": shown.basis if shown is not None else None,
        "guardrails": [{"metric": m, "guardrail": g} for m, g in row.guardrails],
        "off_policy_agreement": row.off_policy,
        "predicted": None
        if predicted is None
        else {"offline_metric": predicted[0], "agreement": predicted[1]},
        "report": page,
        "problem": row.problem,
        "interleaving": [run_json(r) for r in row.interleaved],
    }


def store_program_document(p: StoreProgram) -> dict[str, Any]:
    """The JSON document of ``p`` (module docstring)."""
    document = program_document(p)
    f = p.filters
    document["program"]["filters"] = {
        "tag": f.tag,
        "owner": f.owner,
        "since": f.since.isoformat() if f.since else None,
        "until": f.until.isoformat() if f.until else None,
    }
    document["program"]["min_experiments"] = p.min_experiments
    document["program"]["store"] = p.store
    pages = dict(p.pages)
    rows = {r.experiment: r for r in p.stored}
    for entry in document["experiments"]:
        store = store_row(rows[entry["experiment"]], entry["metric"], None)
        entry.update(
            {k: store[k] for k in ("interval", "basis", "first_day", "last_day", "users", "owner",
                                   "decided_on", "decision", "decision_words")},
            report=pages.get(entry["experiment"]),
        )  # fmt: skip
    document["store_experiments"] = [
        store_row(r, p.primary, pages.get(r.experiment)) for r in p.stored
    ]
    return document


def _days(first: str | None, last: str | None) -> str:
    """``2025-01-13..02-02``: the first and the last day of events (the year once
    when both share it)."""
    if first is None or last is None:
        return NA
    return f"{first}..{last[5:] if last[:4] == first[:4] else last}"


def _wrap(line: str) -> list[str]:
    """A line of at most :data:`WIDTH` columns, its continuation indented."""
    import textwrap

    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], left: int) -> list[str]:
    """Columns padded to their widest cell; the first ``left`` aligned left."""
    table = [header, *rows]
    widths = [max(len(r[c]) for r in table) for c in range(len(header))]
    return [
        "  ".join(
            cell.ljust(w) if c < left else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


def store_program_text(p: StoreProgram) -> str:
    """The program's statistics (as the history's text says them), then two
    tables of the store's experiments: what was decided with the primary lift,
    and when, by whom and how the offline evidence agreed."""
    summary = summary_lines(p, "experiments with a lift")
    lines = [wrapped for line in summary for wrapped in _wrap(line)]
    shrunk = {r.experiment: r.shrunk for r in p.lifts if r.metric == p.primary}
    decided: list[tuple[str, ...]] = []
    when: list[tuple[str, ...]] = []
    for r in p.stored:
        shown = r.lift(p.primary)
        post = shrunk.get(r.experiment)
        status = status_text(r.outcome.status, None)
        if r.run is not None:  # an interleaved run of its own: Δ_AB, not a lift
            decided.append((r.experiment, status, *run_cells(r.run), NA, NA))
        else:
            decided.append((
                r.experiment, status, decision_words(r.decision),
                f"{r.users:,}" if r.users is not None else NA,
                pct(shown.lift) if shown else NA,
                interval(shown.interval) if shown else NA,
                pct(post.mean) if post else NA,
                guardrail_words(r.guardrails) if r.decision else NA,
            ))  # fmt: skip
        for run in r.interleaved:
            if run.experiment != r.experiment:
                decided.append((f"  ↳ {run.experiment}", "interleaved", *run_cells(run), "", ""))
        predicted = r.prediction(p.primary)
        when.append((r.experiment, _days(r.first_day, r.last_day), r.outcome.decided_on or "",
                     r.outcome.owner or "", ", ".join(r.outcome.tags), r.off_policy or "—",
                     f"{predicted[0]} {predicted[1]}" if predicted else "—"))  # fmt: skip
    head = ("experiment", "status", "decision", "users", "lift", "interval", "shrunk",
            "guardrails")  # fmt: skip
    lines += ["", f"{p.primary} per experiment, under each decision's basis:"]
    lines += _table(head, decided, 3)
    if any(r.interleaved for r in p.stored):
        lines += [
            "Δ_AB: an interleaved run's preference for its ranker A over the baseline B "
            "(clicks; ↳ under the A/B test of the same rankers); not in the statistics."
        ]
    lines += [""]
    heads = ("experiment", "events", "decided", "owner", "tags", "off-policy", "predicted")
    lines += _table(heads, when, 7)
    problems = [f"{r.experiment}: {r.problem}" for r in p.stored if r.problem]
    if problems:
        lines += ["", "Not read:", *(f"  {x}" for x in problems)]
    if p.pages:
        folder = p.pages[0][1].rsplit("/", 1)[0]
        lines += ["", f"Reports written: {len(p.pages)} pages in {folder}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, repr=False)
class ShownStoreProgram(Shown, StoreProgram):
    """A store's program as the API returns it: one row per experiment of the
    store in ``to_frame()`` (``to_dict()`` is the JSON).

    >>> store.program().to_frame()[["experiment", "status", "decision", "lift"]]
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "experiment", "status", "decision", "lift", "interval_low", "interval_high",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (module docstring).

        >>> store.program().to_dict()["program"]["win_rate"]
        """
        return store_program_document(self)

    def rows(self) -> list[frames.Row]:
        """One row per experiment of the store, its interval split in two columns.

        >>> store.program().rows()[0]["decision"]
        """
        out = []
        for r in store_program_document(self)["store_experiments"]:
            pair = r.pop("interval") or (None, None)
            r["tags"] = ", ".join(r["tags"])
            r["guardrails"] = guardrail_words(tuple((g["metric"], g["guardrail"])
                                                    for g in r["guardrails"]))  # fmt: skip
            r["predicted"] = None if r["predicted"] is None else r["predicted"]["agreement"]
            runs = [f"{x['experiment']}: {x['preference_words']}" for x in r["interleaving"]]
            r["interleaving"] = "; ".join(runs) or None
            out.append({**r, "interval_low": pair[0], "interval_high": pair[1]})
        return out

    def headline(self) -> str:
        """The ``repr``'s first line: the count, the win rate and the impact.

        >>> store.program().headline()
        """
        i, w = self.overall.impact, self.overall.win_rate
        won = f"{w.wins} of {w.decided} decided won" if w.decided else "none decided"
        return (
            f"ProgramReport: {len(self.stored)} experiments of the store; {won}; {self.primary} "
            f"shipped {pct(i.raw)} raw, {pct(i.debiased)} de-biased"
        )
