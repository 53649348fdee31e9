"""Shared test helpers: waiting on conditions, worker processes."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def wait_for(
    predicate: Callable[[], Any], *, timeout: float = 20.0, interval: float = 0.02, message: str = "condition"
) -> Any:
    """Poll `predicate` until it returns something truthy; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port free on the loopback address right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """A URL for the database the tests use (the test database), so that
    subprocesses see the rows the test commits."""
    s = connection.settings_dict
    auth = s["USER"] or ""
    if s["PASSWORD"]:
        auth += f":{s['PASSWORD']}"
    host = s["HOST"] or ""
    port = f":{s['PORT']}" if s["PORT"] else ""
    url = f"postgres://{auth}@{host}{port}/{s['NAME']}"
    socket_dir = (s.get("OPTIONS") or {}).get("host")
    if socket_dir:
        url += f"?host={socket_dir}"
    return url


def subprocess_env(**overrides: Any) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        SECRET_KEY="test-secret-key-for-worker-processes-0123456789-abcdefghij",
        HTTPS="false",
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        # Test receivers listen on http://127.0.0.1.
        WEBHOOK_ALLOW_INSECURE="true",
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="true",
    )
    env.update({key: str(value) for key, value in overrides.items()})
    return env


class ProcessGroup:
    """Starts manage.py commands as real processes and ends them all."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, **env: Any) -> subprocess.Popen:
        with open(self.tmp_path / f"proc-{len(self.procs)}.log", "wb") as log:  # the child keeps its own
            proc = subprocess.Popen(
                [sys.executable, str(ROOT / "manage.py"), *args],
                cwd=ROOT,
                env=subprocess_env(**env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc.log_path = log.name  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def worker(self, worker_id: str, *extra: str, **env: Any) -> subprocess.Popen:
        return self.start("runworker", "--worker-id", worker_id, *extra, **env)

    def output(self, proc: subprocess.Popen) -> str:
        return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]

    def stop_all(self) -> None:
        kill_all(self.procs)


def kill_all(procs: list[subprocess.Popen]) -> None:
    """SIGKILL every process still running (resuming paused ones first) and reap it."""
    for proc in procs:
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            except ProcessLookupError:
                pass
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


# Headers whose value is the moment of the response (never_cache's Expires):
# two responses a second apart differ there and nowhere else.
CLOCK_HEADERS = frozenset({"Date", "Expires"})


def comparable_headers(response) -> list[tuple[str, str]]:
    """The response's headers, with the clock's value replaced by its name only."""
    return sorted((name, "<clock>" if name in CLOCK_HEADERS else value) for name, value in response.items())
