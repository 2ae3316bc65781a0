"""What a store records besides events: team-defined metrics (``Store.metrics``,
``Store.add_metrics``), tables read in place (``Store.sources``, ``Store.add_source``,
``Store.remove_source``, ``source_mapping``) and each experiment's settings and saved
configuration (``Store.settings``, ``Store.set``, ``Store.unset``, ``experiment_config``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.api.opened import Opened
from abeval.api.options import choice, forwards, given, keywords_checked, window
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.experiment_config import ExperimentConfig
    from abeval.analysis.experiment_record import ExperimentRecord
    from abeval.analysis.metric_records import Added, MetricRow
    from abeval.choices import ExperimentStatus
    from abeval.store.experiment_outcomes import OutcomeChange
    from abeval.store.experiments import ExperimentSettings, TargetsRecorded
    from abeval.store.source_mapping import Mapping as Mapping_
    from abeval.store.sources import Source, SourceCheck


class Configuring(Opened):
    """The store's records of metrics, sources and experiment settings."""

    def metrics(self) -> tuple[MetricRow, ...]:
        """Every online metric, the built-in ones and then the store's team-defined
        ones, each with its definition.

        >>> [m.name for m in store.metrics()]
        """
        from abeval.analysis.metric_records import list_metrics

        return list_metrics(self._store)

    def add_metrics(self, file: str | Path) -> Added:
        """Record the team-defined metrics a TOML file defines (all, or none when one
        is wrong).

        >>> store.add_metrics("team_metrics.toml")
        """
        from abeval.analysis.metric_records import add_metrics

        with self._writing() as store:
            return add_metrics(store, Path(file))

    def remove_metric(self, name: str) -> MetricRow:
        """Forget the team-defined metric ``name``; the metric as it was recorded.

        >>> store.remove_metric("add_to_cart_rate").name
        'add_to_cart_rate'
        """
        from abeval.analysis.metric_records import remove_metric

        with self._writing() as store:
            return remove_metric(store, name)

    def sources(self) -> list[Source]:
        """The tables read in place: name, table and mapping.

        >>> [s.name for s in store.sources()]
        """
        from abeval.store.sources import list_sources

        return list_sources(self._store)

    def add_source(
        self,
        name: str,
        checked: Mapping_ | None = None,
        *,
        table: str,
        replace: bool = False,
        **mapping: str | None,
    ) -> SourceCheck:
        """Read ``table`` in place as the source ``name``: check the mapping against
        it and record it (``replace``: the mapping of an existing source). The
        mapping as :func:`source_mapping` takes it, or the mapping it ``checked``.

        >>> store.add_source("clicks", table="raw.events", columns="user_id=uid,ts=event_time")
        """
        from abeval.store.sources import add_source

        if checked is not None and mapping:
            raise TypeError("give either a checked mapping or its parts, not both")
        if checked is None:
            checked = source_mapping(table=table, **mapping)
        with self._writing() as store:
            return add_source(store, name, table.strip(), checked, replace_existing=replace)

    def remove_source(self, name: str) -> Source:
        """Forget the source ``name`` (its table is not touched); the source forgotten.

        >>> store.remove_source("clicks")
        """
        from abeval.store.sources import remove_source

        with self._writing() as store:
            return remove_source(store, name)

    def settings(self, experiment: str) -> tuple[ExperimentSettings, ExperimentConfig]:
        """What is recorded for ``experiment``: its settings (arms, control, split,
        window) and its saved configuration.

        >>> settings, config = store.settings("home-reco-v2")
        """
        from abeval.analysis.config_recording import show

        with self._refusing_sources(experiment):
            return show(self._store, experiment)

    def experiment(self, experiment: str) -> ExperimentRecord:
        """Everything recorded for ``experiment`` (what ``abeval experiment show``
        prints): settings, saved configuration, what was decided (owner,
        hypothesis, tags, status, date), the target probabilities recorded and the
        evaluations recorded; ``to_dict()`` is its JSON.

        >>> store.experiment("home-reco-v2").outcome.status
        """
        from abeval.analysis.experiment_record import read_record

        with self._refusing_sources(experiment):
            return read_record(self._store, experiment)

    @forwards("abeval.api.configuration:experiment_config")
    def set(
        self,
        experiment: str,
        checked: ExperimentConfig | CheckedSettings | None = None,
        *,
        control: str | None = None,
        split: str | None = None,
        window_from: str | datetime | None = None,
        window_to: str | datetime | None = None,
        target_propensities: str | Path | None = None,
        owner: str | None = None,
        hypothesis: str | None = None,
        tag: str | Sequence[str] | None = None,
        status: ExperimentStatus | None = None,
        decided_on: str | date | None = None,
        **options: Any,
    ) -> tuple[ExperimentSettings, ExperimentConfig, TargetsRecorded | None]:
        """Record ``experiment``'s control arm, expected split (``control=50,treatment=50``),
        analysis window, target probabilities (a file), the recordable options
        (:func:`experiment_config` takes them, or ``checked`` already; or ``checked``
        is all of it from :func:`checked_settings`) and what was decided
        (:func:`outcome_options`: owner, hypothesis, tags added to those recorded,
        status, the date of the decision), all or nothing. Returns the settings and
        the configuration now recorded, and what was recorded of the target's
        probabilities; :meth:`experiment` shows the rest.

        >>> store.set("home-reco-v2", control="control", primary="ctr", alpha=0.01)
        >>> store.set("home-reco-v2", owner="ana", tag=["ranking"], status="shipped",
        ...           decided_on="2026-03-20")
        """
        from abeval.analysis.config_recording import record

        settings = (control, split, window_from, window_to, target_propensities,
                    owner, hypothesis, tag, status, decided_on)  # fmt: skip
        if isinstance(checked, CheckedSettings):
            if options or any(x is not None for x in settings):
                raise TypeError("give either checked settings or keyword settings, not both")
            s = checked
        else:
            if checked is not None and options:
                raise TypeError("give either checked options or keyword options, not both")
            config = checked if checked is not None else experiment_config(**options)
            given: dict[str, Any] = dict(zip((*SETTINGS, *OUTCOME), settings, strict=True))
            s = checked_settings(config, **given)
        targets = None
        if s.target_propensities is not None:
            from abeval.analysis.ope_file import target_file

            targets = target_file(s.target_propensities)
        recorded = (s.control, s.split, s.window_from, s.window_to)
        with self._refusing_sources(experiment), self._writing() as store:
            return record(store, experiment, recorded, s.config, targets=targets, outcome=s.outcome)

    def unset(
        self, experiment: str, names: Iterable[str]
    ) -> tuple[ExperimentSettings, ExperimentConfig]:
        """Forget the recorded settings ``names`` (``control``, ``split``, ``window``,
        a recordable option such as ``guardrails``, or what was decided: ``owner``,
        ``hypothesis``, ``tags``, ``status``, ``decided_on``) of ``experiment``; the
        settings and the configuration left.

        >>> store.unset("home-reco-v2", ["alpha", "window"])
        """
        from abeval.analysis.config_recording import record
        from abeval.analysis.experiment_config import ExperimentConfig

        removed = unset_options(names)
        with self._refusing_sources(experiment), self._writing() as store:
            settings, config, _ = record(
                store, experiment, (None, None, None, None), ExperimentConfig(), removed
            )
        return settings, config

    def _refusing_sources(self, experiment: str) -> Any:
        """A context in which an unknown ``experiment`` that a source reads in
        place is refused as such (its settings cannot be recorded)."""
        from contextlib import contextmanager

        from abeval.errors import NotFoundError
        from abeval.store.sources import refuse_settings

        @contextmanager
        def refusing() -> Any:
            try:
                yield
            except NotFoundError:
                refuse_settings(self._store, experiment)
                raise

        return refusing()


