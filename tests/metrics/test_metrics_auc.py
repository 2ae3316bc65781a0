"""AUC of the SQL kernel against scipy's Mann-Whitney U on random lists with tied
and missing positions (logged positions need not be 1..n): per list,
AUC = U / (relevant x non-relevant), a tie counting one half."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from abeval.metrics import parse_offline_metrics, ranking_query

# A list: (position, relevant) per item; positions repeat (ties) and skip (gaps).
LISTS = st.lists(
    st.lists(st.tuples(st.integers(1, 8), st.booleans()), min_size=1, max_size=12),
    min_size=1,
    max_size=8,
)


def kernel_auc(lists: list[list[tuple[int, bool]]]) -> dict[str, float | None]:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE ranked (grp VARCHAR, user_id VARCHAR, list_id VARCHAR, item_id VARCHAR, "
        "rank BIGINT, gain DOUBLE)"
    )
    rows = [
        ("g", f"u{i}", f"l{i}", f"l{i}-{j}", pos, 1.0 if rel else 0.0)
        for i, items in enumerate(lists)
        for j, (pos, rel) in enumerate(items)
    ]
    con.executemany("INSERT INTO ranked VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE judged AS SELECT list_id, gain FROM ranked WHERE gain > 0")
    query = ranking_query(parse_offline_metrics("auc"))
    column = query.columns[0].column
    got = con.execute(f"WITH {query.ctes} SELECT list_id, {column} FROM k_list_values").fetchall()
    return {str(list_id): value for list_id, value in got}


@settings(max_examples=60, deadline=None)
@given(lists=LISTS)
def test_auc_equals_mann_whitney_u(lists: list[list[tuple[int, bool]]]) -> None:
    got = kernel_auc(lists)
    for i, items in enumerate(lists):
        # Position 1 is best: score an item by minus its position.
        relevant = [-pos for pos, rel in items if rel]
        other = [-pos for pos, rel in items if not rel]
        if not relevant or not other:
            assert got[f"l{i}"] is None  # no (relevant, non-relevant) pair: undefined
            continue
        u = mannwhitneyu(relevant, other, alternative="two-sided").statistic
        assert got[f"l{i}"] == pytest.approx(u / (len(relevant) * len(other)), abs=1e-12)
