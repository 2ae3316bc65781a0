"""DuckDB's memory limit and spill folder (``ABEVAL_MEMORY_LIMIT``, ``ABEVAL_TEMP_DIR``):
what reaches DuckDB, bad values, and a read-only store that spills."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from abeval.analysis.replay import replay
from abeval.cli import app
from abeval.errors import StoreError
from abeval.store import open_store
from abeval.store.backends.duckdb import memory
from abeval.store.backends.duckdb.memory import capped_gib, parse_memory, physical_memory
from abeval.store.ingest.keys import number_ingest
from abeval.store.sql.replay import open_replay

runner = CliRunner()
GAINS = {"click": 1.0, "purchase": 2.0}
EVENTS = "experiment,arm,user_id,ts,event_type\ne1,A,u1,2024-05-01,exposure\n"
GIB = 2**30
# DuckDB shows a limit cut to 0.1 of its unit: "3.0 GiB", "512.0 MiB".
SHOWN_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": GIB, "TiB": 2**40}
MEMORY_MESSAGE = (
    "Error: ABEVAL_MEMORY_LIMIT must be an amount of memory of at least 128MiB, such as 4GB, "
    "3GiB or 25% (of this machine's memory), got {!r}\n"
)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("ABEVAL_DB", "ABEVAL_MEMORY_LIMIT", "ABEVAL_TEMP_DIR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "e.csv").write_text(EVENTS)
    return tmp_path


def shown_bytes(db: Path) -> tuple[float, str]:
    """DuckDB's ``memory_limit`` and ``temp_directory`` on a store opened as abeval does."""
    with open_store(str(db)) as store, store.connect() as conn:
        limit, folder = conn.execute(
            text("SELECT current_setting('memory_limit'), current_setting('temp_directory')")
        ).one()
    number, unit = str(limit).split()
    return float(number) * SHOWN_UNITS[unit], str(folder)


def test_the_default_limit_reaches_duckdb(cwd: Path) -> None:
    total = physical_memory()
    assert total is not None
    # 3 GiB, or DuckDB's own default (80% of the memory) on a machine with less than 3.75 GiB.
    expected = min(3 * GIB, 0.8 * total)
    limit, _ = shown_bytes(cwd / "s.duckdb")
    assert abs(limit - expected) <= 0.1 * GIB


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2GB", 2e9),
        ("512MiB", 512 * 2**20),
        ("1.5 gib", 1.5 * GIB),
        (" 6GiB ", 6 * GIB),
    ],
)
def test_the_variable_reaches_duckdb(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, value: str, expected: float
) -> None:
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", value)
    limit, _ = shown_bytes(cwd / "s.duckdb")
    assert abs(limit - expected) <= 0.1 * GIB


def test_a_share_of_the_memory_reaches_duckdb(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    total = physical_memory()
    assert total is not None
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "25%")
    limit, _ = shown_bytes(cwd / "s.duckdb")
    assert abs(limit - total / 4) <= 0.1 * GIB


def test_amounts_are_read_in_decimal_and_binary_units() -> None:
    assert parse_memory("4GB", None) == 4 * 10**9
    assert parse_memory("4gb", None) == 4 * 10**9
    assert parse_memory("3GiB", None) == 3 * 2**30
    assert parse_memory("100 KB", None) == 100_000
    assert parse_memory("2TiB", None) == 2 * 2**40
    assert parse_memory(".5GiB", None) == 2**29
    assert parse_memory("50%", 8 * 2**30) == 4 * 2**30
    assert parse_memory("100%", 1000) == 1000
    for bad in ("abc", "4", "4G", "-1GB", "nan GB", "1e3MB", "0%", "150%", "", "GB"):
        assert parse_memory(bad, 8 * 2**30) is None, bad
    assert parse_memory("50%", None) is None  # the machine's memory is unknown


@pytest.mark.parametrize("value", ["lots", "4", "0GB", "100MiB", "-2GB", "101%", "4 G"])
def test_a_bad_limit_is_named_and_no_store_is_created(cwd: Path, value: str) -> None:
    result = runner.invoke(
        app, ["ingest", "e.csv", "--db", "s.duckdb"], env={"ABEVAL_MEMORY_LIMIT": value}
    )
    assert result.exit_code == 1
    assert result.stderr == MEMORY_MESSAGE.format(value)
    assert not (cwd / "s.duckdb").exists()