#: The settings :meth:`Store.set` records besides the options, in its parameters' order.
SETTINGS = ("control", "split", "window_from", "window_to", "target_propensities")
#: What was decided about the experiment (:func:`outcome_options`), in :meth:`Store.set`'s order.
OUTCOME = ("owner", "hypothesis", "tag", "status", "decided_on")


@dataclass(frozen=True)
class CheckedSettings:
    """What :meth:`Store.set` records, checked without a store by
    :func:`checked_settings`: the recordable options, the control arm, the split,
    the analysis window's bounds (naive UTC), the target probabilities' file and
    what was decided (None: nothing given)."""

    config: ExperimentConfig
    control: str | None
    split: str | None
    window_from: datetime | None
    window_to: datetime | None
    target_propensities: str | Path | None
    outcome: OutcomeChange | None = None


@keywords_checked
def checked_settings(
    config: ExperimentConfig | None = None,
    *,
    control: str | None = None,
    split: str | None = None,
    window_from: str | datetime | None = None,
    window_to: str | datetime | None = None,
    target_propensities: str | Path | None = None,
    owner: str | None = None,
    hypothesis: str | None = None,
    tag: str | Sequence[str] | None = None,
    status: str | None = None,
    decided_on: str | date | None = None,
) -> CheckedSettings:
    """:meth:`Store.set`'s options checked without a store, once (the CLI checks
    them before it opens one and hands them to ``store.set`` as they are):
    something to record (a setting, an option of ``config`` from
    :func:`experiment_config`, or what was decided, checked by
    :func:`outcome_options`), and the analysis window.

    >>> checked = abeval.api.checked_settings(control="control", window_from="2026-03-01")
    >>> store.set("home-reco-v2", checked)
    """
    from abeval.analysis.experiment_config import ExperimentConfig

    outcome = outcome_options(
        owner=owner, hypothesis=hypothesis, tag=tag, status=status, decided_on=decided_on
    )
    settings = (control, split, window_from, window_to, target_propensities)
    if (
        all(x is None for x in settings)
        and (config is None or not config.recorded())
        and not outcome.given()
    ):
        raise OptionError(
            "",
            None,
            "give {control}, {split}, {window_from}, {window_to}, {target_propensities} "
            "or an option to record",
            mentions=SETTINGS,
        )
    start, end = window(window_from, window_to)
    given_config = config if config is not None else ExperimentConfig()
    return CheckedSettings(
        given_config, control, split, start, end, target_propensities,
        outcome if outcome.given() else None,
    )  # fmt: skip


