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
    for table, _ in _blocks(config, False):
        yield table


def simulate_with_target(config: SimulationConfig) -> tuple[pa.Table, pa.Table]:
    """For a two-arm simulation, the event log of :func:`simulate` and, for every
    impression of either arm's users from their exposure on, the probability that
    the *other* arm's policy shows that item at that position given the request's
    candidates and their relevance (columns ``request_id``, ``item_id``,
    ``position``, ``probability``): exact, computed as the logged propensity is.
    Rows for the control's requests give the treatment's probabilities and the
    other way round, as ``abeval report --target-propensities`` reads them."""
    if len(config.arms) != 2:
        raise ValueError("target probabilities need exactly two arms")
    events, targets = [], []
    for table, target_table in _blocks(config, True):
        events.append(table)
        assert target_table is not None
        targets.append(target_table)
    return pa.concat_tables(events), pa.concat_tables(targets)


def _blocks(config: SimulationConfig, target: bool) -> Iterator[tuple[pa.Table, pa.Table | None]]:
    model = model_of(config)
    start = _Offsets(0, 0, 0)
    for block, n_users in enumerate(_block_sizes(config)):
        table, target_table, n_requests = _simulate_block(model, block, n_users, start, target)
        start = _Offsets(
            start.user + n_users, start.request + n_requests, start.row + table.num_rows
        )
        yield table, target_table


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
    irrelevant_rank: np.ndarray  # (request, slot): popularity rank among irrelevant candidates


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


def _simulate_block(
    model: Model, block: int, n: int, start: _Offsets, target: bool
) -> tuple[pa.Table, pa.Table | None, int]:
    """The ``block``-th block of ``n`` users as a table in time order, the other
    arm's probabilities on its impressions (with ``target``) and the number of
    requests it made. Each block draws from its own random stream."""
    c = model.config
    rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(block,)))
    start_ms = int(c.start.timestamp() * 1000)
    window = _Window(start_ms, start_ms + c.days * _MS_PER_DAY)
    users = _draw_users(rng, model, n, window)
    requests = _draw_requests(rng, c, users, window)
    lists = _rank(rng, model, requests)
    actions = _behave(rng, model, users, requests, lists)
    rows = _rows(users, requests, actions, c.list_length)
    table = _table(model, users, requests, lists, rows, start)
    target_table = None
    if target:
        target_table = _target_table(model, users, lists, rows, start)
    return table, target_table, requests.user.size


def _target_table(
    model: Model, users: _Users, lists: _Lists, rows: _Rows, start: _Offsets
) -> pa.Table:
    """The impressions from exposure on, each with the probability that the other
    arm's policy (of two) shows the same item at the same position."""
    keep = (rows.kind == _IMPRESSION) & (rows.ts >= users.exposure[rows.user])
    req, slot = rows.request[keep], rows.slot[keep]
    other = 1 - users.arm[rows.user[keep]]
    probability = np.zeros(req.size)
    for arm in (0, 1):
        at = np.flatnonzero(other == arm)
        r, k = req[at], slot[at]
        probability[at] = model.propensities(
            arm, lists.n_relevant[r], k, lists.relevant[r, k], lists.irrelevant_rank[r, k]
        )
    return pa.table(
        {
            "request_id": strings("r", req + start.request),
            "item_id": model.item_ids.take(pa.array(lists.items[req, slot])),
            "position": pa.array((slot + 1).astype(np.int32)),
            "probability": pa.array(probability, pa.float64()),
        }
    )


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


@dataclass(frozen=True)
class Pools:
    """Each request's candidates (item popularity ranks, ascending: most popular
    first) and their relevance."""

    items: np.ndarray  # (request, candidate)
    relevant: np.ndarray  # (request, candidate): bool

    @property
    def irrelevant_rank(self) -> np.ndarray:
        """Each candidate's popularity rank among its request's irrelevant ones
        (0 = most popular; meaningless for a relevant candidate)."""
        return np.cumsum(~self.relevant, axis=1) - 1


def draw_pools(rng: np.random.Generator, model: Model, n_requests: int) -> Pools:
    """Candidates from the popularity distribution, each relevant with
    probability ``relevant_share``."""
    c = model.config
    items = _distinct_items(rng, model.item_cdf, n_requests, c.pool)
    return Pools(items, rng.random((n_requests, c.pool)) < c.relevant_share)


def order_pools(
    rng: np.random.Generator, model: Model, pools: Pools, policy: np.ndarray
) -> np.ndarray:
    """The candidate indices each request shows, in order (the first
    ``list_length``), under the arm ``policy`` of each request: Plackett–Luce
    over relevance (Gumbel keys), then, with probability τ of that arm, the
    irrelevant candidates put in popularity order on the irrelevant slots."""
    c = model.config
    n_req, n_pool = pools.items.shape
    gumbel = -np.log(-np.log(rng.random((n_req, n_pool))))
    keys = pools.relevant * np.log(model.weights)[policy][:, None] + gumbel
    order = np.argsort(-keys, axis=1)
    tau = model.tilts[policy]
    if (tau > 0).any():
        popular = np.flatnonzero(rng.random(n_req) < tau)
        shown_relevant = np.take_along_axis(pools.relevant[popular], order[popular], axis=1)
        # irrelevant slots in slot order; irrelevant candidates in popularity order
        slots = np.argsort(shown_relevant, axis=1, kind="stable")
        candidates = np.argsort(pools.relevant[popular], axis=1, kind="stable")
        n_irrelevant = (~pools.relevant[popular]).sum(axis=1)
        take = np.arange(n_pool)[None, :] < n_irrelevant[:, None]
        rows = np.broadcast_to(popular[:, None], take.shape)
        order[rows[take], slots[take]] = candidates[take]
    return order[:, : c.list_length]


def _rank(rng: np.random.Generator, model: Model, requests: _Requests) -> _Lists:
    """Draw each request's candidates and their relevance, and order them by the
    policy of the arm serving it (:func:`order_pools`)."""
    pools = draw_pools(rng, model, requests.user.size)
    order = order_pools(rng, model, pools, requests.policy)
    return _Lists(
        np.take_along_axis(pools.items, order, axis=1),
        np.take_along_axis(pools.relevant, order, axis=1),
        pools.relevant.sum(axis=1),
        np.take_along_axis(pools.irrelevant_rank, order, axis=1),
    )


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


def _propensities(model: Model, policy: np.ndarray, lists: _Lists, rows: _Rows) -> np.ndarray:
    """Each row's probability of showing its item at its position under the arm
    index ``policy[request]`` (rows that are not impressions get a value too)."""
    out = np.zeros(rows.kind.size)
    arm = policy[rows.request]
    for i in np.unique(arm):
        at = np.flatnonzero(arm == i)
        req, slot = rows.request[at], rows.slot[at]
        out[at] = model.propensities(
            int(i),
            lists.n_relevant[req],
            slot,
            lists.relevant[req, slot],
            lists.irrelevant_rank[req, slot],
        )
    return out


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
        prop = _propensities(model, requests.policy, lists, rows)
        # 6 decimals keep text files short; tiny propensities keep full precision (never 0)
        prop = np.where(prop >= 1e-3, np.round(prop, 6), prop)
        columns["propensity"] = pa.array(prop, mask=~is_imp)
    for column, index in users.segments.items():
        columns[column] = labels(list(c.segments[column]), index[rows.user])
    return pa.Table.from_pydict(columns, schema=event_schema(c))
