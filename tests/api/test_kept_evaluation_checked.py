"""A kept evaluation is checked on record (issue 38, item 6): the file
``evaluate --experiment`` keeps when the store refuses its record is signed with
HMAC-SHA256 under a random key kept in the store, so an edited file whose
SHA-256 was recomputed, or a file kept for another store, is refused; and a file
signed with the store's own key is still checked for what it claims (the
experiment and arms exist, values finite and in range, its time not in the
future). Each refusal is one line and records nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ingest_store import query, run
from test_evaluate_record import (  # noqa: F401 (fixtures)
    EXP,
    expected_rows,
    files,
    ingest_hand,
    record,
    rows,
    store,
)

import abeval.analysis.evaluate.record as evaluate_record
from abeval.errors import StoreError


def kept_file(
    db: str,
    files: dict[str, Path],  # noqa: F811
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The file evaluate --experiment keeps when the record fails."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)

    def refuse(*args: Any, **kwargs: Any) -> str:
        raise StoreError("no space")

    with monkeypatch.context() as m:
        m.setattr(evaluate_record, "record_evaluation", refuse)
        assert record(db, files).exit_code == 1
    (path,) = folder.glob("evaluation-*.json")
    return path


def body(doc: dict[str, Any]) -> bytes:
    """The signed text as the docs define it: the document without its signature,
    keys sorted, as JSON."""
    return json.dumps({k: v for k, v in doc.items() if k != "signature"}, sort_keys=True).encode()


def resign(doc: dict[str, Any], key: bytes) -> None:
    doc["signature"] = hmac.new(key, body(doc), hashlib.sha256).hexdigest()


def store_key(db: str) -> bytes:
    ((secret,),) = query(db, "SELECT secret FROM store_keys WHERE name = 'kept_evaluations'")
    return bytes.fromhex(secret)


def record_file(db: str, path: Path) -> Any:
    return run("experiment", "record", str(path), "--db", db)


def test_the_signature_is_hmac_under_the_stores_key_and_records(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = kept_file(store, files, tmp_path / "w", monkeypatch)
    doc = json.loads(path.read_text())
    key = store_key(store)
    assert len(key) == 32
    assert doc["signature"] == hmac.new(key, body(doc), hashlib.sha256).hexdigest()
    assert "checksum" not in doc
    result = record_file(store, path)
    assert result.exit_code == 0, result.output
    assert rows(store) == expected_rows()


def test_a_recomputed_sha256_does_not_pass(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whoever edits the file can recompute an unkeyed digest, or sign with a key
    of their own: neither passes."""
    path = kept_file(store, files, tmp_path / "w", monkeypatch)
    doc = json.loads(path.read_text())
    doc["metrics"][0]["value"] = 0.99
    for forged in (
        hashlib.sha256(body(doc)).hexdigest(),
        hmac.new(b"\0" * 32, body(doc), hashlib.sha256).hexdigest(),
    ):
        doc["signature"] = forged
        path.write_text(json.dumps(doc))
        result = record_file(store, path)
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: {path}: its contents do not match its signature (the file was edited, "
            "or kept for another store); give the file abeval evaluate --experiment kept\n"
        )
    assert rows(store) == []


def test_a_file_kept_for_another_store_is_refused(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = kept_file(store, files, tmp_path / "w", monkeypatch)
    other = ingest_hand(str(tmp_path / "other.duckdb"), tmp_path)
    result = record_file(other, path)
    assert result.exit_code == 1
    assert "this store never kept an evaluation" in result.stderr
    kept_file(other, files, tmp_path / "w2", monkeypatch)  # now it has a key, another one
    assert store_key(other) != store_key(store)
    result = record_file(other, path)
    assert result.exit_code == 1
    assert "do not match its signature" in result.stderr
    assert rows(other) == []


def _metric(doc: dict[str, Any]) -> dict[str, Any]:
    """The treatment's mrr row (the one with a paired difference)."""
    return next(m for m in doc["metrics"] if m["arm"] == "treatment" and m["metric"] == "mrr")


def _set(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: _metric(doc).__setitem__(name, value)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_set("value", float("nan")), "value nan is not a finite number"),
        (_set("difference", float("inf")), "difference inf is not a finite number"),
        (_set("se", -0.1), "se -0.1 is negative"),
        (_set("users", 10**30), "users 1000000000000000000000000000000 is outside 0 to 1e+15"),
        (_set("users", -4), "users -4 is outside"),
        (_set("difference_low", 5.0), "the interval 5.0 to"),
        (_set("arm", "ghost"), "'ghost' is not an arm of experiment 'hand'"),
        (_set("baseline_arm", "ghost"), "'ghost' is not an arm of experiment 'hand'"),
        (
            lambda doc: doc.__setitem__("recorded_at", "9999-12-31T00:00:00"),
            "recorded_at 9999-12-31T00:00:00 is in the future",
        ),
        (
            lambda doc: doc["metrics"].append(dict(doc["metrics"][0])),
            "recorded twice",
        ),
    ],
)
def test_a_signed_file_is_still_checked_for_what_it_claims(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[dict[str, Any]], None],
    says: str,
) -> None:
    """Even signed with the store's own key (by someone who can read the store), an
    impossible evaluation is refused with one line naming what is wrong."""
    path = kept_file(store, files, tmp_path / "w", monkeypatch)
    doc = json.loads(path.read_text())
    edit(doc)
    resign(doc, store_key(store))
    path.write_text(json.dumps(doc))
    result = record_file(store, path)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: {path}: "), result.stderr
    assert says in result.stderr
    assert result.stderr.count("\n") == 1
    assert rows(store) == []


def test_another_experiment_is_refused(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = kept_file(store, files, tmp_path / "w", monkeypatch)
    doc = json.loads(path.read_text())
    doc["experiment"] = "nowhere"
    resign(doc, store_key(store))
    path.write_text(json.dumps(doc))
    result = record_file(store, path)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert rows(store) == []


def test_deeply_nested_json_is_one_line(store: str, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = record_file(store, path)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: nested too deeply to be a kept evaluation; give the file abeval "
        "evaluate --experiment kept\n"
    )
