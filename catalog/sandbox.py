"""Parse an upload in a child process with memory, CPU and wall-clock limits.

A hostile sheet (a zip bomb, a cell that makes a pattern backtrack, millions
of empty rows) can cost any amount of memory or CPU, and a pattern holds the
GIL: in the worker process it would starve the lease keeper and every other
job. So reading, and for the built-in extractor extraction and validation
too, run in a child process:

- started from a `forkserver` (a clean interpreter that preloads this
  module), so the child holds none of the worker's database connections or
  threads;
- with `RLIMIT_AS` (`PARSE_MAX_MEMORY_MB`) and `RLIMIT_CPU`
  (`PARSE_MAX_SECONDS`) set in the child, and the same wall-clock limit
  kept by the parent, which kills the child when it runs over;
- while the parent waits in short polls, calling ``should_stop`` each turn
  (the job context's check: lease lost, job cancelled, worker stopping), and
  kills the child when that raises.

The child's work is one pure call, ``parse_upload``, over bytes and plain
data; model calls never run here.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.errors import SheetError, UnreadableSheet
from catalog.reading import ReadLimits, Table, read_bytes

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

POLL_SECONDS = 0.2


class ParseLimitExceeded(UnreadableSheet):
    """The child ran out of memory or time: the input is the problem."""


class ParserCrashed(Exception):
    """The child died without an answer and no limit explains it: retry."""


@dataclass(frozen=True)
class ParseLimits:
    max_memory_mb: int = 512
    max_seconds: float = 120.0


@dataclass
class ChildReport:
    """What the parent saw of its last child (benchmarks read it)."""

    pid: int | None = None
    peak_rss_kb: int = 0
    seconds: float = 0.0
    outcome: str = ""


last_report = ChildReport()


def parse_upload(*, data: bytes | None, filename: str, table: dict | None,
                 extract: bool, read_limits: ReadLimits, layouts: dict | None = None,
                 extract_if_mapped: bool = False) -> dict:
    """Read the sheet (unless ``table``, a checkpoint, is given) and, with
    ``extract`` (or ``extract_if_mapped`` and a mapping that decides the
    columns), run the built-in extractor and validation. Pure: bytes and
    plain data in, plain data out; raises ``SheetError`` for bad input.

    ``layouts`` (``{"given": reviewer's mapping | None, "remembered": [...]}``)
    decides which columns are read (`catalog.mapping.read_items`); the result
    then has ``items``, ``notes``, ``refusal`` (why no sheet is an item list)
    and ``report`` (the columns report, the layout, whether to confirm it)."""
    parsed = Table.from_json(table) if table is not None else read_bytes(
        data, filename=filename, limits=read_limits)
    del data
    result: dict = {"table": parsed.to_json() if table is None else None}
    layouts = layouts or {"given": None, "remembered": []}
    if extract_if_mapped and not extract:
        from catalog.mapping import mapping_decides

        extract = mapping_decides(parsed, given=layouts.get("given"),
                                  remembered=layouts.get("remembered") or [])
    if extract:
        from catalog.mapping import read_items

        result.update(read_items(parsed, **layouts))
    return result


# --- the child -------------------------------------------------------------------


class _CpuLimit(Exception):
    pass


def _on_sigxcpu(signum, frame):
    raise _CpuLimit()


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child_main(conn, request: dict, limits: ParseLimits) -> None:
    memory = limits.max_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = max(1, int(limits.max_seconds + 0.999))
    # The soft limit raises in Python (SIGXCPU); the hard one kills a child
    # stuck in C code that never returns to the interpreter.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    try:
        result = parse_upload(**request)
        message = ("ok", result)
    except SheetError as exc:
        message = ("sheet", exc.reason)
    except MemoryError:
        message = ("memory", None)
    except _CpuLimit:
        message = ("time", None)
    except RecursionError:
        message = ("sheet", "the sheet is nested too deeply to read")
    except BaseException as exc:  # noqa: BLE001  reported to the parent, which retries
        import traceback

        message = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
    try:
        conn.send((message, _peak_rss_kb()))
    except MemoryError:
        conn.send((("memory", None), _peak_rss_kb()))
    finally:
        conn.close()


# --- the parent ------------------------------------------------------------------

_context = None


def _mp_context():
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        # Children fork from a server that has already imported the parsers.
        ctx.set_forkserver_preload(["catalog.sandbox", "catalog.extraction", "catalog.mapping",
                                    "catalog.validation", "catalog.readers", "openpyxl",
                                    "charset_normalizer", "xlrd", "python_calamine", "pdfplumber"])
        _context = ctx
    return _context


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_parse(request: dict, *, limits: ParseLimits,
              should_stop: Callable[[], None] | None = None) -> dict:
    """Run ``parse_upload(**request)`` in a limited child and return its result.

    Raises ``ParseLimitExceeded`` (memory or time), ``SheetError`` (the input
    is unreadable), ``ParserCrashed`` (the child died for no known reason),
    or whatever ``should_stop`` raises, after killing the child."""
    global last_report
    ctx = _mp_context()
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_main, args=(sender, request, limits),
                        name="parse-sheet", daemon=True)
    started = time.monotonic()
    child.start()
    sender.close()
    report = ChildReport(pid=child.pid)
    answer, peak_vm_kb = None, 0
    try:
        answer, peak_vm_kb = _wait_for_answer(child, receiver, report, limits, started, should_stop)
    finally:
        if child.is_alive() and answer is None:
            child.kill()
        child.join(5)
        receiver.close()
        report.seconds = time.monotonic() - started
        last_report = report
    if answer is None:
        _raise_for_silence(child.exitcode, peak_vm_kb, report, limits)
    return _result(answer, report, limits)


def _wait_for_answer(child, receiver, report: ChildReport, limits: ParseLimits, started: float,
                     should_stop: Callable[[], None] | None) -> tuple[Any, int]:
    """The child's answer (None when it died without one) and its peak virtual size."""
    peak_vm_kb = 0
    deadline = started + limits.max_seconds
    while True:
        if receiver.poll(POLL_SECONDS):
            try:
                return receiver.recv(), peak_vm_kb
            except EOFError:
                return None, peak_vm_kb  # died without a word
        if should_stop is not None:
            should_stop()
        report.peak_rss_kb = max(report.peak_rss_kb, _status_kb(child.pid, "VmHWM"))
        peak_vm_kb = max(peak_vm_kb, _status_kb(child.pid, "VmPeak"))
        if time.monotonic() >= deadline:
            report.outcome = "time"
            raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
        if not child.is_alive() and not receiver.poll(0):
            return None, peak_vm_kb


def _raise_for_silence(code: int | None, peak_vm_kb: int, report: ChildReport,
                       limits: ParseLimits) -> None:
    """Why a child died without answering, as the error the job gets."""
    near_limit = peak_vm_kb >= 0.9 * limits.max_memory_mb * 1024
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and not near_limit:
        report.outcome = "time"
        raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
    if near_limit:
        report.outcome = "memory"
        raise ParseLimitExceeded(MSG_MEMORY.format(mb=limits.max_memory_mb))
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
    if kind == "memory":
        raise ParseLimitExceeded(MSG_MEMORY.format(mb=limits.max_memory_mb))
    if kind == "time":
        raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
    raise ParserCrashed(value)


if os.name != "posix":  # pragma: no cover
    raise ImportError("catalog.sandbox needs a POSIX system (fork server, rlimits)")
