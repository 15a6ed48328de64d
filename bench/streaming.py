"""Quote streaming fan-out: N consumers (SSE and WebSocket) on M symbols at R upstream updates/s, qasync loop.

The server is the real ftdesk service (``ServiceRuntime``: the web app, the real ``QuoteHub`` and the real
SSE and WebSocket handlers) running in this process on ONE qasync loop (the app's ``DesktopEventLoop``)
with an offscreen ``QApplication``, as the tray app runs it. Only the upstream is the bench's:
``BenchQuoteFeed`` implements the ``QuoteFeed`` protocol of ``ftdesk.brokers.base`` and emits exactly R
quotes per second, round robin over the M symbols. The paper broker's own feed cannot be used for this:
a paper quote is a pure function of (symbol, whole second), so it changes at most once per second per
symbol whatever the tick, and R would not be controllable. The bench feed replaces the paper broker's
``quote_feed`` attribute before the runtime starts (no change to ftdesk needed); everything else, login
included, is the paper broker.

Each quote's ``time`` field is its upstream emit time (wall clock, microseconds), so a client computes
latency = receipt time - emit time on the same machine. Every consumer holds all M symbols, so the offered
load is N x R quote messages per second. Latency therefore includes the hub, the edge, the kernel and the
client's own scheduling. The clients run in separate processes (2 for N < 200, else ``--client-procs``,
half of them SSE and half WebSocket, each holding up to a few hundred connections) and share the two cores
with the server: that is what a desktop with local scripts looks like. They are lean on purpose (one
``selectors`` loop over raw sockets per process, no asyncio, no HTTP, WebSocket or JSON library: they find
the ``time`` field in each frame, and answer pings), so they take as little CPU as possible from the
server; each row prints their CPU too.

Scenarios, in one run (compare ratios across runs, not absolute numbers: the machine is noisy):

- ftdesk, N = 100 and N = 1,000, half SSE and half WebSocket. Unless ``--rate`` is given, R = 50,000 / N,
  so both offer the target of 50k delivered messages/s.
- the same again with ``--stalled`` more consumers (half SSE, half WebSocket; raw sockets with a 4 KiB
  receive buffer) that connect, subscribe and never read: TCP backpressure. They connect first and also
  hold 190 extra symbols that tick fast until the hub sees each of them more than a second behind (the
  kernel would otherwise absorb several MiB per socket before the server feels anything); then the extra
  symbols stop and the N readers connect. The readers' p99 is compared with the run without stalled
  consumers; the server's RSS and the stalled consumers' pending updates (at most one per held symbol:
  conflation) show that memory stays bounded. (A stalled WebSocket is also closed by the server's
  heartbeat, 15 s + 7.5 s without a pong; a stalled SSE stream stays open, its quotes conflated.)
- ftdesk N = 1,000 all SSE next to a bare aiohttp SSE fan-out of the same quotes on the same loop
  (serialised once into a shared frame log, no hub, no conflation, no auth, no middleware): the ratio of
  server CPU per delivered message is the cost of ftdesk's layers.
- cold paper symbols: a second runtime on the paper broker's own feed, a WebSocket client subscribes 100
  symbols the market has not computed yet; event-loop lag while their first quotes are made, with the
  market's stepwise warm-up and without it (the behaviour before it, by making ``warm_up`` a no-op).

Figures per row: delivered msgs/s (and the share of the offered load), conflated (the share of the offered
load the hub replaced by a newer quote before it was sent) and lost (sent by the hub, never received: must be 0;
counted once the upstream stopped after the window and the clients read everything), p50/p99/p99.9 latency, event-loop
lag (p50/p99/max overshoot of a 5 ms timer on the serving loop), server CPU per delivered message, server
and client CPU in cores, the server's RSS (before the clients connect -> when the measured window starts ->
at its end; max during the window), and the garbage collector's pauses in the window. A full collection
is run before each window: the objects of a thousand new connections would otherwise set one off (100-200
ms here) at a moment that depends on the run, not on the fan-out. Defaults take about 90 s.

    .venv/bin/python bench/streaming.py [--consumers 100,1000] [--symbols 10] [--rate R] [--seconds 8]
                                        [--stalled 20] [--client-procs 4]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import logging
import os
import platform
import resource
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

API_KEY = "s" * 32
TARGET_DELIVERED = 50_000
LAG_TIMER = 0.005
FILL_RATE = 5000
MAX_STREAM_SYMBOLS = 200  # what one SSE stream or WebSocket may hold
WARMUP_SECONDS = 1.0

# One client process: opens its connections, says "ready" once each got a first quote, reads "t0 t1" on
# stdin, counts the quotes received in [t0, t1] with a latency histogram (0.1 ms buckets) and prints it.
# A plain selectors loop, not asyncio: the clients share the server's two cores, and asyncio's machinery
# per socket event (a handle, a callback, a transport) cost them more than the server spent per message.
CLIENT = r"""
import base64, json, os, re, selectors, socket, sys, time
from datetime import datetime
from urllib.parse import urlsplit

