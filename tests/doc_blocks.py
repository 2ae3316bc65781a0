"""The shell sessions the docs show (README.md, docs/*.md), read as the tests run them.

A session is a fenced block with lines starting ``$ ``: each such line (joined with
the lines after a trailing ``\\``) is a command, the lines after it up to the next
``$ `` line its shown output. The rule the shown output is held to is stated at the
top of docs/usage.md: a line that is only ``...`` or ``[...]`` stands for any number
of real lines (none included); every other line must equal the real line, in
order, except an elapsed time such as ``(0.31 s, 16,129 rows/s)``, which matches any
elapsed time, and a date and time, which matches the same one or one that falls
within the test's run (the moment something was recorded).

A block preceded by ``<!-- doctest: skip REASON -->`` is not run, and says why;
one preceded by ``<!-- doctest: json-part KEY -->`` shows the object KEY of the
JSON its command prints, a list possibly cut to its first items.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^(\s*)```")
_MARKER = re.compile(r"^\s*<!--\s*doctest:\s*([\w-]+)\s*(.*?)\s*-->\s*$")
ELISION = re.compile(r"^\s*(\.\.\.|\[\.\.\.\])\s*$")
_DURATION = r"\(\d+(?:\.\d+)? s, [\d,]+ rows/s\)"
_TIME = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?"
_VOLATILE = re.compile(f"({_DURATION})|({_TIME})")


@dataclass(frozen=True)
class Command:
    """One ``$`` line of a session and the output the doc shows after it."""

    text: str
    shown: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)


@dataclass(frozen=True)
class Session:
    """A fenced block of commands, where it is, and its marker, if any."""

    doc: Path
    line: int
    commands: tuple[Command, ...]
    marker: str = ""
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def needs_demo(self) -> bool:
        """Run on the demo's store (the slow part): some command names its folder."""
        return any("demo/" in c.text for c in self.commands)


@dataclass
class _Block:
    line: int
    indent: int
    marker: tuple[str, str] | None
    lines: list[str] = field(default_factory=list)


def _blocks(doc: Path) -> Iterator[_Block]:
    block: _Block | None = None
    marker: tuple[str, str] | None = None
    for number, raw in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        fence = _FENCE.match(raw)
        if block is None:
            if fence:
                block = _Block(number, len(fence.group(1)), marker)
            elif found := _MARKER.match(raw):
                marker = (found.group(1), found.group(2))
            elif raw.strip():
                marker = None
        elif fence and len(fence.group(1)) <= block.indent and raw.strip() == "```":
            yield block
            block, marker = None, None
        else:
            block.lines.append(raw[block.indent :] if raw[: block.indent].isspace() else raw)


def sessions(doc: Path) -> list[Session]:
    """Every fenced block of ``doc`` that holds a ``$`` line."""
    out = []
    for block in _blocks(doc):
        if not any(x.startswith("$ ") for x in block.lines):
            continue
        commands: list[Command] = []
        text: str | None = None
        shown: list[str] = []
        lines = iter(block.lines)
        for raw in lines:
            if raw.startswith("$ "):
                if text is not None:
                    commands.append(Command(text, tuple(shown)))
                text, shown = raw[2:], []
                while text.endswith("\\"):
                    text = text[:-1] + " " + next(lines).strip()
            else:
                shown.append(raw)
        assert text is not None
        commands.append(Command(text, tuple(shown)))
        kind, reason = block.marker or ("", "")
        out.append(Session(doc, block.line, tuple(commands), kind, reason))
    return out


def all_sessions() -> list[Session]:
    return [s for doc in DOCS for s in sessions(doc)]


_JSON_KEYS = re.compile(
    r"^<!--[ \t]*doctest:[ \t]*json-keys[ \t]+([^\n]+?)[ \t]*-->\n(.*?)(?:\n\n(?![ -]))",
    re.S | re.M,
)


