"""An interleaved experiment on a Spark cluster (issue 33): the same report's
interleaving section as on DuckDB, and its link to the A/B test of the same two
rankers (``experiment set X --interleaving-of Y``) recorded, shown and refused
as on DuckDB.

One simulated A/B test and one team-draft interleaved run of the same rankers are
ingested into DuckDB and, with ``abeval ingest --db sc://...``, into the cluster
(an empty Spark store: tests/spark/spark_tables.py); every number of the run's
report JSON must agree to a relative 1e-9 (tests/store/test_postgres_report.py's
assert_same), its text and page to the last shown digit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agreement_store import simulate_experiment, simulate_interleaved_run
from spark_tables import drop_abeval_tables
from test_postgres_report import assert_same
from test_spark_report import _cli, assert_same_rendering
from typer.testing import CliRunner

from abeval.cli import app

pytestmark = pytest.mark.spark
runner = CliRunner()
AB, RUN = "exp-ab", "exp-ab-interleaved"


@pytest.fixture(scope="module")
def stores(spark_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(DuckDB store path, Spark URL) holding the same A/B test and interleaved run."""
    folder = tmp_path_factory.mktemp("spark-interleaving")
    files = [
        simulate_experiment(folder / f"{AB}.csv", AB, 0.2, 31, 300),
        simulate_interleaved_run(folder / f"{RUN}.csv", RUN, 0.2, 32, 300, 3),
    ]
    duck = str(folder / "s.duckdb")
    drop_abeval_tables(spark_url)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ABEVAL_SPARK_WAREHOUSE", str(folder / "warehouse"))
        for db in (duck, spark_url):
            for events in files:
                _cli("ingest", str(events), "--quiet", "--db", db)
            linked = runner.invoke(app, ["experiment", "set", RUN, "--interleaving-of", AB,
                                         "--db", db])  # fmt: skip
            assert linked.exit_code == 0, linked.output
            assert "recorded interleaving-of: exp-ab" in linked.stderr
        yield duck, spark_url


def test_the_interleaving_section_agrees(stores: tuple[str, str]) -> None:
    duck, spark = stores
    a = json.loads(_cli("report", "-e", RUN, "--format", "json", "--db", duck))
    b = json.loads(_cli("report", "-e", RUN, "--format", "json", "--db", spark))
    s = a["interleaving"]
    assert s["requests"] > 0 and s["interval"] is not None and s["balance"]["first_picks"]
    assert (s["team_a"], s["team_b"]) == ("treatment", "control")
    assert_same(a["interleaving"], b["interleaving"])
    assert_same_rendering(
        _cli("report", "-e", RUN, "--format", "text", "--db", duck),
        _cli("report", "-e", RUN, "--format", "text", "--db", spark),
    )


def test_the_link_is_recorded_and_shown_on_spark(stores: tuple[str, str]) -> None:
    spark = stores[1]
    shown = [json.loads(_cli("experiment", "show", RUN, "-f", "json", "--db", db)) for db in stores]
    assert shown[0]["config"] == shown[1]["config"] == {"interleaving_of": AB}
    text = _cli("experiment", "show", RUN, "--db", spark)
    assert f"interleaving-of: {AB} (the A/B test of the same two rankers)" in text


@pytest.mark.parametrize(
    ("experiment", "of"), [(RUN, "nope"), (AB, RUN), (RUN, RUN)], ids=["unknown", "ab", "self"]
)
def test_a_bad_link_is_refused_on_spark_as_on_duckdb(
    stores: tuple[str, str], experiment: str, of: str, tmp_path: Path
) -> None:
    said = []
    for db in stores:
        result = runner.invoke(app, ["experiment", "set", experiment, "--interleaving-of", of,
                                     "--db", db])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert len(result.stderr.splitlines()) == 1
        said.append(result.stderr.replace(db, "DB"))
    assert said[0] == said[1]
    shown = json.loads(_cli("experiment", "show", RUN, "-f", "json", "--db", stores[1]))
    assert shown["config"] == {"interleaving_of": AB}