spec = json.loads(sys.argv[1])
kind, count, symbols = spec["kind"], spec["count"], spec["symbols"]
url = urlsplit(spec["url"]) if spec["url"] else None
STAMP = re.compile(rb'"time":"([^"]+)"')
window = [float("inf"), float("-inf")]
hist, received, ready, failed, lifetime = {}, [0], [0], [0], [0]
last_data = [0.0]

def note(stamps, now):
    lifetime[0] += len(stamps)  # every quote this process ever got, for the lost count
    if window[0] <= now <= window[1]:
        received[0] += len(stamps)
        for stamp in stamps:
            bucket = int((now - datetime.fromisoformat(stamp.decode()).timestamp()) * 10000)
            hist[bucket] = hist.get(bucket, 0) + 1

def masked(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode, 0x80 | n]) if n < 126 else bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

def request(path, extra=""):
    auth = "".join(f"{k}: {v}\r\n" for k, v in spec["headers"].items())
    return f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\n{auth}{extra}\r\n".encode()

class Sse:
    # Lean on purpose: no HTTP or JSON library, only the "time" field of each frame is read.
    def __init__(self, sock):
        self.sock, self.buf, self.seen = sock, b"", False
        path = url.path + ("?" + url.query if url.query else "")
        sock.sendall(request(path, "Accept: text/event-stream\r\n"))
    def feed(self, data, now):
        self.buf += data
        end = self.buf.rfind(b"\n\n")
        if end < 0:
            return
        block, self.buf = self.buf[:end], self.buf[end + 2:]
        stamps = STAMP.findall(block)
        if stamps and not self.seen:
            self.seen = True
            ready[0] += 1
        note(stamps, now)

class Ws:
    def __init__(self, sock):
        self.sock, self.buf, self.seen, self.upgraded = sock, b"", False, False
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(request(url.path, f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                                       "Sec-WebSocket-Version: 13\r\n"))
    def feed(self, data, now):
        self.buf += data
        if not self.upgraded:
            head = self.buf.find(b"\r\n\r\n")
            if head < 0:
                return
            assert self.buf.startswith(b"HTTP/1.1 101"), self.buf[:200]
            self.buf, self.upgraded = self.buf[head + 4:], True
            self.sock.sendall(masked(1, json.dumps({"action": "subscribe", "symbols": symbols}).encode()))
        buf, pos, stamps = self.buf, 0, []
        while len(buf) - pos >= 2:
            opcode, n, start = buf[pos] & 0x0F, buf[pos + 1] & 0x7F, pos + 2
            if n == 126:
                n, start = int.from_bytes(buf[pos + 2:pos + 4], "big"), pos + 4
            elif n == 127:
                n, start = int.from_bytes(buf[pos + 2:pos + 10], "big"), pos + 10
            if len(buf) < start + n:
                break
            payload = buf[start:start + n]
            pos = start + n
            if opcode == 9:  # ping: the server closes a WebSocket that does not answer
                self.sock.sendall(masked(10, payload))
            elif opcode == 1:
                stamps += STAMP.findall(payload)
        self.buf = buf[pos:]
        if stamps and not self.seen:
            self.seen = True
            ready[0] += 1
        note(stamps, now)

def stalled(index):
    # A raw socket with a small receive buffer that sends its request and never reads a byte.
    host, port, path = spec["host"], spec["port"], spec["paths"][index % 2]
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port))
    auth = f"Authorization: Bearer {spec['key']}\r\n"
    if "/ws/quotes" in path:
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}Upgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        time.sleep(0.2)
        sock.sendall(masked(1, json.dumps({"action": "subscribe", "symbols": symbols}).encode()))
    else:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
    ready[0] += 1
    return sock

selector = selectors.DefaultSelector()

def pump(seconds):
    # One select() wakes for every ready socket at once: no per-socket callback machinery.
    until = time.time() + seconds
    while True:
        remaining = until - time.time()
        if remaining <= 0:
            return
        for key, _ in selector.select(remaining):
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                failed[0] += 1
                selector.unregister(key.fileobj)
                continue
            last_data[0] = time.time()
            key.data.feed(data, time.time())

