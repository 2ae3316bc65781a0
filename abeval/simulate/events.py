"""The event log itself: users drawn block by block, their requests, the ranked
lists the policy shows, the clicks and purchases they make, and the rows of the
event format these become (see :mod:`abeval.simulate` for the model)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from abeval.simulate.columns import labels, strings
from abeval.simulate.config import SimulationConfig
from abeval.simulate.model import Model, expected_rows_per_user, model_of

EVENT_TYPES: tuple[str, ...] = ("exposure", "impression", "click", "purchase")
ROWS_PER_BLOCK = 1_000_000  # users are simulated in blocks of about this many rows

_MS_PER_DAY = 86_400_000
_HOUR = 3_600_000
_CLICK_DELAY_MEAN, _CLICK_DELAY_MAX = 20_000, 600_000
_PURCHASE_DELAY_MEAN, _PURCHASE_DELAY_MAX = 480_000, 2_700_000
_EXPOSURE, _IMPRESSION, _CLICK, _PURCHASE = range(4)


def simulate(config: SimulationConfig | None = None) -> pa.Table:
    """Simulate an experiment's event log (see :mod:`abeval.simulate`)."""
    config = config or SimulationConfig()
    return pa.concat_tables(list(iter_event_batches(config)))


def iter_event_batches(config: SimulationConfig) -> Iterator[pa.Table]:
    """The simulation as a sequence of tables (blocks of users, about a million
    rows each, each sorted by time). Their concatenation is :func:`simulate`."""
    model = model_of(config)
    start = _Offsets(0, 0, 0)
    for block, n_users in enumerate(_block_sizes(config)):
        table, n_requests = _simulate_block(model, block, n_users, start)
        start = _Offsets(
            start.user + n_users, start.request + n_requests, start.row + table.num_rows
        )
        yield table


def event_schema(config: SimulationConfig) -> pa.Schema:
    """The Arrow schema of :func:`simulate`'s output for ``config``."""
    fields = [
        pa.field("experiment", pa.string(), nullable=False),
        pa.field("arm", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("request_id", pa.string()),
        pa.field("item_id", pa.string()),
        pa.field("position", pa.int32()),
        pa.field("value", pa.float64()),
    ]
    if config.with_event_ids:
        fields.append(pa.field("event_id", pa.string(), nullable=False))
    if config.with_propensities:
        fields.append(pa.field("propensity", pa.float64()))
    fields += [pa.field(column, pa.string(), nullable=False) for column in config.segments]
    return pa.schema(fields)


def _block_sizes(config: SimulationConfig) -> list[int]:
    per_block = max(1_000, int(ROWS_PER_BLOCK / expected_rows_per_user(config)))
    full, rest = divmod(config.users, per_block)
    return [per_block] * full + ([rest] if rest else [])


@dataclass(frozen=True)
class _Offsets:
    """Where a block's numbering starts: its first user, request and row."""

    user: int
    request: int
    row: int


@dataclass(frozen=True)
class _Window:
    """The experiment window in milliseconds since the epoch."""

    start: int
    end: int


@dataclass(frozen=True)
class _Users:
    """One block's users, by index in the block."""

    arm: np.ndarray  # arm index
    segments: dict[str, np.ndarray]  # per segment column, the index of the user's value
    theta: np.ndarray  # click propensity
    n_pre: np.ndarray  # requests before exposure
    n_post: np.ndarray  # requests from exposure on (the first is the exposure's)
    exposure: np.ndarray  # ms


@dataclass(frozen=True)
class _Requests:
    """The block's requests, grouped by user: pre-period, exposure's, later ones."""

    user: np.ndarray  # user index
    ts: np.ndarray  # ms
    policy: np.ndarray  # arm index of the ranking that served it (control before exposure)


@dataclass(frozen=True)
class _Lists:
    """The ranked list of each request, in the order shown."""

    items: np.ndarray  # (request, slot): item popularity rank
    relevant: np.ndarray  # (request, slot): bool
    n_relevant: np.ndarray  # relevant candidates per request


@dataclass(frozen=True)
class _Actions:
    """The clicks (request and slot of each) and the purchases that follow some."""

    click_req: np.ndarray
    click_slot: np.ndarray
    click_ts: np.ndarray
    buy: np.ndarray  # indices of the clicks that led to a purchase
    buy_ts: np.ndarray
    value: np.ndarray  # revenue of each purchase


@dataclass(frozen=True)
class _Rows:
    """Every event row of the block, in time order, by what it refers to."""

    kind: np.ndarray  # _EXPOSURE ... _PURCHASE
    request: np.ndarray  # request index (0 for an exposure)
    slot: np.ndarray  # 0-based position in the list (0 for an exposure)
    user: np.ndarray  # user index
    ts: np.ndarray  # ms
    value: np.ndarray  # revenue (NaN but on purchases)


def _simulate_block(model: Model, block: int, n: int, start: _Offsets) -> tuple[pa.Table, int]:
    """The ``block``-th block of ``n`` users as a table in time order, and the
    number of requests it made. Each block draws from its own random stream."""
    c = model.config
    rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(block,)))
    start_ms = int(c.start.timestamp() * 1000)
    window = _Window(start_ms, start_ms + c.days * _MS_PER_DAY)
    users = _draw_users(rng, model, n, window)
    requests = _draw_requests(rng, c, users, window)
    lists = _rank(rng, model, requests)
    actions = _behave(rng, model, users, requests, lists)
    rows = _rows(users, requests, actions, c.list_length)
    return _table(model, users, requests, lists, rows, start), requests.user.size


