"""The lists of a recommendations file ranked by numpy over whole columns, no Python per row.

A file is read as three columns (:class:`RunColumns`): the user and the item as
codes into the distinct ids (a Parquet file's own dictionaries, else Arrow's
``dictionary_encode`` of DuckDB's table) and the ranking key (higher = better).
:class:`Lists` groups the rows by user and lays the lists out as the rows of a few
matrices (lists of about the same length share one, padded), so that each step is
one numpy operation over a whole matrix:

- a repeated item: each row's items sorted, neighbours compared;
- the rank of every item: each row sorted by item id, then stably by key, which
  orders it by key descending and item id descending (trec_eval), keys as DuckDB
  orders doubles (``-0.0`` equals ``0.0``, NaN above ``+inf``) and item ids as DuckDB
  compares text (byte by byte);
- the truth's gain of each item: the user's relevant truth items found by a binary
  search in the row-sorted items, read as one ascending array.

:meth:`Lists.ranked` returns the rows of ``ranked_all`` that the SQL kernel reads:
every relevant item at its rank in the whole list and the top K of each list (or
every item), the same rows as ranking each list by a window over the whole list in
SQL (``tables._rank_every_item``). ``tests/metrics/test_evaluate_top_k.py`` holds
the two to each other and to a sort in Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from abeval.analysis.evaluate.sql import arrow
from abeval.files import format_of

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


_CELLS = 1 << 17  # cells of a matrix slice ranked at once


@dataclass(frozen=True)
class RunColumns:
    """One recommendations file as columns: ``users[user_codes[r]]`` is row r's user,
    ``items[item_codes[r]]`` its item, ``key[r]`` its ranking key (higher = better)."""

    users: pa.Array
    user_codes: np.ndarray
    items: pa.Array
    item_codes: np.ndarray
    key: np.ndarray


@dataclass(frozen=True)
class TruthColumns:
    """The relevant truth rows (user, item, gain > 0) and the users with any truth."""

    user_id: pa.Array
    item_id: pa.Array
    gain: np.ndarray
    users: pa.Array


def read_run(
    con: duckdb.DuckDBPyConnection, path: Path, table: str, cols: dict[str, str]
) -> RunColumns:
    """The columns of a recommendations file loaded into ``table`` (abeval's column
    names; ``cols`` maps them to the file's). A Parquet file with text ids and a
    numeric key is read again by pyarrow, keeping its dictionaries; any other file
    is taken from the table."""
    import pyarrow.compute as pc

    key = "rank" if "rank" in cols else "score"
    if format_of(path) == "parquet":
        direct = _parquet_run(path, cols["user_id"], cols["item_id"], cols[key], key == "rank")
        if direct is not None:
            return direct
    tab = arrow(con, f"SELECT user_id, item_id, {key} AS key FROM {table}")
    users = pc.dictionary_encode(tab.column("user_id")).combine_chunks()
    items = pc.dictionary_encode(tab.column("item_id")).combine_chunks()
    values = np.asarray(tab.column("key").to_numpy(), dtype=np.float64)
    return RunColumns(
        users.dictionary,
        users.indices.to_numpy(),
        items.dictionary,
        items.indices.to_numpy(),
        -values if key == "rank" else values,
    )


def _parquet_run(path: Path, user: str, item: str, key: str, negate: bool) -> RunColumns | None:
    """The columns straight from a Parquet file, else None (another type, or a
    column name pyarrow would read as a nested path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if any("." in name for name in (user, item, key)):
        return None
    types = {f.name: f.type for f in pq.read_schema(path)}
    if not (_text(types.get(user)) and _text(types.get(item))):
        return None
    kt = types.get(key)
    if kt is None or not (pa.types.is_integer(kt) or pa.types.is_floating(kt)):
        return None
    # Arrow's default allocator (jemalloc) spent 0.2-0.4 s of system time more than
    # the system allocator on the 3M-row benchmark file (fresh processes, page
    # faults): the buffers of this read come from the system allocator.
    default = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        tab = pq.read_table(path, columns=[user, item, key], read_dictionary=[user, item])
        u = tab.column(user).unify_dictionaries().combine_chunks()
        i = tab.column(item).unify_dictionaries().combine_chunks()
    finally:
        pa.set_memory_pool(default)
    values = np.asarray(tab.column(key).to_numpy(), dtype=np.float64)
    return RunColumns(
        u.dictionary,
        u.indices.to_numpy(),
        i.dictionary,
        i.indices.to_numpy(),
        -values if negate else values,
    )


def _text(typ: pa.DataType | None) -> bool:
    import pyarrow as pa

    if typ is not None and pa.types.is_dictionary(typ):
        typ = typ.value_type
    return typ is not None and (pa.types.is_string(typ) or pa.types.is_large_string(typ))


def read_truth(con: duckdb.DuckDBPyConnection) -> TruthColumns:
    """The relevant rows of ``truth`` and the users of ``truth_users``."""
    rel = arrow(con, "SELECT user_id, item_id, gain FROM truth WHERE gain > 0")
    users = arrow(con, "SELECT user_id FROM truth_users")
    return TruthColumns(
        rel.column("user_id").combine_chunks(),
        rel.column("item_id").combine_chunks(),
        np.asarray(rel.column("gain").to_numpy(), dtype=np.float64),
        users.column("user_id").combine_chunks(),
    )


@dataclass(frozen=True)
class _Block:
    """Lists of about the same length as the rows of matrices, padded at the end."""

    segs: np.ndarray  # the list (segment) number of each matrix row
    items: np.ndarray  # item ranks (0 = first id in byte order); padding -1, -2, ...
    keys: np.ndarray  # the ranking keys; padding -inf

    @property
    def width(self) -> int:
        return int(self.items.shape[1])


class Lists:
    """The lists of one recommendations file, grouped by user, checked for repeated
    items and ready to rank (module docstring)."""

    def __init__(self, run: RunColumns) -> None:
        import pyarrow.compute as pc

        self.users = run.users
        self.items = run.items
        n_items = len(run.items)
        # Item ids in DuckDB's order of text: byte by byte (Arrow sorts strings so).
        self._item_of_rank = np.asarray(pc.array_sort_indices(run.items), dtype=np.int64)
        self._rank_of_item = np.empty(n_items, dtype=np.int32)
        self._rank_of_item[self._item_of_rank] = np.arange(n_items, dtype=np.int32)
        users = run.user_codes
        items = self._rank_of_item[run.item_codes]
        keys = run.key
        starts = _run_starts(users)
        if len(np.unique(users[starts])) != len(starts):  # a user's rows are not together
            order = np.argsort(users, kind="stable")
            users, items, keys = users[order], items[order], keys[order]
            starts = _run_starts(users)
        self.seg_user = users[starts]  # the user code of each list
        lengths = np.diff(np.append(starts, len(users)))
        self._blocks = [_block(segs, starts, lengths, items, keys) for segs in _by_length(lengths)]

    def _chunks(self) -> Iterator[_Block]:
        """The blocks in slices of about ``_CELLS`` cells: the temporary matrices stay
        small, in the cache and in memory the allocator gives again (fresh pages from
        the system cost more than the sorting)."""
        for b in self._blocks:
            step = max(1, _CELLS // b.width)
            for start in range(0, len(b.segs), step):
                rows = slice(start, start + step)
                yield _Block(b.segs[rows], b.items[rows], b.keys[rows])

    @property
    def has_repeats(self) -> bool:
        """Whether an item appears twice in one list."""
        for b in self._chunks():
            s = np.sort(b.items, axis=1)
            if bool((s[:, 1:] == s[:, :-1]).any()):  # padding values are all distinct
                return True
        return False

    def user_ids(self) -> pa.Table:
        """The distinct users of the file, as a table of ``user_id``."""
        import pyarrow as pa

        return pa.table({"user_id": self.users.take(pa.array(self.seg_user))})

    def ranked(self, truth: TruthColumns, grp: int, top_k: int | None) -> pa.Table:
        """The rows of ``ranked_all`` (grp, user_id, list_id, item_id, rank, gain) for
        the users with truth: every item (``top_k`` None), else the relevant items
        and the items ranked ``top_k`` or better. Assumes no repeated item."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n_segs = len(self.seg_user)
        seg_of_user = np.full(len(self.users), -1, dtype=np.int64)
        seg_of_user[self.seg_user] = np.arange(n_segs)
        with_truth = np.zeros(n_segs, dtype=bool)
        known = _codes(pc.index_in(pc.cast(truth.users, self.users.type), value_set=self.users))
        known = seg_of_user[known[known >= 0]]
        with_truth[known[known >= 0]] = True
        t_user = _codes(pc.index_in(pc.cast(truth.user_id, self.users.type), value_set=self.users))
        t_item = _codes(pc.index_in(pc.cast(truth.item_id, self.items.type), value_set=self.items))
        t_seg = np.where(t_user >= 0, seg_of_user[np.maximum(t_user, 0)], -1)
        found = (t_seg >= 0) & (t_item >= 0)
        t_seg = t_seg[found]
        t_rank = self._rank_of_item[t_item[found]].astype(np.int64)
        # In list order: the searches then walk the lists forward (ten times faster).
        by_list = np.argsort(t_seg * len(self.items) + t_rank)
        t_seg, t_rank, t_gain = t_seg[by_list], t_rank[by_list], truth.gain[found][by_list]
        parts = []
        for b in self._chunks():
            lo, hi = np.searchsorted(t_seg, [b.segs[0], b.segs[-1] + 1])
            mine = slice(int(lo), int(hi))
            parts.append(
                _ranked_block(
                    b, t_seg[mine], t_rank[mine], t_gain[mine], with_truth, len(self.items), top_k
                )
            )
        segs = np.concatenate([p[0] for p in parts])
        item_ranks = np.concatenate([p[1] for p in parts])
        user_ids = self.users.take(pa.array(self.seg_user[segs]))
        return pa.table(
            {
                "grp": pa.array(np.full(len(segs), grp, dtype=np.int32)),
                "user_id": user_ids,
                "list_id": user_ids,
                "item_id": self.items.take(pa.array(self._item_of_rank[item_ranks])),
                "rank": pa.array(np.concatenate([p[2] for p in parts])),
                "gain": pa.array(np.concatenate([p[3] for p in parts])),
            }
        )


def _codes(arr: pa.Array) -> np.ndarray:
    """An ``index_in`` result as int64 numbers, -1 where not found."""
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(arr, -1).to_numpy(), dtype=np.int64)


def _run_starts(users: np.ndarray) -> np.ndarray:
    """The first row of each run of equal users."""
    if len(users) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], users[1:] != users[:-1])))


def _by_length(lengths: np.ndarray) -> list[np.ndarray]:
    """The lists grouped so that none is padded to more than twice its length."""
    if len(lengths) == 0:
        return []
    if lengths.min() == lengths.max():
        return [np.arange(len(lengths))]
    power = np.frexp(lengths - 1)[1]  # the smallest 2**p >= length
    return [np.flatnonzero(power == p) for p in np.unique(power)]


def _block(
    segs: np.ndarray, starts: np.ndarray, lengths: np.ndarray, items: np.ndarray, keys: np.ndarray
) -> _Block:
    """The lists ``segs`` as matrix rows: views when every list has the same length."""
    width = int(lengths[segs].max())
    if len(segs) == len(starts) and bool((lengths == width).all()):
        return _Block(segs, items.reshape(-1, width), keys.reshape(-1, width))
    cols = np.arange(width)
    idx = starts[segs][:, None] + cols
    valid = cols < lengths[segs][:, None]
    idx = np.where(valid, idx, 0)
    return _Block(
        segs,
        np.where(valid, items[idx], -1 - cols),
        np.where(valid, keys[idx], -np.inf),
    )


def _ranked_block(
    b: _Block,
    t_seg: np.ndarray,
    t_rank: np.ndarray,
    t_gain: np.ndarray,
    with_truth: np.ndarray,
    n_items: int,
    top_k: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(list number, item rank, rank, gain) of the block's rows kept in ``ranked_all``:
    its relevant items, and its top K items (every item when ``top_k`` is None) of
    the lists whose user has truth.

    Each row is sorted by item, then stably by key: the columns in ascending order of
    (key, item id), padding first (its items are below every item, its keys -inf).
    numpy sorts NaN above every number and -0.0 equal to 0.0, as DuckDB does, so
    the rank of the j-th of W columns is W - j."""
    n, width = b.items.shape
    by_item = np.argsort(b.items, axis=1)
    sorted_items = np.take_along_axis(b.items, by_item, axis=1)
    by_key = np.argsort(np.take_along_axis(b.keys, by_item, axis=1), axis=1, kind="stable")
    order = np.take_along_axis(by_item, by_key, axis=1)  # worst column first
    del by_key
    rows, cols, gains = _relevant(b, sorted_items, by_item, t_seg, t_rank, t_gain, n_items)
    del sorted_items, by_item
    rank_of = np.empty((n, width), dtype=np.int32)
    np.put_along_axis(
        rank_of, order, np.broadcast_to(np.arange(width, 0, -1, dtype=np.int32), order.shape), 1
    )
    relevant = np.zeros((n, width), dtype=bool)
    relevant[rows, cols] = True
    k = width if top_k is None else min(top_k, width)
    top = order[:, width - k :]
    top_rows = np.arange(n)[:, None]
    keep = (b.items[top_rows, top] >= 0) & ~relevant[top_rows, top] & with_truth[b.segs][:, None]
    k_rows, k_at = np.nonzero(keep)
    k_cols = top[k_rows, k_at]
    return (
        np.concatenate([b.segs[rows], b.segs[k_rows]]),
        np.concatenate([b.items[rows, cols], b.items[k_rows, k_cols]]),
        np.concatenate([rank_of[rows, cols], (k - k_at).astype(np.int32)]),
        np.concatenate([gains, np.zeros(len(k_rows))]),
    )


def _relevant(
    b: _Block,
    sorted_items: np.ndarray,
    by_item: np.ndarray,
    t_seg: np.ndarray,
    t_rank: np.ndarray,
    t_gain: np.ndarray,
    n_items: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(matrix row, column, gain) of the relevant truth items found in the block's
    lists: each truth row searched in the row-sorted items, which read row after row
    (row number × spread + item) form one ascending array."""
    width = b.width
    spread = n_items + width  # an item shifted past the padding is below this
    first = int(b.segs[0])  # the truth rows given are those of segs first .. last
    row_of_seg = np.full(int(b.segs[-1]) + 1 - first, -1, dtype=np.int64)
    row_of_seg[b.segs - first] = np.arange(len(b.segs))
    t_row = row_of_seg[t_seg - first]
    mine = t_row >= 0
    if not mine.any():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    flat = np.arange(len(b.segs), dtype=np.int64)[:, None] * spread
    flat = (flat + sorted_items + width).ravel()
    probe = t_row[mine] * spread + t_rank[mine] + width
    pos = np.minimum(np.searchsorted(flat, probe), len(flat) - 1)
    hit = flat[pos] == probe
    pos = pos[hit]
    return pos // width, by_item.ravel()[pos], t_gain[mine][hit]