@keywords_checked
@forwards("abeval.api.configuration:checked_settings")
def set_options(
    config: ExperimentConfig | None = None, **settings: Any
) -> tuple[datetime | None, datetime | None]:
    """The checks of :func:`checked_settings` (which takes the same arguments); the
    analysis window's bounds they return, as naive UTC datetimes.

    >>> abeval.api.set_options(window_from="2026-03-01", window_to="2026-03-07")
    (datetime.datetime(2026, 3, 1, 0, 0), datetime.datetime(2026, 3, 8, 0, 0))
    """
    s = checked_settings(config, **settings)
    return s.window_from, s.window_to


@keywords_checked
def unset_options(names: Iterable[str]) -> tuple[str, ...]:
    """:meth:`Store.unset`'s ``names`` checked without a store: at least one, each a
    setting (``control``, ``split``, ``window``) or a recordable option
    (``guardrails``, ``caps`` ...).

    >>> abeval.api.unset_options(["alpha", "window"])
    ('alpha', 'window')
    """
    from abeval.analysis.experiment_config import OPTIONS
    from abeval.store.experiment_outcomes import OUTCOME_FIELDS

    removed = tuple(names)
    reason = "name at least one setting to remove, such as {guardrails}"
    given("names", bool(removed), reason, mentions=("guardrails",))
    for name in removed:
        choice("names", name, ("control", "split", "window", *OPTIONS, *OUTCOME_FIELDS))
    return removed


