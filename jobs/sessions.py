"""Database session limits for the long-running processes (workers, the
relay, recovery): a statement that runs away or waits behind a lock fails
with an error the loop already handles, instead of hanging the process.

The limits ride on the connection's startup `options`, so every connection
the process opens from then on (each thread has its own) has them, with no
extra round trip.
"""

import re

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections


_LIMIT = re.compile(r"\s*-c\s*(?:statement_timeout|lock_timeout|idle_in_transaction_session_timeout)=\S+")

# TCP keepalives (libpq parameters): a peer that vanished (a partition, a
# frozen VM) is noticed in about idle + interval x count seconds by both
# sides, instead of the kernel's two hours.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


def session_options(
    *, existing: str, statement_timeout_ms: int, lock_timeout_ms: int, idle_in_transaction_ms: int = 0
) -> str:
    """libpq `options` with the limits set (0 leaves a limit off), replacing
    any earlier setting of them."""
    existing = _LIMIT.sub("", existing).strip()
    parts = [existing] if existing else []
    if statement_timeout_ms > 0:
        parts.append(f"-c statement_timeout={int(statement_timeout_ms)}")
    if lock_timeout_ms > 0:
        parts.append(f"-c lock_timeout={int(lock_timeout_ms)}")
    if idle_in_transaction_ms > 0:
        parts.append(f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_ms)}")
    return " ".join(parts)


def use_job_session_limits(alias: str = DEFAULT_DB_ALIAS) -> None:
    """Apply JOB_STATEMENT_TIMEOUT_MS, JOB_LOCK_TIMEOUT_MS,
    JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS and TCP keepalives to every connection
    this process opens from now on (call once, at start).

    The idle-in-transaction limit ends the session of a process paused (or
    cut off) between two statements of a transaction: its row locks are
    released instead of holding up every job that needs them."""
    connection_settings = connections.settings[alias]
    options = connection_settings.setdefault("OPTIONS", {})
    options["options"] = session_options(
        existing=options.get("options", ""),
        statement_timeout_ms=settings.JOB_STATEMENT_TIMEOUT_MS,
        lock_timeout_ms=settings.JOB_LOCK_TIMEOUT_MS,
        idle_in_transaction_ms=settings.JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    )
    for key, value in KEEPALIVES.items():
        options.setdefault(key, value)
    # A connection opened before this call (system checks) is replaced,
    # unless a caller's transaction is open on it (a command run in-process).
    if not connections[alias].in_atomic_block:
        connections[alias].close()
