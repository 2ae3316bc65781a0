"""No secret in any output (issue 25, item 3): store URLs that carry a password or
a token, in every place a URL holds one, given to every command that takes
``--db``. The hosts are unreachable (port 1), so nothing connects: the commands
fail, and what they print (and any file they write) must not hold the secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store.backends.url_secrets import masked_url, without_secrets
from abeval.store.engine import display_url

runner = CliRunner()
SECRET = "Sup3rS3cret"
PG = "postgresql+psycopg://alice{user}@127.0.0.1:1/abeval{query}"
URLS = [
    PG.format(user=f":{SECRET}", query=""),
    PG.format(user="", query=f"?password={SECRET}"),
    PG.format(user="", query=f"?sslmode=require&sslpassword={SECRET}"),
    PG.format(user="", query=f"?token={SECRET}&application_name=x"),
    PG.format(user="", query=f"?My_Client_Secret={SECRET}"),
    PG.format(user="", query=f"?api_TOKEN={SECRET}&password={SECRET}"),
    PG.format(user=":Sup3r%53ecret", query=""),  # percent-encoded: S3cret decoded
    f"sc://alice:{SECRET}@127.0.0.1:1",
    f"sc://127.0.0.1:1/;token={SECRET}",
    f"sc://127.0.0.1:1/;user_id=alice;token={SECRET};session_secret={SECRET}",
]
EVENTS = "experiment,arm,user_id,ts,event_type\ne1,a,u1,2024-05-01,exposure\n"


def commands(tmp: Path) -> list[list[str]]:
    events = tmp / "e.csv"
    events.write_text(EVENTS)
    runs = tmp / "r.csv"
    runs.write_text("user_id,item_id,rank\nu1,i1,1\n")
    return [
        ["experiments"],
        ["report", "-e", "e1", "--format", "json", "-o", str(tmp / "r.json")],
        ["report", "-e", "e1", "-o", str(tmp / "r.html")],
        ["agreement", "-o", str(tmp / "a.html")],
        ["ingest", str(events)],
        ["rejects"],
        ["migrate"],
        ["experiment", "set", "e1", "--control", "a"],
        ["source", "add", "s", "--table", "t"],
        ["evaluate", "-t", str(runs), "-r", f"a={runs}", "--experiment", "e1", "--format", "json"],
    ]


def secret_forms() -> list[str]:
    return [SECRET, "Sup3r%53ecret", "Sup3rSecret"]


@pytest.mark.parametrize("url", URLS)
def test_no_command_shows_a_secret_of_the_url(url: str, tmp_path: Path) -> None:
    for args in commands(tmp_path):
        result = runner.invoke(app, [*args, "--db", url])
        shown = result.stdout + result.stderr
        assert result.exit_code != 0, (args, shown)
        assert ("Traceback" not in shown and result.exception is None) or isinstance(
            result.exception, SystemExit
        ), (args, shown)
        assert not any(s in shown for s in secret_forms()), (args, shown)
        assert "***" in shown or "alice" not in url, (args, shown)
    for written in tmp_path.iterdir():
        assert not any(s in written.read_text() for s in secret_forms()), written


@pytest.mark.parametrize("url", URLS)
def test_the_shown_url_keeps_all_but_the_secrets(url: str) -> None:
    shown = display_url(url)
    assert not any(s in shown for s in secret_forms())
    assert "127.0.0.1:1" in shown and "***" in shown
    assert masked_url(url) == shown
    if "application_name=x" in url:
        assert "application_name=x" in shown


def test_driver_messages_lose_query_secrets() -> None:
    url = PG.format(user="", query=f"?password={SECRET}")
    message = f'FATAL: password "{SECRET}" for user alice rejected'
    assert without_secrets(message, url) == 'FATAL: password "***" for user alice rejected'


@pytest.mark.postgres
def test_pages_and_json_of_a_reachable_store_hold_no_secret(
    tmp_path: Path, postgres_database: str
) -> None:
    url = postgres_database + ("&" if "?" in postgres_database else "?") + f"sslpassword={SECRET}"
    events = tmp_path / "e.csv"
    events.write_text(
        "experiment,arm,user_id,ts,event_type\n"
        + "".join(
            f"e1,{a},{a}{i},2024-05-01,exposure\n" for a in ("control", "t") for i in range(5)
        )
    )
    outputs = []
    for args in (
        ["ingest", str(events)],
        ["experiments", "--json"],
        ["report", "-e", "e1", "-o", str(tmp_path / "r.html")],
        ["report", "-e", "e1", "--format", "json", "-o", str(tmp_path / "r.json")],
        ["agreement", "-o", str(tmp_path / "a.html")],
        ["agreement", "--format", "json", "-o", "-"],
    ):
        result = runner.invoke(app, [*args, "--db", url])
        assert result.exit_code == 0, (args, result.output)
        outputs.append(result.stdout + result.stderr)
    outputs += [p.read_text() for p in tmp_path.iterdir() if p.suffix in (".html", ".json")]
    assert len(outputs) == 9  # six commands, three files
    assert not any(SECRET in text for text in outputs)
    assert any("sslpassword=***" in text for text in outputs)  # the store is still named