def _choice(rng: np.random.Generator, n: int, probabilities: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(probabilities / probabilities.sum())
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(n), side="right").astype(np.int32)


def _draw_users(rng: np.random.Generator, model: Model, n: int, window: _Window) -> _Users:
    """Arm, segments, click propensity θ, activity and exposure time of each user."""
    c = model.config
    arm = _choice(rng, n, np.asarray(c.shares))
    segments = {
        column: _choice(rng, n, np.fromiter(values.values(), dtype=np.float64))
        for column, values in c.segments.items()
    }
    m, k = model.theta_mean, c.user_propensity_concentration
    theta = rng.beta(m * k, (1 - m) * k, n)
    if c.requests_per_user > 1:
        scale = (c.requests_per_user - 1) / c.activity_dispersion
        rate = rng.gamma(c.activity_dispersion, scale, n)
    else:
        rate = np.zeros(n)
    n_post = 1 + rng.poisson(rate)
    n_pre = rng.poisson(rate * (c.pre_period_days / c.days))
    span = window.end - _HOUR - window.start
    exposure = window.start + (rng.random(n) * span).astype(np.int64)
    return _Users(arm, segments, theta, n_pre, n_post, exposure)


def _draw_requests(
    rng: np.random.Generator, c: SimulationConfig, users: _Users, window: _Window
) -> _Requests:
    """Per user, the pre-period requests, then the exposure's, then later ones."""
    per_user = users.n_pre + users.n_post
    n_req = int(per_user.sum())
    req_user = np.repeat(np.arange(per_user.size), per_user)
    first = np.cumsum(per_user) - per_user
    nth = np.arange(n_req) - first[req_user]
    pre = nth < users.n_pre[req_user]
    u = rng.random(n_req)
    exp_ts = users.exposure[req_user]
    pre_span = c.pre_period_days * _MS_PER_DAY - _HOUR
    post_span = window.end - _HOUR - exp_ts
    req_ts = np.where(
        pre,
        exp_ts - _HOUR - (u * pre_span).astype(np.int64),
        exp_ts + (u * post_span).astype(np.int64),
    )
    at_exposure = nth == users.n_pre[req_user]
    req_ts[at_exposure] = exp_ts[at_exposure]  # the exposure's request
    policy = np.where(pre, 0, users.arm[req_user])
    return _Requests(req_user, req_ts, policy)


def _rank(rng: np.random.Generator, model: Model, requests: _Requests) -> _Lists:
    """Draw each request's candidates and their relevance, and order them by the
    Plackett–Luce policy of the arm serving it (Gumbel keys)."""
    c = model.config
    n_req, n_list = requests.user.size, c.list_length
    candidates = _distinct_items(rng, model.item_cdf, n_req, n_list)
    relevant = rng.random((n_req, n_list)) < c.relevant_share
    gumbel = -np.log(-np.log(rng.random((n_req, n_list))))
    keys = relevant * np.log(model.weights)[requests.policy][:, None] + gumbel
    order = np.argsort(-keys, axis=1)
    items = np.take_along_axis(candidates, order, axis=1)
    rel = np.take_along_axis(relevant, order, axis=1)
    return _Lists(items, rel, relevant.sum(axis=1))


def _distinct_items(rng: np.random.Generator, cdf: np.ndarray, rows: int, n: int) -> np.ndarray:
    """``rows`` × ``n`` item ranks from the popularity distribution, distinct within
    each row (duplicates are redrawn until none are left)."""
    items = np.searchsorted(cdf, rng.random((rows, n)), side="right").astype(np.int32)
    items.sort(axis=1)
    todo = np.flatnonzero((items[:, 1:] == items[:, :-1]).any(axis=1))
    for _ in range(10_000):
        if todo.size == 0:
            return items
        sub = items[todo]
        dup = np.zeros(sub.shape, dtype=bool)
        dup[:, 1:] = sub[:, 1:] == sub[:, :-1]
        sub[dup] = np.searchsorted(cdf, rng.random(int(dup.sum())), side="right")
        sub.sort(axis=1)
        items[todo] = sub
        todo = todo[(sub[:, 1:] == sub[:, :-1]).any(axis=1)]
    raise RuntimeError("could not draw distinct items: enlarge the catalogue")


