"""``-o`` where no file can be written (a folder, a path under a file, a folder
that does not exist, a folder that takes no file): one line naming the path and
the fix, exit 1, nothing written, no ``.tmp`` left, the store as it was; in every
command that writes a page (report, evaluate, agreement)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from agreement_store import build_store
from ingest_store import counts, run

from abeval.errors import OutputError
from abeval.files import write_atomic


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_store(tmp_path_factory.mktemp("output-paths"), users=400)


def _evaluate_files(where: Path) -> list[str]:
    (where / "truth.csv").write_text("user_id,item_id\nu1,a\nu2,b\n")
    (where / "recs.csv").write_text("user_id,item_id,rank\nu1,a,1\nu2,a,1\n")
    return ["evaluate", "-t", "truth.csv", "-r", "recs.csv", "--k", "1", "-m", "precision"]


COMMANDS: dict[str, Callable[[str, Path], list[str]]] = {
    "report": lambda db, _: ["report", "-e", "exp-a", "--db", db],
    "agreement": lambda db, _: ["agreement", "--db", db],
    "evaluate": lambda _, where: _evaluate_files(where),
}

CASES = [
    ("adir", "Error: cannot write adir: it is a folder; name a file inside it"),
    ("afile/x.html", "Error: cannot write afile/x.html: afile is a file, not a folder; "
                     "choose another path"),
    ("afile/sub/x.html", "Error: cannot write afile/sub/x.html: afile is a file, not a folder; "
                         "choose another path"),
    ("missing/sub/x.html", "Error: cannot write missing/sub/x.html: the folder missing/sub does "
                           "not exist; create it (mkdir -p missing/sub) or choose another path"),
    ("/proc/x.html", "Error: cannot write /proc/x.html: the folder /proc takes no new file "
                     "(No such file or directory); choose a folder you can write to"),
]  # fmt: skip


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("out", "line"), CASES)
def test_an_output_that_cannot_be_written_is_one_line_and_writes_nothing(
    db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    out: str,
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = COMMANDS[command](db, tmp_path)
    Path("adir").mkdir()
    Path("afile").write_text("keep me\n")
    before_tree, before_store = _tree(tmp_path), counts(Path(db))
    result = run(*args, "--format", "json" if command == "evaluate" else "html", "-o", out)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""
    assert _tree(tmp_path) == before_tree
    assert counts(Path(db)) == before_store
    assert not Path("/proc/x.html.tmp").exists()


def test_the_default_page_folder_is_created(tmp_path: Path) -> None:
    # Only a folder abeval chose (reports/) is created; an -o folder must exist.
    write_atomic(tmp_path / "reports" / "r.html", "<p>", make_folders=True)
    assert (tmp_path / "reports" / "r.html").read_text() == "<p>"


def test_a_default_folder_under_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "reports").write_text("")
    with pytest.raises(OutputError) as caught:
        write_atomic(tmp_path / "reports" / "r.html", "<p>", make_folders=True)
    assert caught.value.path == str(tmp_path / "reports" / "r.html")
    assert f"{tmp_path / 'reports'} is a file, not a folder" in caught.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder")
def test_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(OutputError, match=r"takes no new file \(Permission denied\)"):
            write_atomic(folder / "r.html", "<p>")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_file_that_exists_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    # -o /dev/null or a named pipe: a rename would put a plain file in its place
    # (as root, in /dev), so abeval writes into it.
    import os
    import threading

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[str] = []
    reader = threading.Thread(
        target=lambda: got.append(pipe.read_text(encoding="utf-8")), daemon=True
    )
    reader.start()
    write_atomic(pipe, "<p>")
    reader.join(timeout=10)
    assert got == ["<p>"]
    assert pipe.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