def main():
    sockets = []
    for start in range(0, count, 50):  # ramp in batches: the server's listen backlog is 128
        for i in range(start, min(count, start + 50)):
            if kind == "stalled":
                sockets.append(stalled(i))
                continue
            sock = socket.create_connection((url.hostname, url.port))
            protocol = (Sse if kind == "sse" else Ws)(sock)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, protocol)
            sockets.append(sock)
        pump(0.05)
    deadline = time.time() + 60
    while ready[0] < count:
        assert time.time() < deadline, "not every connection got a first quote within 60 s"
        pump(0.05)
    failed[0] = 0
    print("ready", flush=True)
    window[0], window[1] = map(float, sys.stdin.readline().split())
    pump(max(0.0, window[0] - time.time()))
    cpu0 = time.process_time()
    pump(max(0.0, window[1] - time.time()))
    cpu = time.process_time() - cpu0
    # The upstream stops at t1: read what is still on its way until the sockets are quiet, say so, and keep the
    # connections open until the server has read its counters ("close"), so none of its consumers is gone yet.
    quiet_until = time.time() + 20
    while time.time() < quiet_until and time.time() - last_data[0] < 0.5:
        pump(0.1)
    pump(0.1)
    print("drained", flush=True)
    sys.stdin.readline()
    pump(0.1)
    for sock in sockets:
        sock.close()
    print(json.dumps({"received": received[0], "lifetime": lifetime[0], "hist": hist, "failed": failed[0],
                      "cpu": cpu}), flush=True)