def _behave(
    rng: np.random.Generator, model: Model, users: _Users, requests: _Requests, lists: _Lists
) -> _Actions:
    """Clicks by the examination model, purchases after some clicks, their times
    and revenue."""
    c = model.config
    attract = np.where(lists.relevant, 1.0, c.irrelevant_attractiveness)
    p_click = users.theta[requests.user][:, None] * model.exam[None, :] * attract
    clicked = rng.random(p_click.shape) < p_click
    click_req, click_slot = np.nonzero(clicked)
    n_clicks = click_req.size
    bought = rng.random(n_clicks) < model.purchase_rates[requests.policy[click_req]]
    click_delay = 1_000 + np.minimum(
        rng.exponential(_CLICK_DELAY_MEAN, n_clicks), _CLICK_DELAY_MAX
    ).astype(np.int64)
    click_ts = requests.ts[click_req] + click_delay
    buy = np.flatnonzero(bought)
    n_buys = buy.size
    buy_delay = 1_000 + np.minimum(
        rng.exponential(_PURCHASE_DELAY_MEAN, n_buys), _PURCHASE_DELAY_MAX
    ).astype(np.int64)
    value = np.round(rng.lognormal(model.value_mu, c.revenue_sigma, n_buys), 2)
    return _Actions(click_req, click_slot, click_ts, buy, click_ts[buy] + buy_delay, value)


def _rows(users: _Users, requests: _Requests, actions: _Actions, n_list: int) -> _Rows:
    """The rows: an exposure per user, the impressions of every list, the clicks
    and the purchases; in time order, and at the same millisecond: exposure,
    impressions by position, clicks, purchases."""
    n, n_req = users.arm.size, requests.user.size
    n_imp, n_clicks = n_req * n_list, actions.click_req.size
    imp_req = np.repeat(np.arange(n_req), n_list)
    imp_slot = np.tile(np.arange(n_list), n_req)
    buy_req = actions.click_req[actions.buy]
    kinds = np.concatenate(
        [
            np.full(n, _EXPOSURE, np.int8),
            np.full(n_imp, _IMPRESSION, np.int8),
            np.full(n_clicks, _CLICK, np.int8),
            np.full(actions.buy.size, _PURCHASE, np.int8),
        ]
    )
    row_req = np.concatenate([np.zeros(n, np.int64), imp_req, actions.click_req, buy_req])
    row_slot = np.concatenate(
        [np.zeros(n, np.int64), imp_slot, actions.click_slot, actions.click_slot[actions.buy]]
    )
    row_user = np.concatenate(
        [
            np.arange(n),
            requests.user[imp_req],
            requests.user[actions.click_req],
            requests.user[buy_req],
        ]
    )
    ts = np.concatenate([users.exposure, requests.ts[imp_req], actions.click_ts, actions.buy_ts])
    sort_key = (ts << 12) | (kinds.astype(np.int64) << 10) | row_slot
    order = np.argsort(sort_key, kind="stable")
    values = np.concatenate([np.full(n + n_imp + n_clicks, np.nan), actions.value])
    return _Rows(
        kinds[order], row_req[order], row_slot[order], row_user[order], ts[order], values[order]
    )


def _table(
    model: Model,
    users: _Users,
    requests: _Requests,
    lists: _Lists,
    rows: _Rows,
    start: _Offsets,
) -> pa.Table:
    """The rows as a table of the event format (:func:`event_schema`)."""
    c = model.config
    n_rows = rows.kind.size
    has_request = rows.kind != _EXPOSURE
    is_imp = rows.kind == _IMPRESSION
    columns: dict[str, pa.Array] = {
        "experiment": pa.repeat(pa.scalar(c.experiment, pa.string()), n_rows),
        "arm": labels(c.arms, users.arm[rows.user]),
        "user_id": strings("u", np.arange(users.arm.size) + start.user).take(pa.array(rows.user)),
        "ts": pa.array(rows.ts, pa.timestamp("ms", tz="UTC")),
        "event_type": labels(EVENT_TYPES, rows.kind),
        "request_id": strings("r", np.arange(requests.user.size) + start.request).take(
            pa.array(rows.request, mask=~has_request)
        ),
        "item_id": model.item_ids.take(
            pa.array(lists.items[rows.request, rows.slot], mask=~has_request)
        ),
        "position": pa.array((rows.slot + 1).astype(np.int32), mask=~is_imp),
        "value": pa.array(rows.value, mask=rows.kind != _PURCHASE),
    }
    if c.with_event_ids:
        prefix = f"{c.experiment}-{c.seed}-"
        columns["event_id"] = strings(prefix, np.arange(n_rows) + start.row)
    if c.with_propensities:
        prop = model.propensity[
            requests.policy[rows.request],
            lists.n_relevant[rows.request],
            rows.slot,
            lists.relevant[rows.request, rows.slot].astype(np.int64),
        ]
        # 6 decimals keep text files short; tiny propensities keep full precision (never 0)
        prop = np.where(prop >= 1e-3, np.round(prop, 6), prop)
        columns["propensity"] = pa.array(prop, mask=~is_imp)
    for column, index in users.segments.items():
        columns[column] = labels(list(c.segments[column]), index[rows.user])
    return pa.Table.from_pydict(columns, schema=event_schema(c))
