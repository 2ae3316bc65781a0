"""The HTML report in a real browser: headless Chromium, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``) with the standard library only.

The test opens a demo report, then checks that the page logged no console error
or exception, requested nothing but itself, laid every chart out at a non-zero
size, painted each chart (a screenshot of its box is not blank and shows the
chart colours), does not overflow sideways at 1280 px, and prints to PDF; and
that the offline section takes at most a quarter of the page's height.

``make screenshot`` (scripts/screenshot.py) renders the README demo (20,000 users,
seed 1, segments by device) and refreshes ``docs/report-screenshot.png``.

Chromium comes from Debian (``apt-get install chromium``). Without it the test is
skipped, except when the ``CI`` environment variable is set: then it fails.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import struct
import subprocess
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("ABEVAL_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
WIDTH, HEIGHT = 1280, 2400
TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[2]


def _need_chromium() -> None:
    if CHROMIUM.is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: the CI image must install Debian's chromium")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")


# --------------------------------------------------------------------------- DevTools pipe


def _above_9(fd: int) -> int:
    """A close-on-exec copy of ``fd`` numbered 10 or more; ``fd`` is closed."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """Headless Chromium speaking the DevTools protocol over fds 3 (commands in)
    and 4 (replies and events out), each message NUL-terminated JSON."""

    def __init__(self, profile: Path, log: Path) -> None:
        # Pipe ends above fd 9, so that the child's dup2 onto 3 and 4 never finds
        # an end already there (dup2 onto itself would leave it close-on-exec).
        to_child_r, self._to_child = (_above_9(fd) for fd in os.pipe())
        self._from_child, from_child_w = (_above_9(fd) for fd in os.pipe())

        def wire_fds() -> None:  # runs in the child between fork and exec
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            preexec_fn=wire_fds,
            close_fds=False,  # os.pipe() fds are not inheritable; only 3 and 4 reach it
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._inbox.put(None)
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                self._inbox.put(json.loads(message))

    def _pump(self, deadline: float) -> None:
        message = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        if message is None:
            raise RuntimeError(f"chromium exited (code {self.proc.poll()})")
        if "id" in message:
            self._replies[message["id"]] = message
        else:
            self.events.append(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        command: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self._to_child, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while ident not in self._replies:
            self._pump(deadline)
        reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self._pump(deadline)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, queue.Empty):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log.close()


class Page:
    """One tab of :class:`Browser`, ``width`` CSS pixels wide."""

    def __init__(self, browser: Browser, width: int = WIDTH, height: int = HEIGHT) -> None:
        self.browser = browser
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = browser.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, self.session, **params)

    def open(self, path: Path) -> None:
        self.send("Page.navigate", url=path.resolve().as_uri())
        self.browser.wait_for("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def screenshot(self, x: float, y: float, width: float, height: float) -> bytes:
        clip = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
        data = self.send(
            "Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True
        )["data"]
        return base64.b64decode(data)

    def events(self, *methods: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.browser.events
            if e.get("sessionId") == self.session and e.get("method") in methods
        ]


# --------------------------------------------------------------------------- PNG


def decode_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """Width, height, rows of pixels and bytes per pixel of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    at = 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows, channels


