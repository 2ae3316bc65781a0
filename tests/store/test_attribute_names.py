"""Attribute names are data (issue 38, item 2): a team metric's ``where`` and a
report's ``--segment`` read the attribute of that exact name, whatever its
characters: ``$os`` and ``$.device`` (JSONPaths to DuckDB), ``/device`` (a JSON
Pointer to DuckDB), spaces, quotes, dots, ``~``. Every name's true counts are
computed here from the rows written, and DuckDB and PostgreSQL must give them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from abeval.cli import app

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = pytest.mark.slow

runner = CliRunner()
NAMES = ["device", "$os", "/device", "$.device", "dev ice", 'de"vice', "a.b", "~t/x", "$"]
# names DuckDB parses though they begin with neither $ nor / (found by benchmarks/campaign.py)
NAMES += ["*", "a\\b", '@~":]/', 'a*{"]a.~', ":b$b@ @", ":$b@*:", "x:y"]
USERS = 12
PLAYS = 3


def _value(arm: str, user: int, play: int, k: int) -> str:
    """The attribute ``NAMES[k]`` of a user's play (``play`` -1: the exposure):
    a pattern of its own for each name, so that reading one name for another
    changes the counts."""
    shift = 1 if arm == "b" else 0
    return "m" if (user + play + k * shift) % (k + 2) == 0 else "d"


def _write(tmp: Path) -> None:
    with (tmp / "events.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["experiment", "arm", "user_id", "ts", "event_type", *NAMES])
        for arm in "ab":
            for i in range(USERS):
                for j in range(-1, PLAYS):
                    kind = "exposure" if j < 0 else "play"
                    values = [_value(arm, i, j, k) for k in range(len(NAMES))]
                    ts = f"2024-05-01T0{j + 1}:00:00"
                    out.writerow(["x", arm, f"{arm}{i}", ts, kind, *values])
    with (tmp / "metrics.toml").open("w") as f:
        for k, name in enumerate(NAMES):
            key = name.replace("\\", "\\\\").replace('"', '\\"')
            f.write(f'[plays_{k}]\nkind = "mean"\nevent = "play"\nwhere = {{ "{key}" = "m" }}\n\n')


def _true_mean(arm: str, k: int) -> float:
    plays = sum(_value(arm, i, j, k) == "m" for i in range(USERS) for j in range(PLAYS))
    return plays / USERS


def _true_segments(k: int) -> dict[str, dict[str, int]]:
    """Users per value of ``NAMES[k]`` on their exposure, per arm."""
    found: dict[str, dict[str, int]] = {}
    for arm in "ab":
        for i in range(USERS):
            value = _value(arm, i, -1, k)
            found.setdefault(value, {"a": 0, "b": 0})[arm] += 1
    return found


def _report(db: str, *options: str) -> dict[str, object]:
    args = ["report", "-e", "x", "--control", "a", "--format", "json", "--db", db, *options]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _check(tmp: Path, db: str) -> None:
    _write(tmp)
    assert runner.invoke(app, ["ingest", str(tmp / "events.csv"), "--db", db, "-q"]).exit_code == 0
    added = runner.invoke(app, ["metrics", "add", str(tmp / "metrics.toml"), "--db", db])
    assert added.exit_code == 0, added.output
    names = ",".join(f"plays_{k}" for k in range(len(NAMES)))
    report = _report(db, "--primary", names)
    means = {
        (m["metric"], arm): m[role]["value"]
        for m in report["metrics"]  # type: ignore[attr-defined]
        for arm, role in (("a", "control"), ("b", "treatment"))
        if m["metric"].startswith("plays_")
    }
    expected = {(f"plays_{k}", arm): _true_mean(arm, k) for k in range(len(NAMES)) for arm in "ab"}
    assert means == pytest.approx(expected)
    for k, name in enumerate(NAMES):
        segments = _report(db, "--primary", "plays_0", "--segment", name)["segments"]
        users = {
            s["value"]: {"a": s["control_users"], "b": s["treatment_users"]}
            for s in segments  # type: ignore[attr-defined]
        }
        assert users == _true_segments(k), name


def test_attribute_names_filter_and_segment_exactly_on_duckdb(tmp_path: Path) -> None:
    _check(tmp_path, str(tmp_path / "s.duckdb"))


@pytest.mark.postgres
def test_attribute_names_filter_and_segment_exactly_on_postgres(
    tmp_path: Path, postgres_database: str
) -> None:
    _check(tmp_path, postgres_database)