@keywords_checked
def outcome_options(
    *,
    owner: str | None = None,
    hypothesis: str | None = None,
    tag: str | Sequence[str] | None = None,
    status: str | None = None,
    decided_on: str | date | None = None,
) -> OutcomeChange:
    """What was decided about an experiment, as :meth:`Store.set` records it,
    checked: an owner and a hypothesis not blank, tags (each not blank, without
    ``;`` or ``,``), a status (running, shipped, rolled_back, abandoned) and the
    date of the decision (``YYYY-MM-DD``; not with the status running).

    >>> abeval.api.outcome_options(status="shipped", decided_on="2026-03-20", tag="ranking")
    """
    from abeval.choices import EXPERIMENT_STATUSES
    from abeval.store.experiment_outcomes import OutcomeChange

    for name, value in (("owner", owner), ("hypothesis", hypothesis)):
        if value is not None:
            given(name, bool(value.strip()), f"give the experiment's {name}, not a blank")
    tags = (tag,) if isinstance(tag, str) else tuple(tag or ())
    for t in tags:
        if not t.strip() or ";" in t or "," in t:
            raise OptionError(
                "tag", t, "give one tag per option, not blank and without ; or , "
                "(repeat the option for several tags)", allowed="a word such as ranking",
            )  # fmt: skip
    if status is not None:
        choice("status", status, EXPERIMENT_STATUSES)
    day = None
    if decided_on is not None:
        day = _day(decided_on)
        if status == "running":
            raise OptionError(
                "decided_on", decided_on, "a running experiment is not decided; give {status} "
                "shipped, rolled_back or abandoned with the date of the decision",
                mentions=("status",),
            )  # fmt: skip
    return OutcomeChange(
        owner=owner.strip() if owner is not None else None,
        hypothesis=hypothesis.strip() if hypothesis is not None else None,
        tags=tuple(dict.fromkeys(t.strip() for t in tags)),
        status=status,
        decided_on=day,
    )


def _day(value: str | date) -> str:
    """A date as ``YYYY-MM-DD``; an OptionError on ``decided_on`` for anything else."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    try:
        return date.fromisoformat(str(value).strip()).isoformat()
    except ValueError:
        raise OptionError(
            "decided_on", value, "give the date of the decision as YYYY-MM-DD, such as "
            "2026-03-20", allowed="YYYY-MM-DD",
        ) from None  # fmt: skip


@keywords_checked
def source_mapping(
    *,
    table: str,
    columns: str | None = None,
    event_types: str | None = None,
    experiment_column: str | None = None,
    experiment: str | None = None,
    attributes: str | None = None,
) -> Mapping_:
    """A source's mapping, checked, written as ``abeval source add`` takes it: the
    table's column for each field named otherwise (``columns="user_id=uid,ts=t"``),
    its value for each event type named otherwise (``event_types="click=clk"``), the
    column naming each row's experiment or the table's one ``experiment``, and the
    other columns to keep as attributes (``attributes="country,device=dev"``).

    >>> abeval.api.source_mapping(table="raw.events", columns="user_id=uid")
    """
    from abeval.store.source_mapping import (
        Mapping,
        parse_attributes,
        parse_columns,
        parse_event_types,
    )

    given("table", bool(table.strip()), "name a table or files")
    mapped = parse_columns(columns)
    if experiment_column is not None:
        given(
            "experiment_column",
            "experiment" not in mapped,
            "give the experiment column once: here or in --map experiment=COLUMN",
        )
        given("experiment_column", bool(experiment_column.strip()), "name a column")
        mapped["experiment"] = experiment_column.strip()
    if experiment is not None:
        given("experiment", bool(experiment.strip()), "name the table's experiment")
        given(
            "experiment",
            "experiment" not in mapped,
            "a table has an experiment column or one experiment, not both",
        )
    return Mapping(
        columns=mapped,
        event_types=parse_event_types(event_types),
        experiment=experiment.strip() if experiment is not None else None,
        attributes=parse_attributes(attributes),
    )


@keywords_checked
@forwards("abeval.analysis.experiment_config:parse_config")
def experiment_config(
    *, cap: Sequence[str] | Mapping[str, float] | None = None, **options: Any
) -> ExperimentConfig:
    """The recordable options (``abeval experiment set``: ``primary``, ``secondary``,
    ``guardrails``, ``cap``, ``cuped_days``, ``target_mde``, ``alpha``,
    ``correction``, ``plan_users``, ``plan_days``, ``interleaving_of``) as given, None
    where not given, parsed and checked: an :class:`OptionError` names the first invalid one.

    >>> abeval.api.experiment_config(primary="ctr", guardrails="aov:0.02", alpha=0.01)
    """
    from abeval.analysis.experiment_config import parse_config

    return parse_config(caps=cap or [], **options)
