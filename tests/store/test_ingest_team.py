"""The ``team`` column of interleaved experiments (docs/metrics.md#interleaving):
stored as given, checked request by request (the team of every impression of an
interleaved request, at most two teams), with one ``FILE:LINE:COLUMN: reason``
line and nothing stored; a file without the column keeps its rows' keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_store import counts, query, run

from abeval.simulate.config import SimulationConfig
from abeval.simulate.interleaved import simulate_interleaved
from abeval.simulate.writers import write_events

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,team"
GOOD = [
    "e1,interleaved,u1,2024-05-01T10:00:00Z,exposure,,,,",
    "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i1,1,A",
    "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i2,2,B",
    "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i3,3,B",
    "e1,interleaved,u1,2024-05-01T10:02:00Z,click,r1,i2,,",
]
NOTHING = (
    "nothing was loaded from this file; fix the rows or pass --on-error skip to load the good rows"
)


def _csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_teams_are_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    result = run("ingest", str(_csv(tmp_path / "ok.csv", GOOD)), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert query(
        db, "SELECT item_id, team FROM events WHERE event_type = 'impression' ORDER BY item_id"
    ) == [("i1", "A"), ("i2", "B"), ("i3", "B")]
    assert query(db, "SELECT team FROM events WHERE event_type = 'click'") == [(None,)]
    from abeval.store import open_store
    from abeval.store.sql.interleaving import interleaving_sums

    with open_store(str(db)) as store, store.connect() as conn:
        assert interleaving_sums(conn, "e1", "A", "B") == ONE_LOSS


#: GOOD's one request: its click is on B's item, a loss for A; one user preferring B.
ONE_LOSS = {
    "users": 1.0,
    "wins": 0.0,
    "losses": 1.0,
    "ties": 0.0,
    "users_a": 0.0,
    "users_b": 1.0,
    "sum_diff_squares": 1.0,
    "sum_requests_squares": 1.0,
    "sum_diff_requests": -1.0,
}


@pytest.mark.parametrize(
    ("rows", "first", "n_bad"),
    [
        (
            [*GOOD[:3], "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i3,3,"],
            "3:team: request 'r1' names a team on 2 of its 3 impressions; an interleaved "
            "request names the ranker of every impression",
            3,
        ),
        (
            [*GOOD[:3], "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i3,3,C"],
            "3:team: request 'r1' names 3 teams (A, B, C); an interleaved list merges exactly "
            "two rankers",
            3,
        ),
        (  # B is missing from every impression of r2
            [
                *GOOD,
                "e1,interleaved,u1,2024-05-01T10:05:00Z,impression,r2,i1,1,A",
                "e1,interleaved,u1,2024-05-01T10:05:00Z,impression,r2,i2,2,A",
            ],
            "7:team: request 'r2' names only A on its 2 impressions; team draft gives each of "
            "the two rankers a pick every round, so a list of two or more items names both",
            2,
        ),
        (  # r2 names no team in an interleaved experiment
            [
                *GOOD,
                "e1,interleaved,u1,2024-05-01T10:05:00Z,impression,r2,i1,1,",
                "e1,interleaved,u1,2024-05-01T10:05:00Z,impression,r2,i2,2,",
            ],
            "7:team: request 'r2' names no team, but experiment 'e1' is interleaved (its other "
            "requests name teams); name the ranker of every impression",
            2,
        ),
        (  # an A/B arm in an interleaved experiment: r1's 3 rows and r3's 1
            [
                *GOOD,
                "e1,control,u2,2024-05-01T10:05:00Z,exposure,,,,",
                "e1,control,u2,2024-05-01T10:05:00Z,impression,r3,i1,1,",
            ],
            "3:team: experiment 'e1' is interleaved (request 'r1' names teams) but has 2 arms "
            "(control, interleaved); every user of an interleaved experiment sees the merged "
            "list: give its rows one arm, and load an A/B test of the same rankers as an "
            "experiment of its own",
            4,
        ),
    ],
)
def test_a_faulty_interleaved_request_refuses_the_file(
    tmp_path: Path, rows: list[str], first: str, n_bad: int
) -> None:
    db = tmp_path / "s.duckdb"
    result = run("ingest", str(_csv(tmp_path / "bad.csv", rows)), "--db", str(db))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[0] == (
        f"Error: {tmp_path / 'bad.csv'}:{first} ({n_bad} bad rows; {NOTHING})"
    )
    assert counts(db)[0] == 0


def test_a_file_without_teams_is_still_a_repeat_of_itself(tmp_path: Path) -> None:
    """Rows without a team keep the key they had before the column existed: loading
    the same file again inserts nothing."""
    header = HEADER.removesuffix(",team")
    rows = [r.rsplit(",", 1)[0] for r in GOOD]
    path = _csv(tmp_path / "plain.csv", rows, header)
    db = tmp_path / "s.duckdb"
    assert run("ingest", str(path), "--db", str(db)).exit_code == 0
    again = run("ingest", str(path), "--db", str(db))
    assert again.exit_code == 0, again.output
    assert counts(db)[0] == len(rows)


def test_simulated_interleaved_logs_load(tmp_path: Path) -> None:
    config = SimulationConfig(users=50, seed=3, experiment="il")
    table = simulate_interleaved(config)
    path = tmp_path / "il.csv"
    write_events(table, path)
    db = tmp_path / "s.duckdb"
    result = run("ingest", str(path), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert query(
        db,
        "SELECT count(*), count(DISTINCT team), count(DISTINCT arm) FROM events "
        "WHERE event_type = 'impression'",
    ) == [(table["event_type"].to_pylist().count("impression"), 2, 1)]


@pytest.mark.postgres
def test_postgres_store_keeps_teams_and_refuses_a_third(
    tmp_path: Path, postgres_database: str
) -> None:
    from sqlalchemy import text

    from abeval.errors import InputError
    from abeval.store import open_store
    from abeval.store.ingest import ingest_file
    from abeval.store.sql.interleaving import interleaving_sums

    three = [*GOOD[:3], "e1,interleaved,u1,2024-05-01T10:01:00Z,impression,r1,i3,3,C"]
    with open_store(postgres_database) as pg:
        with pytest.raises(InputError, match=r"request 'r1' names 3 teams \(A, B, C\)"):
            ingest_file(pg, _csv(tmp_path / "bad.csv", three))
        ingest_file(pg, _csv(tmp_path / "ok.csv", GOOD))
        with pg.connect() as conn:
            got = conn.execute(
                text(
                    "SELECT item_id, team FROM events WHERE event_type = 'impression' "
                    "ORDER BY item_id"
                )
            ).fetchall()
        with pg.connect() as conn:
            sums = interleaving_sums(conn, "e1", "A", "B")
    assert [tuple(r) for r in got] == [("i1", "A"), ("i2", "B"), ("i3", "B")]
    assert sums == ONE_LOSS


def test_engine_sums_are_the_simulation_counts(tmp_path: Path) -> None:
    """The SQL's per-user sums give the Δ_AB and interval of the simulator's own
    per-request outcomes, for clicks and for purchases."""
    from abeval.simulate.interleaved import interleaved_requests
    from abeval.stats import InterleavingStats, compare_interleaved
    from abeval.store import open_store
    from abeval.store.sql.interleaving import interleaving_sums

    config = SimulationConfig(users=400, seed=5, experiment="il")
    path = tmp_path / "il.parquet"
    write_events(simulate_interleaved(config), path)
    db = tmp_path / "s.duckdb"
    assert run("ingest", str(path), "--db", str(db)).exit_code == 0
    sim = interleaved_requests(config)
    with open_store(str(db)) as store, store.connect() as conn:
        by_clicks = (interleaving_sums(conn, "il", *config.arms), sim.per_user("clicks"))
        by_purchases = (
            interleaving_sums(conn, "il", *config.arms, credit="purchase"),
            sim.per_user("purchases"),
        )
        for sums, per_user in (by_clicks, by_purchases):
            got = compare_interleaved(InterleavingStats.from_sums(**sums))
            want = compare_interleaved(InterleavingStats.from_users(*per_user))
            assert (got.wins, got.losses, got.ties, got.users) == (
                want.wins,
                want.losses,
                want.ties,
                want.users,
            )
            assert got.delta == pytest.approx(want.delta)
            assert got.std_error == pytest.approx(want.std_error, rel=1e-9)
