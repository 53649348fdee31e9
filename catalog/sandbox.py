"""Parse an upload in a child process with memory, CPU and wall-clock limits.

A hostile sheet (a zip bomb, a cell that makes a pattern backtrack, millions
of empty rows) can cost any amount of memory or CPU, and a pattern holds the
GIL: in the worker process it would starve the lease keeper and every other
job. So the whole parse pipeline (`catalog.pipeline`: read, extract with
whichever extractor, validate) runs in a child process:

- started from a `forkserver` (a clean interpreter that preloads this
  module), so the child holds none of the worker's database connections or
  threads;
- with `RLIMIT_AS` (`PARSE_MAX_MEMORY_MB`) and `RLIMIT_CPU`
  (`PARSE_MAX_SECONDS`) set in the child, and the same wall-clock limit
  kept by the parent, which kills the child when it runs over;
- while the parent waits in short polls, calling ``should_stop`` each turn
  (the job context's check: lease lost, job cancelled, worker stopping), and
  kills the child when that raises;
- with no network, except to the model endpoint when the extractor calls
  one (an audit hook refuses every other lookup and connection);
- ending itself when its worker is gone (killed outright).

The child's work is one pure call, ``catalog.pipeline.read_extract_validate``,
over bytes and plain data. What it must tell the job as it goes comes up the
same pipe as events, which the parent hands to ``on_event``: the table as
soon as it is read, and a model extractor's calls (the parent's answer to
``before_call`` lets the next paid call start; each call's time is added to
the wall-clock limit, up to ``call_seconds``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.errors import (
    ExtractionError,
    ProviderRejectedError,
    ProviderTransientError,
    SheetError,
    UnreadableSheet,
)

log = logging.getLogger("catalog.sandbox")

MSG_MEMORY = (
    "this sheet needs more than {mb} MB to read; split it into smaller files "
    "or remove empty sheets, rows and columns"
)
MSG_TIME = (
    "this sheet takes longer than {seconds:g} s to read; split it into smaller "
    "files or remove empty sheets, rows and columns"
)
MSG_CRASH = "the parser stopped unexpectedly (exit code {code})"
MSG_KILLED = "the parser was killed (signal {signal})"
MSG_UNDECODABLE = "the file's text could not be decoded; save it again as UTF-8 CSV or as XLSX"
MSG_NETWORK = "the parse child may reach only the model endpoint, not {address}"

POLL_SECONDS = 0.2
WATCH_SECONDS = 0.5  # how often a child checks that its worker is still there


class ParseLimitExceeded(UnreadableSheet):
    """The child ran out of memory or time: the input is the problem."""


class ParserCrashed(Exception):
    """The child died without an answer and no limit explains it: retry."""


class ParserKilled(ParserCrashed):
    """A signal from outside the child's limits ended it (an OOM kill under a
    container limit, an operator): the input is not to blame, retry."""


@dataclass(frozen=True)
class ParseLimits:
    max_memory_mb: int = 512
    max_seconds: float = 120.0
    # The most wall-clock time one model call may add to max_seconds.
    call_seconds: float = 0.0


@dataclass
class ChildReport:
    """What the parent saw of its last child (benchmarks read it)."""

    pid: int | None = None
    peak_rss_kb: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the child's, as last seen while it ran
    call_seconds: float = 0.0  # of seconds, those spent waiting on model calls
    outcome: str = ""


last_report = ChildReport()


# --- the child -------------------------------------------------------------------


class _CpuLimit(Exception):
    pass


def _on_sigxcpu(signum, frame):
    raise _CpuLimit()


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class _ParentLink:
    """The child's side of the pipe: events up, and the parent's go-ahead
    before each paid call (a parent that must stop kills the child instead)."""

    def __init__(self, conn):
        self._conn = conn

    def table(self, data: dict) -> None:
        self._conn.send(("event", "table", (data,)))

    def before_call(self) -> None:
        self._conn.send(("event", "before_call", ()))
        self._conn.recv()

    def on_call(self, request_id: str | None, usage: dict | None) -> None:
        self._conn.send(("event", "on_call", (request_id, usage)))

    def progress(self, done: int, total: int) -> None:
        self._conn.send(("event", "progress", (done, total)))


def _endpoint_addresses(base_url: str) -> tuple[set[str], set[tuple[str, int]]]:
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        found = []  # the client's own lookup fails the same way: a connection error
    return {host}, {(sockaddr[0], sockaddr[1]) for *_rest, sockaddr in found}


def _network_only_to(base_url: str | None) -> None:
    """Refuse, in this process, every name lookup and internet connection
    but those to ``base_url`` (all of them when it is None). The refusal
    is an OSError: the model client reports a connection error."""
    hosts, addresses = _endpoint_addresses(base_url) if base_url else (set(), set())

    def guard(event: str, args: tuple) -> None:
        if event == "socket.getaddrinfo":
            host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            if host not in hosts:
                raise PermissionError(MSG_NETWORK.format(address=host))
        elif event == "socket.connect":
            sock, address = args
            if sock.family in (socket.AF_INET, socket.AF_INET6) and tuple(address[:2]) not in addresses:
                raise PermissionError(MSG_NETWORK.format(address=address[0]))

    sys.addaudithook(guard)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _die_with(worker_pid: int) -> None:
    """A worker killed outright leaves its child behind (the fork server,
    its parent, stays while the child lives): a watch thread ends the child
    once the worker is gone, rather than parse, or wait on the model, for
    nobody. (A pattern holding the GIL delays it; the CPU limit bounds that.)"""

    def watch() -> None:
        while not _gone(worker_pid):
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="watch-worker", daemon=True).start()


def _child_main(conn, request: dict, limits: ParseLimits, worker_pid: int) -> None:
    _die_with(worker_pid)
    memory = limits.max_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = max(1, int(limits.max_seconds + 0.999))
    # The soft limit raises in Python (SIGXCPU); the hard one kills a child
    # stuck in C code that never returns to the interpreter.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    endpoint = request.get("endpoint")
    _network_only_to(endpoint.base_url if endpoint is not None else None)
    try:
        from catalog.pipeline import read_extract_validate

        result = read_extract_validate(**request, link=_ParentLink(conn))
        message = ("ok", result)
    except SheetError as exc:
        message = ("sheet", exc.reason)
    except ExtractionError as exc:
        message = ("extraction", (exc.reason, exc.transient, exc.request_id))
    except MemoryError:
        message = ("memory", None)
    except _CpuLimit:
        message = ("time", None)
    except RecursionError:
        message = ("sheet", "the sheet is nested too deeply to read")
    except UnicodeError:
        # The parse is a pure function of the bytes: it would fail the same
        # way on every attempt.
        message = ("sheet", MSG_UNDECODABLE)
    except BaseException as exc:  # noqa: BLE001  reported to the parent, which retries
        import traceback

        message = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
    try:
        conn.send(("answer", message, _peak_rss_kb()))
    except MemoryError:
        conn.send(("answer", ("memory", None), _peak_rss_kb()))
    finally:
        conn.close()


# --- the parent ------------------------------------------------------------------

_context = None


def _mp_context(*, remote: bool = False):
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        # Children fork from a server that has already imported the parsers,
        # and the model client when the worker's extractor calls one (half
        # a second of CPU that each child would pay again).
        model = ["catalog.llm"] if remote else []
        ctx.set_forkserver_preload(
            [
                *model,
                "catalog.sandbox",
                "catalog.pipeline",
                "catalog.extraction",
                "catalog.mapping",
                "catalog.validation",
                "catalog.readers",
                "openpyxl",
                "charset_normalizer",
                "xlrd",
                "python_calamine",
                "pdfplumber",
            ]
        )
        _context = ctx
    return _context


def warm_up(*, remote: bool = False) -> None:
    """Start the fork server and wait until it has imported the parsers (a
    second of CPU), by forking one child that does nothing: the first
    parse of a new worker then does not wait for it."""
    child = _mp_context(remote=remote).Process(target=_nothing, name="parse-warm-up", daemon=True)
    child.start()
    child.join()


def _nothing() -> None:
    pass


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a running process, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, ValueError, IndexError):
        return 0.0


EventHandler = Callable[..., None]


def run_parse(
    request: dict,
    *,
    limits: ParseLimits,
    should_stop: Callable[[], None] | None = None,
    on_event: dict[str, EventHandler] | None = None,
) -> dict:
    """Run ``catalog.pipeline.read_extract_validate(**request)`` in a limited
    child and return its result, with ``table`` (the table it read, or None
    when it was given one).

    ``on_event`` maps the child's events (``table``, ``before_call``,
    ``on_call``, ``progress``) to handlers, called here as the events come.

    Raises ``ParseLimitExceeded`` (memory or time), ``SheetError`` (the input
    is unreadable), ``ExtractionError`` (a model call failed), ``ParserKilled``
    (a signal from outside its limits ended it), ``ParserCrashed`` (the child
    died for no known reason), or whatever ``should_stop`` or a handler
    raises, after killing the child."""
    global last_report
    ctx = _mp_context(remote=request.get("endpoint") is not None)
    parent_end, child_end = ctx.Pipe(duplex=True)
    child = ctx.Process(
        target=_child_main, args=(child_end, request, limits, os.getpid()), name="parse-sheet", daemon=True
    )
    started = time.monotonic()
    child.start()
    child_end.close()
    report = last_report = ChildReport(pid=child.pid)
    waiting = _Waiting(child, parent_end, report, limits, started, should_stop, on_event or {})
    answer = None
    try:
        answer = waiting.answer()
    finally:
        if child.is_alive() and answer is None:
            child.kill()
        child.join(5)
        parent_end.close()
        report.seconds = time.monotonic() - started
    if answer is None:
        _raise_for_silence(child.exitcode, waiting.peak_vm_kb, report, limits)
    return {**_result(answer, report, limits), "table": waiting.table}


class _Waiting:
    """The parent's side while the child works: events handled, limits kept."""

    def __init__(
        self,
        child,
        conn,
        report: ChildReport,
        limits: ParseLimits,
        started: float,
        should_stop: Callable[[], None] | None,
        handlers: dict[str, EventHandler],
    ):
        self.child, self.conn, self.report, self.limits = child, conn, report, limits
        self.should_stop, self.handlers = should_stop, handlers
        self.deadline = started + limits.max_seconds
        self.call_started: float | None = None
        self.peak_vm_kb = 0
        self.table: dict | None = None

    def answer(self) -> Any:
        """The child's answer (None when it died without one)."""
        while True:
            if self.conn.poll(POLL_SECONDS):
                try:
                    message = self.conn.recv()
                except EOFError:
                    return None  # died without a word
                if message[0] == "answer":
                    self._call_ended()
                    return message[1:]
                self._event(message[1], message[2])
                continue
            if self.should_stop is not None:
                self.should_stop()
            self._sample()
            if time.monotonic() >= self.deadline:
                self.report.outcome = "time"
                raise ParseLimitExceeded(MSG_TIME.format(seconds=self.limits.max_seconds))
            if not self.child.is_alive() and not self.conn.poll(0):
                return None

    def _event(self, name: str, args: tuple) -> None:
        self._call_ended()
        if name == "table":
            self.table = args[0]
        handler = self.handlers.get(name)
        if handler is not None:
            handler(*args)
        if name == "before_call":
            # A model call's wait is not the parse's: its time, up to
            # call_seconds, is added to the wall-clock limit.
            self.call_started = time.monotonic()
            self.deadline += self.limits.call_seconds
            self.conn.send("go")

    def _call_ended(self) -> None:
        if self.call_started is not None:
            spent = time.monotonic() - self.call_started
            self.deadline -= max(0.0, self.limits.call_seconds - spent)
            self.report.call_seconds += min(spent, self.limits.call_seconds)
            self.call_started = None

    def _sample(self) -> None:
        pid = self.child.pid
        self.report.peak_rss_kb = max(self.report.peak_rss_kb, _status_kb(pid, "VmHWM"))
        self.peak_vm_kb = max(self.peak_vm_kb, _status_kb(pid, "VmPeak"))
        self.report.cpu_seconds = max(self.report.cpu_seconds, _cpu_seconds(pid))


