"""The throwaway PostgreSQL server: it starts, serves SQLAlchemy, and leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pgserver
import pytest
from pgserver import PostgresServer, require_bindir

# The fixtures (postgres_url, postgres_server, postgres_database) come from
# pgserver.py through tests/conftest.py.
pytestmark = pytest.mark.postgres


def test_fixture_server_runs_sqlalchemy_queries(postgres_url: str) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    assert postgres_url.startswith("postgresql+psycopg://abeval@127.0.0.1:")
    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t_fixture (k TEXT PRIMARY KEY, v BIGINT)")
            conn.execute(
                sqlalchemy.text("INSERT INTO t_fixture VALUES (:k, :v)"),
                [{"k": "a", "v": 2}, {"k": "b", "v": 40}],
            )
        with engine.connect() as conn:
            total = conn.execute(sqlalchemy.text("SELECT sum(v), count(*) FROM t_fixture")).one()
            version = conn.execute(sqlalchemy.text("SHOW server_version_num")).scalar_one()
            fsync = conn.execute(sqlalchemy.text("SHOW fsync")).scalar_one()
            conn.exec_driver_sql("DROP TABLE t_fixture")
            conn.commit()
    finally:
        engine.dispose()
    assert (int(total[0]), total[1]) == (42, 2)  # PostgreSQL sums integers as Decimal
    assert int(version) >= 100000
    assert fsync == "off"


def test_each_test_can_have_its_own_database(postgres_database: str, postgres_url: str) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    assert postgres_database != postgres_url
    engine = sqlalchemy.create_engine(postgres_database)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                sqlalchemy.text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert tables == 0


def test_server_lifecycle_leaves_nothing_behind() -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    with PostgresServer(require_bindir()) as pg:
        directory = pg.directory
        assert directory is not None and (directory / "data" / "PG_VERSION").exists()
        if os.geteuid() == 0:  # the server must not run as root
            assert pg.run_as and pg.run_as != "root"
            assert directory.stat().st_uid != 0
        assert list(directory.glob(".s.PGSQL.*")), "no unix socket in the server directory"
        engine = sqlalchemy.create_engine(pg.url)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INT)")
            conn.exec_driver_sql("INSERT INTO t SELECT generate_series(1, 100)")
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT sum(x) FROM t").scalar_one() == 5050
        engine.dispose()
        url = pg.url
    assert not pg.running and pg.directory is None
    assert not Path(directory).exists()
    with pytest.raises(sqlalchemy.exc.OperationalError):
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": 2})
        with engine.connect():
            pass


def test_missing_binaries_skip_locally_and_fail_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgserver, "find_bindir", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_bindir()
    for value in ("true", "1", "yes"):
        monkeypatch.setenv("CI", value)
        with pytest.raises(pytest.fail.Exception, match="CI is set"):
            require_bindir()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        require_bindir()


def test_binaries_are_found_here_or_ci_says_why() -> None:
    """Where the machine has PostgreSQL (CI must), the lookup finds initdb and pg_ctl."""
    bindir = require_bindir()
    assert (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file()
