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
MSG_KILLED = "the parser was killed (signal {signal})"
MSG_UNDECODABLE = "the file's text could not be decoded; save it again as UTF-8 CSV or as XLSX"
MSG_OUTPUT = (
    "this sheet expands to more than {mb} MB of text once read (cells that repeat "
    "one value by reference, or very long values); split it into smaller files "
    "or remove the repeated text"
)

POLL_SECONDS = 0.2


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


# --- the output budget -----------------------------------------------------------
#
# Reading is bounded by what the child may use, but a cell repeated by
# reference (one shared string named by thousands of cells) costs the child
# a pointer per cell and everyone after it the whole text per cell: the
# checkpoint, the job output, the catalog rows, every page and export. So the
# child measures its result as it will be written out, and refuses it when
# it is over PARSE_MAX_OUTPUT_MB.

CELL_OVERHEAD = 3  # quotes and a comma per cell once written as JSON


def table_size(table: Table) -> int:
    """Characters the table takes once written out (cells and their quoting)."""
    total = 0
    for sheet in table.sheets:
        for row in sheet.rows:
            total += sum(map(len, row)) + CELL_OVERHEAD * len(row) + 2
        for key, raw in sheet.raw.items():
            total += len(key) + len(str(raw.get("value", ""))) + 24
    return total


def value_size(value: Any) -> int:
    """Characters a plain JSON-like value takes once written out (about)."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(len(str(k)) + 4 + value_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 2 + sum(value_size(v) + 1 for v in value)
    return len(str(value))


def check_output_size(size: int, max_output_mb: int | None) -> None:
    """Refuse a result past the budget, with the reason an uploader reads."""
    if max_output_mb and size > max_output_mb * 1024 * 1024:
        raise UnreadableSheet(MSG_OUTPUT.format(mb=max_output_mb))


@dataclass
class ChildReport:
    """What the parent saw of its last child (benchmarks read it)."""

    pid: int | None = None
    peak_rss_kb: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the child's, as last seen while it ran
    outcome: str = ""


last_report = ChildReport()


def parse_upload(*, data: bytes | None, filename: str, table: dict | None,
                 extract: bool, read_limits: ReadLimits, layouts: dict | None = None,
                 extract_if_mapped: bool = False, max_output_mb: int | None = None) -> dict:
    """Read the sheet (unless ``table``, a checkpoint, is given) and, with
    ``extract`` (or ``extract_if_mapped`` and a mapping that decides the
    columns), run the built-in extractor and validation. Pure: bytes and
    plain data in, plain data out; raises ``SheetError`` for bad input.

    ``layouts`` (``{"given": reviewer's mapping | None, "remembered": [...]}``)
    decides which columns are read (`catalog.mapping.read_items`); the result
    then has ``items``, ``notes``, ``refusal`` (why no sheet is an item list)
    and ``report`` (the columns report, the layout, whether to confirm it).

    The table and the items, as written out, are each measured against
    ``max_output_mb`` (`check_output_size`)."""
    parsed = Table.from_json(table) if table is not None else read_bytes(
        data, filename=filename, limits=read_limits)
    del data
    if table is None:
        check_output_size(table_size(parsed), max_output_mb)
    result: dict = {"table": parsed.to_json() if table is None else None}
    layouts = layouts or {"given": None, "remembered": []}
    if extract_if_mapped and not extract:
        from catalog.mapping import mapping_decides

        extract = mapping_decides(parsed, given=layouts.get("given"),
                                  remembered=layouts.get("remembered") or [])
    if extract:
        from catalog.mapping import read_items

        result.update(read_items(parsed, **layouts))
        check_output_size(value_size(result["items"]), max_output_mb)
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
    except UnicodeError:
        # The parse is a pure function of the bytes: it would fail the same
        # way on every attempt.
        message = ("sheet", MSG_UNDECODABLE)
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


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a running process, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, ValueError, IndexError):
        return 0.0


def run_parse(request: dict, *, limits: ParseLimits,
              should_stop: Callable[[], None] | None = None) -> dict:
    """Run ``parse_upload(**request)`` in a limited child and return its result.

    Raises ``ParseLimitExceeded`` (memory or time), ``SheetError`` (the input
    is unreadable), ``ParserKilled`` (a signal from outside its limits ended
    it), ``ParserCrashed`` (the child died for no known reason), or whatever
    ``should_stop`` raises, after killing the child."""
    global last_report
    ctx = _mp_context()
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_main, args=(sender, request, limits),
                        name="parse-sheet", daemon=True)
    started = time.monotonic()
    child.start()
    sender.close()
    report = last_report = ChildReport(pid=child.pid)
    answer, peak_vm_kb = None, 0
    try:
        answer, peak_vm_kb = _wait_for_answer(child, receiver, report, limits, started, should_stop)
    finally:
        if child.is_alive() and answer is None:
            child.kill()
        child.join(5)
        receiver.close()
        report.seconds = time.monotonic() - started
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
        report.cpu_seconds = max(report.cpu_seconds, _cpu_seconds(child.pid))
        if time.monotonic() >= deadline:
            report.outcome = "time"
            raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
        if not child.is_alive() and not receiver.poll(0):
            return None, peak_vm_kb


def _raise_for_silence(code: int | None, peak_vm_kb: int, report: ChildReport,
                       limits: ParseLimits) -> None:
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
    spent = max(report.cpu_seconds + 2 * POLL_SECONDS, report.seconds)
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
    if kind == "memory":
        raise ParseLimitExceeded(MSG_MEMORY.format(mb=limits.max_memory_mb))
    if kind == "time":
        raise ParseLimitExceeded(MSG_TIME.format(seconds=limits.max_seconds))
    raise ParserCrashed(value)


if os.name != "posix":  # pragma: no cover
    raise ImportError("catalog.sandbox needs a POSIX system (fork server, rlimits)")
