"""Quoting of names and text for SQL written by abeval (DuckDB, PostgreSQL).

Anything a user named (a column, an experiment, a file path) goes into SQL
through these two functions, never by hand."""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """An identifier in double quotes, inner quotes doubled: ``a"b`` → ``"a""b"``."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A string literal in single quotes, inner quotes doubled: ``it's`` → ``'it''s'``."""
    return "'" + text.replace("'", "''") + "'"
