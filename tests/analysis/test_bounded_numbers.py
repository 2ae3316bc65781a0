"""Every number bounded where it is accepted (issue 38, item 8, the rest): a
history whose standard error underflows the fit's weights or whose lifts overflow
its squares, a candidate's offline lift of 1e300, a target probability file's
position beyond a 32-bit INTEGER and an output name longer than the file
system takes are each one line naming the bound, never a traceback; and the
statistics layer gives a status, not an exception, for such rows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from ingest_store import run

from abeval.analysis.ope_file import read_target_propensities
from abeval.errors import InputError
from abeval.stats.forecast import HistoryRow, fit, predict

#: Offline lift, its se, online lift, its se: four past experiments with a slope.
GOOD = [
    (0.01, 0.002, 0.012, 0.004),
    (0.02, 0.002, 0.018, 0.004),
    (0.03, 0.002, 0.035, 0.004),
    (0.00, 0.002, 0.001, 0.004),
]
COLUMNS = ("offline_lift", "offline_se", "online_lift", "online_se")


def history(path: Path, second: tuple[float, float, float, float]) -> Path:
    rows = [GOOD[0], second, *GOOD[2:]]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["experiment", "signal", *COLUMNS])
        out.writerows([f"e{i}", "s", *(repr(v) for v in r)] for i, r in enumerate(rows))
    return path


CASES = [
    ((0.02, 0.002, 0.018, 1e-300), "row 2: online_se 1e-300 is below 1e-09"),
    ((1e300, 1e300, 1e300, 1e300), "row 2: offline_lift 1e+300 is beyond ±1000"),
    ((0.02, 0.002, 1e308, 0.004), "row 2: online_lift 1e+308 is beyond ±1000"),
    ((0.02, 1e308, 0.018, 0.004), "row 2: offline_se 1e+308 is beyond ±1000"),
]


@pytest.mark.parametrize(("second", "says"), CASES)
@pytest.mark.parametrize(
    "command",
    [
        ("forecast", "--offline-lift", "0.02", "--offline-se", "0.002"),
        ("agreement", "-f", "json"),
    ],
)
def test_a_history_beyond_the_bounds_is_one_line(
    tmp_path: Path, second: tuple[float, ...], says: str, command: tuple[str, ...]
) -> None:
    path = history(tmp_path / "h.csv", second)  # type: ignore[arg-type]
    result = run(command[0], "--history", str(path), *command[1:])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: {path}: {says}"), result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(("second", "says"), CASES)
def test_the_fit_gives_a_status_for_such_rows(second: tuple[float, ...], says: str) -> None:
    rows = [HistoryRow(*r) for r in (GOOD[0], second, *GOOD[2:])]  # type: ignore[arg-type]
    fitted = fit(rows)
    assert fitted.status == "invalid_input"
    assert fitted.message == says + (" (a relative lift of ±100,000%)" if "beyond" in says else "")
    forecast = predict(fitted, 0.02, 0.002)
    assert forecast.status == "invalid_input" and forecast.point is None


def test_a_candidate_beyond_the_bounds_gets_a_status_and_one_line(tmp_path: Path) -> None:
    fitted = fit([HistoryRow(*r) for r in GOOD])
    assert fitted.status == "ok"
    assert predict(fitted, 0.02, 0.002).status == "ok"
    far = predict(fitted, 1e300, 0.002)
    assert far.status == "invalid_input" and far.point is None
    assert "offline_lift 1e+300 is beyond ±1000" in far.message
    path = history(tmp_path / "h.csv", GOOD[1])
    result = run(
        "forecast", "--history", str(path), "--offline-lift", "1e300", "--offline-se", "0.002"
    )
    assert result.exit_code == 2, result.output
    assert "--offline-lift" in result.stderr and "beyond ±1000" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_a_target_position_beyond_32_bits_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("request_id,item_id,position,probability\nr1,a,1,0.5\nr1,b,3000000000,0.5\n")
    with pytest.raises(InputError) as raised:
        read_target_propensities(path)
    assert raised.value.message == (
        f"{path}:3:position: 3000000000 is not a whole number from 1 (the top of the list) to "
        "2147483647; fix or remove the row"
    )
    path.write_text("request_id,item_id,position,probability\nr1,a,2147483647,0.5\n")
    assert read_target_propensities(path)[0][3] == 2**31 - 1


def test_an_output_name_too_long_is_one_line(tmp_path: Path) -> None:
    path = history(tmp_path / "h.csv", GOOD[1])
    out = tmp_path / ("a" * 300 + ".json")
    result = run(
        "forecast", "--history", str(path), "--offline-lift", "0.02", "--offline-se", "0.002",
        "-f", "json", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: cannot write {out}: File name too long; choose another name\n"
    assert list(tmp_path.iterdir()) == [path]