def test_a_bad_limit_on_an_existing_store(cwd: Path) -> None:
    assert runner.invoke(app, ["ingest", "e.csv", "--db", "s.duckdb", "-q"]).exit_code == 0
    before = (cwd / "s.duckdb").read_bytes()
    for command in (["ingest", "e.csv"], ["experiments"], ["report", "-e", "e1"]):
        result = runner.invoke(
            app, [*command, "--db", "s.duckdb"], env={"ABEVAL_MEMORY_LIMIT": "100MiB"}
        )
        assert result.exit_code == 1, command
        assert result.stderr == MEMORY_MESSAGE.format("100MiB"), command
        assert result.stdout == ""
    assert (cwd / "s.duckdb").read_bytes() == before


def test_a_bad_spill_folder_is_named(cwd: Path) -> None:
    assert runner.invoke(app, ["ingest", "e.csv", "--db", "s.duckdb", "-q"]).exit_code == 0
    (cwd / "a-file").write_text("")
    cases = {
        str(cwd / "nowhere"): f"{cwd / 'nowhere'} does not exist",
        str(cwd / "a-file"): f"{cwd / 'a-file'} is not a folder",
    }
    for value, why in cases.items():
        result = runner.invoke(
            app, ["experiments", "--db", "s.duckdb"], env={"ABEVAL_TEMP_DIR": value}
        )
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: ABEVAL_TEMP_DIR must name a folder DuckDB can spill into; {why}\n"
        )
    assert not (cwd / "nowhere").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder")
def test_a_spill_folder_abeval_cannot_write_in_is_named(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = cwd / "locked"
    locked.mkdir(mode=0o555)
    monkeypatch.setenv("ABEVAL_TEMP_DIR", str(locked))
    with pytest.raises(StoreError, match="abeval cannot write in"):
        open_store(str(cwd / "s.duckdb"))


def test_a_read_only_store_spills_into_its_own_folder_which_is_removed(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runner.invoke(app, ["ingest", "e.csv", "--db", "s.duckdb", "-q"]).exit_code == 0
    spill = cwd / "spill"
    spill.mkdir()
    monkeypatch.setenv("ABEVAL_TEMP_DIR", str(spill))
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "128MiB")
    # Sorting 2M strings of 32 bytes (64 MB of text alone) does not fit in 128 MiB.
    sort = (
        "SELECT count(*), min(s) FROM "
        "(SELECT md5(i::VARCHAR) s FROM range(2000000) t(i) ORDER BY s)"
    )
    smallest = min(hashlib.md5(str(i).encode()).hexdigest() for i in range(2_000_000))
    with open_store(str(cwd / "s.duckdb"), read_only=True) as store, store.connect() as conn:
        folder = Path(conn.execute(text("SELECT current_setting('temp_directory')")).scalar())
        assert folder.parent == spill
        assert folder.name.startswith(f"abeval-spill-{os.getpid()}-")
        assert conn.execute(text(sort)).one() == (2_000_000, smallest)
        assert folder.is_dir()  # it spilled
    assert list(spill.iterdir()) == []
    assert sorted(p.name for p in cwd.iterdir()) == ["e.csv", "s.duckdb", "spill"]


def test_spill_folders_of_two_open_stores_differ(cwd: Path) -> None:
    runner.invoke(app, ["ingest", "e.csv", "--db", "s.duckdb", "-q"])
    query = text("SELECT current_setting('temp_directory')")
    with (
        open_store(str(cwd / "s.duckdb"), read_only=True) as a,
        a.connect() as ca,
        open_store(str(cwd / "t.duckdb")) as b,
        b.connect() as cb,
    ):
        assert ca.execute(query).scalar() != cb.execute(query).scalar()


@pytest.mark.parametrize("in_replay", [False, True])
def test_running_out_of_memory_is_one_line_naming_the_setting(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, in_replay: bool
) -> None:
    # In the replay, the failed statement aborts the transaction: dropping the
    # replay's tables on the way out must not replace its error.
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "128MiB")
    with (
        open_store(str(cwd / "s.duckdb")) as store,
        pytest.raises(StoreError) as caught,
        store.connect() as conn,
        open_replay(conn, "nope", GAINS) if in_replay else contextlib.nullcontext(),
    ):
        # A list of 50M integers is 400 MB held in one value: DuckDB cannot spill it.
        conn.execute(text("SELECT length(list(i)) FROM range(50000000) t(i)")).scalar()
    message = caught.value.message
    assert message.startswith(f"the store {cwd / 's.duckdb'} failed: Out of Memory Error: ")
    assert message.endswith(
        "; DuckDB needed more memory than ABEVAL_MEMORY_LIMIT allows and could not spill it; "
        "raise ABEVAL_MEMORY_LIMIT or set ABEVAL_TEMP_DIR to a folder on a larger disk"
    )
    assert "\n" not in message