def _raise_for_silence(code: int | None, peak_vm_kb: int, report: ChildReport, limits: ParseLimits) -> None:
    """Why a child died without answering, as the error the job gets.

    A limit is blamed only when the child reached it: the memory limit when
    its address space came near it, the time limit on SIGXCPU (only the CPU
    limit sends it) or when its CPU time or the wall clock reached the limit
    (the hard CPU limit kills with SIGKILL). Any other signal came from
    outside (an OOM kill under a container limit, an operator): retried."""
    near_limit = peak_vm_kb >= 0.9 * limits.max_memory_mb * 1024
    if near_limit:
        report.outcome = "memory"
        raise ParseLimitExceeded(MSG_MEMORY.format(mb=limits.max_memory_mb))
    # CPU time is sampled once per poll: a child at its limit was seen
    # within a poll of it.
    spent = max(report.cpu_seconds + 2 * POLL_SECONDS, report.seconds - report.call_seconds)
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and spent >= limits.max_seconds):
        report.outcome = "time"
        raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
    if code is not None and code < 0:
        report.outcome = "killed"
        raise ParserKilled(MSG_KILLED.format(signal=-code))
    report.outcome = "crash"
    raise ParserCrashed(MSG_CRASH.format(code=code))


def _result(answer, report: ChildReport, limits: ParseLimits) -> dict:
    (kind, value), peak_kb = answer
    report.peak_rss_kb = max(report.peak_rss_kb, peak_kb)
    report.outcome = kind
    if kind == "ok":
        return value
    if kind == "sheet":
        raise UnreadableSheet(value)
    if kind == "extraction":
        reason, transient, request_id = value
        raise (ProviderTransientError if transient else ProviderRejectedError)(reason, request_id=request_id)
    if kind == "memory":
        raise ParseLimitExceeded(MSG_MEMORY.format(mb=limits.max_memory_mb))
    if kind == "time":
        raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
    raise ParserCrashed(value)


if os.name != "posix":  # pragma: no cover
    raise ImportError("catalog.sandbox needs a POSIX system (fork server, rlimits)")