def json_key_paragraphs(doc: Path) -> list[tuple[str, set[str]]]:
    """The paragraphs after a ``<!-- doctest: json-keys SOURCE -->`` marker: SOURCE
    (a schema's path, or a ``$ abeval ...`` command that prints JSON) and the keys
    the paragraph cites (its code spans that are lower-case identifiers)."""
    out = []
    for found in _JSON_KEYS.finditer(doc.read_text(encoding="utf-8")):
        spans = re.findall(r"`([^`\n]+)`", found.group(2))
        cited = {x for x in spans if re.fullmatch(r"[a-z_][a-z0-9_]*", x)}
        out.append((found.group(1), cited - {"null", "true", "false"}))
    return out


def json_words(value: object) -> set[str]:
    """Every key of a JSON document."""
    if isinstance(value, dict):
        return set(value) | {w for v in value.values() for w in json_words(v)}
    if isinstance(value, list):
        return {w for v in value for w in json_words(v)}
    return set()


def _line_pattern(shown: str) -> tuple[re.Pattern[str], list[tuple[str, str]]]:
    """A pattern for one shown line, and the volatile parts it leaves open."""
    parts, volatile, at = [], [], 0
    for m in _VOLATILE.finditer(shown):
        parts.append(re.escape(shown[at : m.start()]))
        if m.group(1):
            parts.append(f"({_DURATION})")
            volatile.append(("duration", m.group(0)))
        else:
            parts.append(f"({_TIME})")
            volatile.append(("time", m.group(0)))
        at = m.end()
    parts.append(re.escape(shown[at:]))
    return re.compile("".join(parts)), volatile


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC)


def same_line(shown: str, real: str, run: tuple[datetime, datetime]) -> bool:
    """``real`` is what ``shown`` shows, under the rule in the module's docstring."""
    shown, real = shown.rstrip(), real.rstrip()
    if shown == real:
        return True
    pattern, volatile = _line_pattern(shown)
    found = pattern.fullmatch(real)
    if not found:
        return False
    start, end = run[0] - timedelta(minutes=1), run[1] + timedelta(minutes=1)
    for (kind, doc_value), value in zip(volatile, found.groups(), strict=True):
        if kind == "time" and value != doc_value and not start <= _parse_time(value) <= end:
            return False
    return True


def mismatch(shown: tuple[str, ...], real: list[str], run: tuple[datetime, datetime]) -> str | None:
    """Why ``real`` is not what ``shown`` shows (None when it is)."""
    while shown and not shown[-1].strip():
        shown = shown[:-1]
    while real and not real[-1].strip():
        real = real[:-1]
    segments: list[list[str]] = [[]]
    for line in shown:
        if ELISION.match(line):
            segments.append([])
        else:
            segments[-1].append(line)
    at = 0
    for i, segment in enumerate(segments):
        first, last = i == 0, i == len(segments) - 1
        starts = [at] if first else range(at, len(real) - len(segment) + 1)
        if last and not first:
            starts = [s for s in starts if s == len(real) - len(segment)] or [-1]
        found = None
        for start in starts:
            if start < 0 or start + len(segment) > len(real):
                continue
            window = real[start : start + len(segment)]
            if all(same_line(a, b, run) for a, b in zip(segment, window, strict=True)):
                found = start
                break
        if found is None:
            return _explain(segment, real[at:], run)
        at = found + len(segment)
    if len(segments) == 1 and at != len(real):
        return "the doc shows the whole output, but the command printed more:\n" + "\n".join(
            real[at : at + 5]
        )
    return None


def _explain(segment: list[str], real: list[str], run: tuple[datetime, datetime]) -> str:
    """The first shown line of ``segment`` that no real line matches, with the closest."""
    import difflib

    for line in segment:
        if not any(same_line(line, r, run) for r in real):
            close = difflib.get_close_matches(line, real, n=1, cutoff=0.3)
            return f"shown: {line!r}\n real: {close[0] if close else '(no close line)'!r}"
    return "the shown lines are all printed, but not in the order or run shown:\n" + "\n".join(
        segment
    )