def test_the_replay_puts_back_the_configured_limit(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "3GB")  # shown cut: 2.7 GiB
    setting = text("SELECT current_setting('memory_limit')")
    with open_store(str(cwd / "s.duckdb")) as store, store.connect() as conn:
        assert conn.execute(setting).scalar() == "2.7 GiB"
        with open_replay(conn, "nope", GAINS):
            number, unit = str(conn.execute(setting).scalar()).split()
            assert float(number) * SHOWN_UNITS[unit] <= 1.2 * GIB
        assert conn.execute(setting).scalar() == "2.7 GiB"
        assert conn.info["abeval_memory_limit_bytes"] == 3 * 10**9


def test_a_statement_that_fails_inside_the_replay_keeps_its_error(cwd: Path) -> None:
    with (
        open_store(str(cwd / "s.duckdb")) as store,
        pytest.raises(DBAPIError, match="boom") as failed,
        store.connect() as conn,
        open_replay(conn, "nope", GAINS),
    ):
        conn.execute(text("SELECT error('boom')")).scalar()
    assert "transaction is aborted" not in str(failed.value).lower()


LISTS = (
    "experiment,arm,user_id,ts,event_type,request_id,item_id,position\n"
    "e1,A,u1,2024-05-01T00:00:00,exposure,,,\n"
    "e1,A,u1,2024-05-01T00:01:00,impression,r1,i1,1\n"
    "e1,A,u1,2024-05-01T00:01:00,impression,r1,i2,2\n"
    "e1,A,u1,2024-05-01T00:01:00,impression,r1,i3,3\n"
)


def test_the_cap_grows_with_the_rows() -> None:
    # 1.2 GiB up to the lists that need more at 64 bytes a row: 1.2 * 2**30 / 64 rows.
    assert capped_gib(0) == 1.2
    assert capped_gib(20_132_659) == 1.2
    assert capped_gib(51_000_000) == pytest.approx(51_000_000 * 64 / GIB)


@pytest.mark.parametrize("bytes_per_row", [64, GIB])
def test_lists_that_need_more_than_the_cap_get_the_store_limit(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, bytes_per_row: int
) -> None:
    # Three rows of lists: at 1 GiB a row they need 3 GiB, more than the cap, and the
    # replay runs under the store's own limit; at 64 bytes a row, under the cap.
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "3GB")  # shown cut: 2.7 GiB
    monkeypatch.setattr(memory, "CAP_BYTES_PER_ROW", bytes_per_row)
    (cwd / "lists.csv").write_text(LISTS)
    assert runner.invoke(app, ["ingest", "lists.csv", "--db", "s.duckdb"]).exit_code == 0
    setting = text("SELECT current_setting('memory_limit')")
    with open_store(str(cwd / "s.duckdb")) as store, store.connect() as conn:
        with open_replay(conn, "e1", GAINS) as source:
            assert source.ranked_rows() == 3
            shown = conn.execute(setting).scalar()
        assert conn.execute(setting).scalar() == "2.7 GiB"
    if bytes_per_row == GIB:
        assert shown == "2.7 GiB"
    else:
        number, unit = str(shown).split()
        assert float(number) * SHOWN_UNITS[unit] <= 1.2 * GIB


# 2,000 users in two arms, ten requests each of ten items from 500, about one in seven
# shown items clicked (one in five of those requests ends in a purchase): 200,000
# impressions, made by DuckDB itself so the test stays quick.
OUT_OF_CORE_EVENTS = """
INSERT INTO events (experiment, arm, user_id, ts, event_type, request_id, item_id, position,
                    row_key, ingest_id)
WITH u AS (SELECT i AS u, CASE WHEN i % 2 = 0 THEN 'control' ELSE 'treatment' END AS arm
           FROM range(2000) t(i)),
r AS (SELECT u.u, u.arm, j AS r FROM u, range(10) s(j)),
shown AS (SELECT r.*, p AS pos, (r.u * 7 + r.r * 13 + p * p * 31) % 500 AS item
          FROM r, range(1, 11) q(p))
SELECT 'e2', arm, 'user-' || u, TIMESTAMP '2024-01-02 01:00:00', 'exposure', NULL, NULL, NULL,
       'x' || u, 1 FROM u
UNION ALL
SELECT 'e2', arm, 'user-' || u, TIMESTAMP '2024-01-02 02:00:00', 'impression',
       'request-' || u || '-' || r, 'item-' || item, pos, 'i' || u || '-' || r || '-' || pos, 1
FROM shown
UNION ALL
SELECT 'e2', arm, 'user-' || u, TIMESTAMP '2024-01-02 03:00:00',
       CASE WHEN (u + r) % 5 = 0 THEN 'purchase' ELSE 'click' END, 'request-' || u || '-' || r,
       'item-' || item, NULL, 'c' || u || '-' || r || '-' || pos, 1
FROM shown WHERE (u * 3 + r * 5 + pos) % 7 = 0
"""


