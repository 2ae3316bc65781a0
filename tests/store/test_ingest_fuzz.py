"""Property: whatever an event file holds, ``abeval ingest`` ends in one line, not
a traceback; it exits 0 or 1; and either the store is as it was, or every row
read is accounted for (inserted, repeated in the file, already stored,
conflicting or rejected) and the store's tables grew by exactly those numbers.

Valid CSV, JSON Lines and Parquet files are mutated by hypothesis: bytes flipped,
inserted or cut, the file truncated, a header name edited, a field replaced by
arbitrary text, the file re-encoded (UTF-16, Latin-1) or given byte-order marks.
The default run tries 20 examples a format; ``-m slow`` runs 300 a format.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ingest_store import counts, run

# Heavy (a browser, nbconvert or a fuzz over many files): under `make test-slow`, which
# CI runs after `make test`, so that the default suite keeps to its 15 minutes.
pytestmark = pytest.mark.slow

COLUMNS = ["experiment", "arm", "user_id", "ts", "event_type", "item_id", "value", "event_id"]
ROWS = [
    ["e1", "control", "u1", "2024-05-01T10:00:00Z", "exposure", "", "", "x1"],
    ["e1", "control", "u1", "2024-05-01T10:01:00Z", "click", "i1", "", "x2"],
    ["e1", "treatment", "u2", "2024-05-01T10:00:00Z", "exposure", "", "", "x3"],
    ["e1", "treatment", "u2", "2024-05-01T10:05:00Z", "purchase", "i3", "9.5", "x4"],
    ["e1", "treatment", "u2", "2024-05-01T10:05:00Z", "purchase", "i3", "9.5", "x4"],
    ["e1", "control", "u3", "2024-05-02T08:00:00Z", "exposure", "", "", ""],
    ["e1", "control", "u3", "2024-05-02T08:00:00Z", "rating", "i2", "4", ""],
    ["e2", "A", "u1", "2024-05-03", "exposure", "", "", "x1"],
]
# The template store holds the first half of the rows, so that "already stored"
# and conflicts with the store are reachable.
PRELOADED = ROWS[:4]


def csv_text(rows: list[list[str]], columns: list[str] = COLUMNS) -> str:
    def field(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"\n\r') else v

    return "\n".join(",".join(field(v) for v in r) for r in [columns, *rows]) + "\n"


def jsonl_text(rows: list[list[str]], columns: list[str] = COLUMNS) -> str:
    return "\n".join(json.dumps(dict(zip(columns, r, strict=True))) for r in rows) + "\n"


def parquet_bytes(rows: list[list[str]], columns: list[str] = COLUMNS) -> bytes:
    table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


@pytest.fixture
def _asked_for_slow(request: pytest.FixtureRequest) -> None:
    expression = request.config.option.markexpr or ""
    if "slow" not in expression or "not slow" in expression:
        pytest.skip("many examples: run with -m slow")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "pre.csv").write_text(csv_text(PRELOADED))
    db = folder / "store.duckdb"
    result = run("ingest", str(folder / "pre.csv"), "--db", str(db))
    assert result.exit_code == 0, result.output
    return db


# --- mutations ---------------------------------------------------------------------------

FIELD_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from(["", " ", '"', '""', ",", "\n", "\r\n", "\ufeff", "1e308", "nan", "-1", "0"])


@st.composite
def mutated_rows(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    """Rows and columns with cells replaced, rows repeated or dropped, names edited."""
    columns = list(COLUMNS)
    rows = [list(r) for r in draw(st.lists(st.sampled_from(ROWS), min_size=0, max_size=10))]
    for _ in range(draw(st.integers(0, 3))):
        if rows:
            i = draw(st.integers(0, len(rows) - 1))
            j = draw(st.integers(0, len(columns) - 1))
            rows[i][j] = draw(FIELD_TEXT)
    if draw(st.booleans()):
        j = draw(st.integers(0, len(columns) - 1))
        columns[j] = draw(
            st.sampled_from(["", "userid", "timestamp", "Arm", "event", columns[(j + 1) % 8]])
            | FIELD_TEXT
        )
    return columns, rows


@st.composite
def byte_edits(draw: st.DrawFn, data: bytes) -> bytes:
    """Flip, insert or delete bytes, truncate, re-encode, add byte-order marks."""
    out = bytearray(data)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        if kind == "flip":
            out[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            out[at:at] = draw(st.sampled_from([b"\xff", b"\xef\xbb\xbf", b"\x00", b"\r", b'"']))
        elif kind == "delete":
            del out[at]
        else:
            del out[at:]
    return bytes(out)


def encoded(draw: st.DrawFn, text: str) -> bytes:
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


# --- the property -------------------------------------------------------------------------


def check_ingest(template: Path, name: str, data: bytes, on_error: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "store.duckdb"
        shutil.copy(template, db)
        (folder / name).write_bytes(data)
        before = counts(db)
        result = run(
            "ingest", str(folder / name), "--db", str(db), "--on-error", on_error, "--json"
        )
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert "Traceback" not in result.stderr
        assert result.exit_code in (0, 1), result.output
        after = counts(db)
        if result.exit_code == 1:
            assert result.stderr.startswith("Error: ")
            assert after == before
            return
        s = json.loads(result.stdout)["files"][0]
        parts = ("inserted", "repeated_in_file", "already_stored", "conflicts", "rejected")
        assert sum(s[k] for k in parts) == s["rows_read"], s
        assert s["duplicates"] == s["repeated_in_file"] + s["already_stored"]
        assert after == (
            before[0] + s["inserted"],
            before[1] + 1,
            before[2] + s["rejected"] + s["conflicts"],
        ), s
        if on_error == "abort":
            assert s["rejected"] == s["conflicts"] == 0


FAST = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SLOW = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
ON_ERROR = st.sampled_from(["abort", "skip"])


def _csv_case(draw: st.DrawFn) -> bytes:
    columns, rows = draw(mutated_rows())
    return draw(byte_edits(encoded(draw, csv_text(rows, columns))))


def _jsonl_case(draw: st.DrawFn) -> bytes:
    columns, rows = draw(mutated_rows())
    text = jsonl_text(rows, [c or "x" for c in columns]) if len(set(columns)) == 8 else ""
    return draw(byte_edits(encoded(draw, text or jsonl_text(rows))))


def _parquet_case(draw: st.DrawFn) -> bytes:
    columns, rows = draw(mutated_rows())
    names = columns if len(set(columns)) == len(columns) and all(columns) else COLUMNS
    return (
        draw(byte_edits(parquet_bytes(rows, names)))
        if draw(st.booleans())
        else (parquet_bytes(rows, names))
    )


CASES = {"e.csv": _csv_case, "e.jsonl": _jsonl_case, "e.parquet": _parquet_case}


def _property(profile: settings) -> object:
    """The property as a test, run with ``profile``'s number of examples."""

    @profile
    @given(data=st.data(), on_error=ON_ERROR)
    def test(template: Path, name: str, data: st.DataObject, on_error: str) -> None:
        check_ingest(template, name, data.draw(st.composite(lambda d: CASES[name](d))()), on_error)

    return pytest.mark.parametrize("name", list(CASES))(test)


test_mutated_files_end_in_one_line_and_lose_no_row = _property(FAST)
# Minutes, not seconds: run only when asked for with `-m slow`.
test_mutated_files_many_examples = pytest.mark.slow(
    pytest.mark.usefixtures("_asked_for_slow")(_property(SLOW))
)