def ink(png: bytes) -> tuple[float, set[tuple[int, int, int]]]:
    """Share of pixels that are not near-white, and the set of coarse colours
    (RGB rounded to 32 levels) among them."""
    width, height, rows, channels = decode_png(png)
    inked = 0
    colours: set[tuple[int, int, int]] = set()
    for row in rows:
        for i in range(0, width * channels, channels):
            r, g, b = row[i], row[i + 1], row[i + 2]
            if min(r, g, b) < 235:
                inked += 1
                colours.add((r // 32, g // 32, b // 32))
    return inked / max(width * height, 1), colours


def _is_blue(c: tuple[int, int, int]) -> bool:
    """The accent blue (#0969da and its band tint) in coarse colour units."""
    red, _, blue = c
    return blue >= 5 and blue > red + 2


# --------------------------------------------------------------------------- the demo


def build_demo(workdir: Path, users: int, seed: int = 1) -> Path:
    """Simulate, ingest and render the demo report; return the HTML path."""
    from abeval.analysis.online import ReportOptions, build_report
    from abeval.report.html import render_html
    from abeval.simulate import SimulationConfig, write_events
    from abeval.store import open_store
    from abeval.store.ingest import ingest_file

    csv = workdir / "demo.csv"
    write_events(SimulationConfig(users=users, seed=seed), csv)
    store = open_store(str(workdir / "demo.duckdb"))
    try:
        ingest_file(store, csv)
        report = build_report(store, "home-reco-v2", ReportOptions(segment="device"))
    finally:
        store.close()
    out = workdir / "home-reco-v2.html"
    out.write_text(render_html(report), encoding="utf-8")
    return out


LAYOUT = """JSON.stringify({
  svgs: [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {cls: s.getAttribute('class') || '', x: r.x + scrollX, y: r.y + scrollY,
            w: r.width, h: r.height};
  }),
  overflow: [...document.querySelectorAll('.table-wrap, main, body')].filter(
    e => e.scrollWidth > e.clientWidth + 1).map(e => e.className || e.tagName),
  sections: [...document.querySelectorAll('section[id], header[id], details[id]')].map(e => e.id),
  methodologyOpen: document.getElementById('methodology').open,
  offlineHeight: document.getElementById('offline').getBoundingClientRect().height,
  width: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight,
})"""


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_chromium()
    return build_demo(tmp_path_factory.mktemp("browser"), users=3000)


def test_report_in_headless_chromium(demo_page: Path, tmp_path: Path):
    browser = Browser(tmp_path / "profile", tmp_path / "chromium.log")
    try:
        page = Page(browser)
        page.open(demo_page)
        layout = json.loads(page.evaluate(LAYOUT))

        # No console errors, no uncaught exceptions, nothing fetched but the page.
        errors = [
            e["params"]["entry"]
            for e in page.events("Log.entryAdded")
            if e["params"]["entry"]["level"] == "error"
        ]
        errors += [
            e["params"] for e in page.events("Runtime.consoleAPICalled")
            if e["params"]["type"] in ("error", "assert")
        ]  # fmt: skip
        errors += [e["params"] for e in page.events("Runtime.exceptionThrown")]
        assert errors == []
        requested = {
            e["params"]["request"]["url"] for e in page.events("Network.requestWillBeSent")
        }
        assert requested <= {demo_page.resolve().as_uri()}

        # Every section laid out; the methodology folded.
        for section in ("summary", "decision", "health", "metrics", "guardrails", "over-time",
                        "power", "offline", "segments", "methodology"):  # fmt: skip
            assert section in layout["sections"]
        assert layout["methodologyOpen"] is False
        assert layout["overflow"] == [], "content wider than a 1280 px window"
        assert layout["width"] <= WIDTH
        # The offline section takes at most a quarter of the page (issue 10, item 7).
        assert layout["offlineHeight"] > 300  # laid out, with its tables
        assert layout["offlineHeight"] / layout["height"] <= 0.25, layout["offlineHeight"]

        # Charts and interval bars have a real size.
        charts = [s for s in layout["svgs"] if "chart" in s["cls"].split()]
        bars = [s for s in layout["svgs"] if "ibar" in s["cls"].split()]
        assert len(charts) >= 3  # two primary metrics and the users per day
        assert len(bars) >= 7
        for s in charts:
            assert s["w"] > 300 and s["h"] > 120, s
        for s in bars:
            assert s["w"] > 100 and s["h"] > 10, s

        # Each chart is painted: ink in its box, with the accent blue of the lift
        # line and band (or the arm colours of the users chart).
        for s in charts:
            share, colours = ink(page.screenshot(s["x"], s["y"], s["w"], s["h"]))
            assert share > 0.03, (s, share)
            assert any(_is_blue(c) for c in colours), s
        bar = bars[0]
        share, _ = ink(page.screenshot(bar["x"], bar["y"], bar["w"], bar["h"]))
        assert share > 0.02, (bar, share)

        # It prints: as PDF, and as print media on an A4 width (186 mm of 210 mm
        # ≈ 703 CSS px) nothing runs off the page.
        pdf = base64.b64decode(page.send("Page.printToPDF", printBackground=False)["data"])
        assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
        paper = Page(browser, width=703, height=1000)
        paper.send("Emulation.setEmulatedMedia", media="print")
        paper.open(demo_page)
        printed = json.loads(paper.evaluate(LAYOUT))
        assert printed["overflow"] == [], "the printed page is wider than A4"
    finally:
        browser.close()


def save_screenshot(
    html: Path, out: Path, profile: Path, *, width: int = WIDTH, height: int = HEIGHT
) -> int:
    """Screenshot the top ``width`` × ``height`` pixels of ``html`` into ``out``
    (scripts/screenshot.py, ``make screenshot``, refreshes the README's)."""
    browser = Browser(profile, profile.parent / "chromium.log")
    try:
        page = Page(browser, width=width, height=height)
        page.open(html)
        png = page.screenshot(0, 0, width, height)
    finally:
        browser.close()
    out.write_bytes(png)
    return len(png)