def test_the_replay_runs_out_of_core_with_the_same_values(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every operator of the replay (lists, counts, ranking kernel, beyond-accuracy
    # metrics with diversity's item pairs) must spill: under 45 MB, where these lists do
    # not fit (the same replay with memory to spare writes nothing to disk), an
    # operator that holds its whole state in memory fails this test. (Since the replay's
    # per-list pass, 80 MB is enough not to spill; 32-60 MB spill and pass, 25 MB is
    # below what DuckDB itself needs.)
    monkeypatch.setenv("ABEVAL_TEMP_DIR", str(cwd))
    with open_store(str(cwd / "s.duckdb")) as store, store.begin() as conn:
        conn.execute(text(OUT_OF_CORE_EVENTS))
        number_ingest(conn, 1)  # the integer keys an ingest gives

    def replayed(limit: str | None) -> tuple[list[tuple[str, str, float | None]], int]:
        with open_store(str(cwd / "s.duckdb"), read_only=True) as store, store.connect() as conn:
            conn.execute(text("SET threads = 2"))
            if limit:
                conn.execute(text(f"SET memory_limit = '{limit}'"))
            result = replay(conn, "e2")
            spilled = conn.execute(
                text("SELECT SUM(temporary_storage_bytes) FROM duckdb_memory()")
            ).scalar()
        assert {a.impressions for a in result.arms} == {100_000}
        return [(m.metric, m.group, m.value) for m in result.metrics], int(spilled or 0)

    free, spilled_free = replayed(None)
    tight, spilled_tight = replayed("45MB")
    assert spilled_free == 0 and spilled_tight > 0
    assert [m[:2] for m in tight] == [m[:2] for m in free]
    for (metric, arm, a), (_, _, b) in zip(free, tight, strict=True):
        assert a is not None and b is not None, (metric, arm)
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), (metric, arm)


def _ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _spill(root: Path, pid: int, age_s: float, now: float) -> Path:
    folder = root / f"abeval-spill-{pid}-0badf00d"
    folder.mkdir()
    part = folder / "duckdb_temp_storage_DEFAULT-0.tmp"
    part.write_bytes(b"x" * 1000)
    for path in (part, folder):
        os.utime(path, (now - age_s, now - age_s))
    return folder


def test_the_spill_folders_a_killed_process_left_are_removed(tmp_path: Path) -> None:
    """A report killed with SIGKILL leaves its spill folder (25 GB was seen in /tmp);
    the next store opened removes it, and nothing else."""
    import time

    now = time.time()
    dead = _ended_pid()
    abandoned = _spill(tmp_path, dead, memory.ABANDONED_AFTER_S + 60, now)
    running = _spill(tmp_path, os.getpid(), memory.ABANDONED_AFTER_S + 60, now)
    (tmp_path / "recent").mkdir()
    recent = _spill(tmp_path / "recent", dead, 5, now)
    other = tmp_path / f"abeval-spill-{dead}-notours"  # not a spill folder's name
    other.mkdir()
    os.utime(other, (now - 10_000, now - 10_000))
    assert memory.remove_abandoned_spills(tmp_path, now) == [abandoned]
    assert memory.remove_abandoned_spills(tmp_path / "recent", now) == []
    assert not abandoned.exists()
    assert running.exists() and recent.exists() and other.exists()


def test_opening_a_store_clears_abandoned_spill_folders(
    cwd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    spills = tmp_path / "spills"
    spills.mkdir()
    monkeypatch.setenv("ABEVAL_TEMP_DIR", str(spills))
    abandoned = _spill(spills, _ended_pid(), memory.ABANDONED_AFTER_S + 60, time.time())
    with open_store(str(cwd / "s.duckdb")) as store, store.connect():
        assert not abandoned.exists()