main()
"""


# --- the upstream -------------------------------------------------------------------------------------


class Upstream:
    """Emits quotes to every sink; a quote's time is its emit time.

    ``rate`` quotes/s round robin over ``symbols`` (what every consumer holds), and ``fill_rate`` quotes/s
    over ``fill_symbols``, which only the stalled consumers hold: they fill those consumers' socket buffers
    quickly before a stalled run, then stop.
    """

    def __init__(self, symbols: Sequence[str], fill_symbols: Sequence[str]) -> None:
        from ftdesk.domain.market import Quote

        self._quote = Quote
        self.symbols = list(symbols)
        self.fill_symbols = list(fill_symbols)
        self.rate = 0.0
        self.fill_rate = 0.0
        self.sinks: list[Callable[[Any], None]] = []
        self._prices = dict.fromkeys(self.symbols + self.fill_symbols, 100.0)
        self.emitted = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        streams = [
            [lambda: self.rate, itertools.cycle(self.symbols), loop.time(), 0, 0.0],
            [lambda: self.fill_rate, itertools.cycle(self.fill_symbols), loop.time(), 0, 0.0],
        ]
        while True:
            await asyncio.sleep(0.005)
            now = loop.time()
            for stream in streams:
                wanted, symbols, start, sent, rate = stream
                if wanted() != rate:  # a new scenario: restart the count
                    start, sent, rate = now, 0, wanted()
                # Exactly rate x elapsed quotes: a late wake-up (loop lag) emits a burst, as a socket read would.
                due = int(rate * (now - start)) - sent
                for _ in range(due):
                    quote = self.make(next(symbols))
                    for sink in self.sinks:
                        sink(quote)
                stream[2:] = [start, sent + due, rate]
                self.emitted += due

    def make(self, symbol: str) -> Any:
        price = self._prices[symbol] = round(self._prices[symbol] + 0.01 * ((self.emitted % 7) - 3), 2)
        return self._quote(
            symbol=symbol,
            last=price,
            bid=round(price - 0.01, 2),
            ask=round(price + 0.01, 2),
            bid_size=300,
            ask_size=200,
            last_size=100,
            volume=1_000_000 + self.emitted,
            time=datetime.now(UTC).isoformat(timespec="microseconds"),
        )


class BenchQuoteConnection:
    """A ``QuoteConnection`` fed by the upstream: the quotes of subscribed symbols, in emit order."""

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._subscribed: set[str] = set()
        self._pending: deque[Any] = deque()
        self._wake = asyncio.Event()
        self._closed = False
        upstream.sinks.append(self._take)

    def _take(self, quote: Any) -> None:
        if quote.symbol in self._subscribed:
            self._pending.append(quote)
            self._wake.set()

    async def subscribe(self, symbols: Sequence[str]) -> None:
        self._subscribed.update(symbols)

    async def unsubscribe(self, symbols: Sequence[str]) -> None:
        self._subscribed.difference_update(symbols)

    async def messages(self) -> AsyncIterator[Any]:
        while not self._closed:
            while self._pending:
                yield self._pending.popleft()
            self._wake.clear()
            await self._wake.wait()

    async def close(self) -> None:
        self.terminate()

    def terminate(self) -> None:
        if not self._closed:
            self._closed = True
            self._wake.set()
            self._upstream.sinks.remove(self._take)


class BenchQuoteFeed:
    """The ``QuoteFeed`` the hub connects to in this bench (stands in for the paper broker's)."""

    max_symbols_per_message = 50

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._connections: list[BenchQuoteConnection] = []

    async def connect(self) -> BenchQuoteConnection:
        connection = BenchQuoteConnection(self._upstream)
        self._connections.append(connection)
        return connection

    async def snapshot(self, symbols: Sequence[str]) -> list[Any]:
        return []

    def drop_connections(self) -> None:  # the paper broker calls this on logout and close
        for connection in self._connections:
            connection.terminate()
        self._connections.clear()


class BareFanout:
    """The baseline: a bare aiohttp SSE endpoint; each quote serialised once into a shared log of frames."""

    def __init__(self) -> None:
        self._log: list[bytes] = []
        self._offset = 0  # absolute index of _log[0]
        self._changed = asyncio.Event()
        self.clients = 0

    def publish(self, quote: Any) -> None:
        if not self.clients:
            return
        self._log.append(b"event: quote\ndata: " + quote.model_dump_json().encode() + b"\n\n")
        if len(self._log) > 20_000:
            del self._log[:10_000]
            self._offset += 10_000
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def handle(self, request: Any) -> Any:
        from aiohttp import web

        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        await response.prepare(request)
        self.clients += 1
        position = self._offset + len(self._log)
        try:
            while True:
                end = self._offset + len(self._log)
                if position >= end:
                    await self._changed.wait()
                    continue
                chunk = b"".join(self._log[max(0, position - self._offset) :])
                position = end
                await response.write(chunk)
        except ConnectionResetError:
            return response  # the client went away
        finally:
            self.clients -= 1


# --- measuring ----------------------------------------------------------------------------------------


def rss_mb() -> float:
    """Return this process's resident set size in MiB (Linux /proc; else the peak from getrusage)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def hist_percentile(hist: dict[int, int], q: float) -> float:
    """Return the q-quantile in ms of a histogram of 0.1 ms buckets."""
    total = sum(hist.values())
    if not total:
        return float("nan")
    rank, seen = q * total, 0
    for bucket in sorted(hist):
        seen += hist[bucket]
        if seen >= rank:
            return bucket / 10
    return max(hist) / 10


class LagProbe:
    """Overshoot of a short timer on the serving loop: how long a ready callback may wait."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.recording = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(LAG_TIMER)
            if self.recording:
                self.samples.append(max(0.0, loop.time() - started - LAG_TIMER) * 1000)

    def take(self) -> list[float]:
        samples, self.samples = sorted(self.samples), []
        return samples

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class GcProbe:
    """The garbage collector's pauses while recording: a full collection stops the serving loop too."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, int]] = []  # (ms, generation)
        self.recording = False
        self._started = 0.0

    def __enter__(self) -> GcProbe:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.recording:
            self.pauses.append(((time.perf_counter() - self._started) * 1000, info["generation"]))

    def take(self) -> list[tuple[float, int]]:
        pauses, self.pauses = self.pauses, []
        return pauses


@dataclass
class Row:
    name: str
    consumers: int
    rate: float
    symbols: int
    offered: float
    delivered: float
    p50: float
    p99: float
    p999: float
    lag_p50: float
    lag_p99: float
    lag_max: float
    cpu_us_per_msg: float
    server_cores: float
    client_cores: float
    rss_start: float
    rss_window: float
    rss_end: float
    rss_max: float
    conflated: float | None = None
    """Updates/s the measured consumers conflated in the window (None: no hub, the bare baseline)."""
    lost: int | None = None
    """Updates their consumers handed to the socket that the clients never received (must be 0)."""
    notes: list[str] = field(default_factory=list)


async def start_clients(specs: list[dict[str, Any]]) -> list[asyncio.subprocess.Process]:
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLIENT,
            json.dumps(spec),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        for spec in specs
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 90)
        if line.strip() != b"ready":
            raise RuntimeError(f"a client process did not get ready: {line!r}")
    return procs


async def run_window(
    procs: list[asyncio.subprocess.Process],
    seconds: float,
    probe: LagProbe,
    sample: Callable[[], None],
    edge: Callable[[str], None],
) -> tuple[list[dict[str, Any]], float, list[float], list[float], list[tuple[float, int]]]:
    """Let every client count for ``seconds``; return their results, server CPU s, lag, RSS and GC pauses.

    ``edge`` is called at the window's "start" and "end" (outside the CPU measured) and once every client has
    read all that was sent ("drained": the upstream stopped at the end), before the clients close.
    """
    # Connecting a thousand clients leaves many new long-lived objects, and the full collection they cause
    # comes soon after (100-200 ms here). Run it now, so the window measures the steady state; the pauses
    # of the window itself are reported with each row.
    gc.collect()
    sample()  # outside the window: hub.status() builds every consumer's figures, O(N) on the serving loop
    t0 = time.time() + WARMUP_SECONDS
    t1 = t0 + seconds
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"{t0} {t1}\n".encode())
        await proc.stdin.drain()
    await asyncio.sleep(max(0.0, t0 - time.time()))
    edge("start")
    probe.take()
    probe.recording = True
    print(f"    (measuring for {seconds:g} s)", file=sys.stderr, flush=True)
    cpu0 = cpu_seconds()
    rss_samples = [rss_mb()]
    with GcProbe() as collections:
        collections.recording = True
        while time.time() < t1:
            await asyncio.sleep(min(0.5, max(0.0, t1 - time.time())))
            rss_samples.append(rss_mb())
        pauses = collections.take()
    cpu = cpu_seconds() - cpu0
    sample()
    probe.recording = False
    lag = probe.take()
    edge("end")
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line.strip() != b"drained":
            raise RuntimeError(f"a client process did not drain: {line!r}")
    edge("drained")
    results = []
    for proc in procs:
        out, _ = await asyncio.wait_for(proc.communicate(b"close\n"), 60)
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results, cpu, lag, rss_samples, pauses


def merge(results: list[dict[str, Any]]) -> tuple[int, dict[int, int]]:
    total, hist = 0, {}
    for result in results:
        total += result["received"]
        for bucket, n in result["hist"].items():
            hist[int(bucket)] = hist.get(int(bucket), 0) + n
    return total, hist


def client_specs(
    kind: str, count: int, procs: int, url_sse: str, url_ws: str, symbols: list[str]
) -> list[dict[str, Any]]:
    """Split ``count`` connections of a kind ("mix": half SSE, half WS; "sse"; "bare") over ``procs`` processes."""
    auth = {"Authorization": f"Bearer {API_KEY}"}
    if kind == "mix":
        halves = [("sse", url_sse, count // 2), ("ws", url_ws, count - count // 2)]
        per_kind = max(1, procs // 2)
    else:
        halves = [("sse", url_sse, count)]
        per_kind = procs
    specs = []
    for client_kind, url, n in halves:
        for part in range(per_kind):
            share = n // per_kind + (1 if part < n % per_kind else 0)
            if share:
                headers = {} if kind == "bare" else auth
                specs.append({"kind": client_kind, "url": url, "count": share, "symbols": symbols, "headers": headers})
    return specs


# --- scenarios ----------------------------------------------------------------------------------------


async def streaming_rows(args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    from aiohttp import web
    from pydantic import SecretStr

    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.domain.session import Credentials
    from ftdesk.logs import SecretRedactor

    symbols = [f"Q{i:03d}" for i in range(args.symbols)]
    fill_symbols = [f"F{i:03d}" for i in range(MAX_STREAM_SYMBOLS - len(symbols))]
    upstream = Upstream(symbols, fill_symbols)
    bare = BareFanout()
    upstream.sinks.append(bare.publish)
    rows: list[Row] = []
    notes: list[str] = []
    probe = LagProbe()
    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings(
            {
                "FTSERVICE_DATA_DIR": data_dir,
                "FTSERVICE_PORT": "0",
                "FTSERVICE_API_KEY": API_KEY,
                "FTSERVICE_PAPER_SEED": "1",
            }
        )
        runtime = ServiceRuntime(settings, redactor=SecretRedactor())
        runtime.broker.quote_feed = BenchQuoteFeed(upstream)  # type: ignore[misc]  # see the module docstring
        context = await runtime.start()
        hub = context.quotes
        await context.session.login(Credentials(username="bench", password=SecretStr("bench")))

        bare_app = web.Application()
        bare_app.router.add_get("/quotes", bare.handle)
        bare_runner = web.AppRunner(bare_app, access_log=None, shutdown_timeout=0.5)
        await bare_runner.setup()
        site = web.TCPSite(bare_runner, "127.0.0.1", 0)
        await site.start()
        bare_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        port = int(runtime.url.rsplit(":", 1)[1])
        url_sse = f"{runtime.url}/api/v1/streaming/quotes?symbols={','.join(symbols)}"
        url_ws = f"{runtime.url.replace('http', 'ws', 1)}/api/v1/ws/quotes"
        url_bare = f"http://127.0.0.1:{bare_port}/quotes"
        emitter = asyncio.ensure_future(upstream.run())
        probe.start()

        async def scenario(name: str, kind: str, consumers: int, stalled: int = 0) -> Row:
            rate = args.rate if args.rate is not None else TARGET_DELIVERED / consumers
            upstream.rate = rate
            procs_n = args.client_procs if consumers >= 200 else 2
            url = url_bare if kind == "bare" else url_sse
            specs = client_specs(kind, consumers, procs_n, url, url_ws, symbols)
            rss_start = rss_mb()
            stalled_procs: list[asyncio.subprocess.Process] = []
            stalled_note = ""
            if stalled:
                # The stalled consumers first, and the others only once the hub sees them fall behind:
                # their sockets and the server's write buffer are full, so every later quote is conflated.
                stalled_spec = {
                    "kind": "stalled",
                    "url": "",
                    "count": stalled,
                    "symbols": symbols + fill_symbols,
                    "headers": {},
                    "host": "127.0.0.1",
                    "port": port,
                    "key": API_KEY,
                    "paths": [
                        f"/api/v1/streaming/quotes?symbols={','.join(symbols + fill_symbols)}",
                        "/api/v1/ws/quotes",
                    ],
                }
                began = time.perf_counter()
                stalled_procs = await start_clients([stalled_spec])
                # The kernel grows a loopback socket's send buffer to a few MiB before the server feels any
                # backpressure: fill it fast with quotes of symbols only these consumers hold, then stop.
                upstream.fill_rate = FILL_RATE
                behind = 0
                while time.perf_counter() - began < 30:
                    behind = sum(c.lag_seconds > 1.0 for c in hub.status().consumers)
                    if behind >= stalled:
                        break
                    await asyncio.sleep(0.5)
                upstream.fill_rate = 0
                stalled_note = (
                    f"{behind} of {stalled} stalled consumers >1 s behind after {time.perf_counter() - began:.0f} s "
                    f"of {len(fill_symbols)} extra symbols at {FILL_RATE} updates/s"
                )
            procs = await start_clients(specs)
            stalled_seen: list[tuple[int, int]] = []

            def sample() -> None:
                if stalled:
                    lagging = [c for c in hub.status().consumers if c.lag_seconds > 1.0]
                    stalled_seen.append((len(lagging), max((c.pending for c in lagging), default=0)))

            # Conflated: the hub's count for the measured consumers (those holding exactly the M symbols) over the
            # window. Lost: what their consumers handed to the socket (delivered) and the clients never got, over
            # the connections' whole life; counted once the upstream stopped and the clients read everything.
            hub_counts: dict[str, int] = {}

            def edge(moment: str) -> None:
                if kind != "bare":
                    measured = [
                        c for c in hub.status().consumers if c.kind in ("sse", "ws") and c.symbol_count == len(symbols)
                    ]
                    hub_counts[f"conflated_{moment}"] = sum(c.conflated for c in measured)
                    hub_counts[f"delivered_{moment}"] = sum(c.delivered for c in measured)
                if moment == "end":
                    upstream.rate = 0

            results, cpu, lag, rss_samples, pauses = await run_window(
                stalled_procs + procs, args.seconds, probe, sample, edge
            )
            total, hist = merge(results)
            failed = sum(r["failed"] for r in results)
            delivered = total / args.seconds
            row = Row(
                name=name,
                consumers=consumers,
                rate=rate,
                symbols=len(symbols),
                offered=consumers * rate,
                delivered=delivered,
                p50=hist_percentile(hist, 0.50),
                p99=hist_percentile(hist, 0.99),
                p999=hist_percentile(hist, 0.999),
                lag_p50=percentile(lag, 0.5),
                lag_p99=percentile(lag, 0.99),
                lag_max=lag[-1] if lag else 0.0,
                cpu_us_per_msg=cpu / total * 1e6 if total else float("nan"),
                server_cores=cpu / args.seconds,
                client_cores=sum(r["cpu"] for r in results) / args.seconds,
                rss_start=rss_start,
                rss_window=rss_samples[0],
                rss_end=rss_samples[-1],
                rss_max=max(rss_samples),
            )
            if failed:
                row.notes.append(f"{failed} client connections failed")
            if kind != "bare":
                row.conflated = (hub_counts["conflated_end"] - hub_counts["conflated_start"]) / args.seconds
                row.lost = hub_counts["delivered_drained"] - sum(r["lifetime"] for r in results if "lifetime" in r)
                # The stalled clients count nothing: their "lifetime" is 0 and their consumers are not measured.
            if pauses:
                longest, generation = max(pauses)
                full = sum(1 for _, gen in pauses if gen == 2)
                row.notes.append(
                    f"GC in the window: {len(pauses)} collections ({full} full), "
                    f"longest {longest:.1f} ms (generation {generation})"
                )
            if stalled:
                row.notes.append(
                    f"{stalled_note}; before and after the window {min(n for n, _ in stalled_seen)}-"
                    f"{max(n for n, _ in stalled_seen)} consumers >1 s behind, each holding at most "
                    f"{max(p for _, p in stalled_seen)} pending updates (conflated: one per symbol)"
                )
            print(format_row(row), flush=True)
            # Let the server notice the closed clients before the next scenario.
            for _ in range(100):
                if runtime.context is not None and runtime.context.streams.open_count == 0 and not bare.clients:
                    break
                await asyncio.sleep(0.1)
            return row

        for n in args.consumers:
            rows.append(await scenario(f"ftdesk {n} (SSE+WS)", "mix", n))
            if args.stalled:
                rows.append(await scenario(f"ftdesk {n} (SSE+WS) + {args.stalled} stalled", "mix", n, args.stalled))
        big = max(args.consumers)
        rows.append(await scenario(f"ftdesk {big} (SSE only)", "sse", big))
        rows.append(await scenario(f"bare aiohttp {big} (SSE)", "bare", big))

        await probe.stop()
        emitter.cancel()
        await asyncio.gather(emitter, return_exceptions=True)
        await runtime.stop()
        await bare_runner.cleanup()
    return rows, notes


COLD_CLIENT = r"""
import asyncio, json, sys, time
import aiohttp

url, key, symbols = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

async def main():
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(url, headers={"Authorization": f"Bearer {key}"}) as ws:
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            started = time.perf_counter()
            await ws.send_str(json.dumps({"action": "subscribe", "symbols": symbols}))
            seen = set()
            async for msg in ws:
                frame = json.loads(msg.data)
                if frame.get("type") == "quote":
                    seen.add(frame["symbol"])
                    if len(seen) == len(symbols):
                        break
    print(json.dumps({"seconds": time.perf_counter() - started, "quotes": len(seen)}), flush=True)

asyncio.run(main())
"""


async def cold_symbols_row(*, warm_up: bool, count: int = 100) -> dict[str, float]:
    """Loop lag while a WebSocket client subscribes ``count`` paper symbols the market has not computed yet.

    ``warm_up=False`` measures the behaviour before the stepwise warm-up (every cold quote computed in one
    go inside the feed's read loop), by making the market's ``warm_up`` a no-op for this run.
    """
    from pydantic import SecretStr

    from ftdesk.app import ServiceRuntime
    from ftdesk.brokers.paper.market.simulator import MarketSimulator
    from ftdesk.brokers.paper.universe import Universe
    from ftdesk.config import load_settings
    from ftdesk.domain.session import Credentials
    from ftdesk.logs import SecretRedactor

    probe = LagProbe()
    original = MarketSimulator.warm_up
    if not warm_up:
        MarketSimulator.warm_up = lambda self, symbol: iter(())  # type: ignore[method-assign,assignment]
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            settings = load_settings(
                {
                    "FTSERVICE_DATA_DIR": data_dir,
                    "FTSERVICE_PORT": "0",
                    "FTSERVICE_API_KEY": API_KEY,
                    "FTSERVICE_PAPER_SEED": "1",
                }
            )
            runtime = ServiceRuntime(settings, redactor=SecretRedactor())
            context = await runtime.start()
            await context.session.login(Credentials(username="bench", password=SecretStr("bench")))
            # Symbols the seeded accounts do not hold, so nothing has quoted them yet.
            broker = runtime.broker
            held = {
                p.symbol
                for a in await broker.accounts.get_accounts()
                for p in await broker.accounts.get_positions(a.acct_num)
            }
            symbols = [s for s in Universe.load().symbols if s not in held][:count]
            url = f"{runtime.url.replace('http', 'ws', 1)}/api/v1/ws/quotes"
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                COLD_CLIENT,
                url,
                API_KEY,
                json.dumps(symbols),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            assert proc.stdin is not None and proc.stdout is not None
            assert (await proc.stdout.readline()).strip() == b"ready"
            probe.start()
            probe.recording = True
            await asyncio.sleep(1.0)
            idle = probe.take()
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            out, _ = await asyncio.wait_for(proc.communicate(), 120)
            probe.recording = False
            lag = probe.take()
            await probe.stop()
            await runtime.stop()
    finally:
        MarketSimulator.warm_up = original  # type: ignore[method-assign]
    result = json.loads(out.decode().strip().splitlines()[-1])
    return {
        "symbols": float(result["quotes"]),
        "seconds": result["seconds"],
        "idle_p99": percentile(idle, 0.99),
        "lag_p50": percentile(lag, 0.5),
        "lag_p99": percentile(lag, 0.99),
        "lag_max": lag[-1] if lag else 0.0,
    }


# --- output -------------------------------------------------------------------------------------------


def format_row(row: Row) -> str:
    share = row.delivered / row.offered * 100 if row.offered else 0.0
    if row.conflated is None:
        fate = "conflated    - lost -  "
    else:
        conflated_share = row.conflated / row.offered * 100 if row.offered else 0.0
        fate = f"conflated {conflated_share:4.1f}% lost {row.lost}  "
    text = (
        f"  {row.name:<36} R={row.rate:6.0f}/s  delivered {row.delivered:8.0f} msg/s ({share:5.1f}%)  {fate}"
        f"latency p50 {row.p50:6.1f} p99 {row.p99:6.1f} p99.9 {row.p999:6.1f} ms  "
        f"loop lag p50 {row.lag_p50:5.1f} p99 {row.lag_p99:5.1f} max {row.lag_max:6.1f} ms  "
        f"CPU {row.cpu_us_per_msg:5.1f} us/msg (server {row.server_cores:.2f}, clients {row.client_cores:.2f} cores)  "
        f"RSS {row.rss_start:.0f}->{row.rss_window:.0f}->{row.rss_end:.0f} MiB (max {row.rss_max:.0f})"
    )
    for note in row.notes:
        text += f"\n      {note}"
    return text


def parse_consumers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--consumers", type=parse_consumers, default=[100, 1000], help="comma-separated N values (empty: cold run only)"
    )
    parser.add_argument("--symbols", type=int, default=10, help="M: symbols every consumer holds")
    parser.add_argument("--rate", type=float, default=None, help="R: upstream updates/s (default 50,000 / N)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per scenario")
    parser.add_argument("--stalled", type=int, default=20, help="consumers that never read (0: skip that run)")
    parser.add_argument("--client-procs", type=int, default=4, help="client processes for N >= 200")
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold paper symbols run")
    parser.add_argument(
        "--stock-qasync", action="store_true", help="serve from qasync.QEventLoop instead of the app's loop"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    import PySide6
    import qasync
    from PySide6.QtWidgets import QApplication

    from ftdesk.gui.event_loop import DesktopEventLoop

    app = QApplication.instance() or QApplication([])
    loop_class = qasync.QEventLoop if args.stock_qasync else DesktopEventLoop
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"PySide6 {PySide6.__version__}, {loop_class.__name__}; clients in separate processes on the same cores",
        flush=True,
    )
    print(
        f"M={args.symbols} symbols held by every consumer, {args.seconds:g} s measured per row; "
        f"load average before: {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    started = time.perf_counter()
    with asyncio.Runner(loop_factory=lambda: loop_class(app)) as runner:
        rows = runner.run(streaming_rows(args))[0] if args.consumers else []
        if not args.skip_cold:
            for warm_up in (False, True):
                cold = runner.run(cold_symbols_row(warm_up=warm_up))
                print(
                    f"  cold paper symbols, {'stepwise warm-up' if warm_up else 'no warm-up (before)':<20}: "
                    f"{cold['symbols']:.0f} first quotes in {cold['seconds'] * 1000:5.0f} ms; "
                    f"loop lag p50 {cold['lag_p50']:.1f} p99 {cold['lag_p99']:.1f} max {cold['lag_max']:.1f} ms "
                    f"(idle p99 {cold['idle_p99']:.1f} ms)",
                    flush=True,
                )
    by_name = {row.name: row for row in rows}
    big = max(args.consumers, default=0)
    ours, bare = by_name.get(f"ftdesk {big} (SSE only)"), by_name.get(f"bare aiohttp {big} (SSE)")
    if ours and bare:
        ratio = ours.cpu_us_per_msg / bare.cpu_us_per_msg
        print(f"  ratio ftdesk/bare server CPU per message (SSE, N={big}): {ratio:.2f}")
    for n in args.consumers:
        stalled = by_name.get(f"ftdesk {n} (SSE+WS) + {args.stalled} stalled")
        plain = by_name.get(f"ftdesk {n} (SSE+WS)")
        if stalled and plain:
            print(f"  N={n}: p99 of the others with/without stalled consumers: {stalled.p99:.1f} / {plain.p99:.1f} ms")
    print(f"whole bench: {time.perf_counter() - started:.0f} s; load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
