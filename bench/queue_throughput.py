"""Benchmark 1: queue throughput against the limit, in one run on one database.

Drains N `noop` jobs (10,000 by default) with 1, 2, 4 and 8 `runworker
--burst` processes, with `--concurrency 2` and `4` in one process, and with
`--prefetch 10` (ten claims per statement, each still with its own token,
attempt and guarded accept): the normal code path, full fencing on (the claim transaction writes the Attempt
row; the accept is the guarded UPDATE). The limit is pgbench running the same
work in raw SQL against the same tables (jobs_job, jobs_attempt) on the same
database: the claim (FOR UPDATE SKIP LOCKED, one row, plus the Attempt
insert) and the guarded completion, as two transactions per job, at 1 and 8
clients, each client running N/clients jobs so the queue drains exactly.

    .venv/bin/python bench/queue_throughput.py            # about 3-5 minutes
    .venv/bin/python bench/queue_throughput.py --quick    # 2,000 jobs, fewer runs
    .venv/bin/python bench/queue_throughput.py --profile  # also cProfile one worker

Each measured run starts from a freshly filled, vacuumed queue and a
checkpoint. Worker runs start behind a lock barrier (see common.drain_with_workers),
so Python start-up is not counted; it is printed apart.
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import re
import subprocess
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import OUT, say, table  # noqa: E402

DATABASE = "bench_queue"
PEERS_REQUIREMENTS = Path(__file__).resolve().parent / "requirements-peers.txt"
PEERS_VENV = OUT / "peers-venv"

# (label, peer, worker processes, --concurrency, pgqueuer batch_size): each
# peer's documented best for no-op work, at 2 and 8 processes like ours.
PEER_CONFIGS = [
    ("procrastinate, 2 processes x concurrency 4", "procrastinate", 2, 4, 1),
    ("procrastinate, 8 processes", "procrastinate", 8, 1, 1),
    ("pgqueuer, 2 processes, batch_size 1", "pgqueuer", 2, 1, 1),
    ("pgqueuer, 8 processes, batch_size 1", "pgqueuer", 8, 1, 1),
    ("django-tasks-db, 2 processes", "django-tasks-db", 2, 1, 1),
    ("django-tasks-db, 8 processes", "django-tasks-db", 8, 1, 1),
]
# pgqueuer's default batch buffers completions (a job is recorded done with
# the next batch_size - 1): no per-job fence, so it is shown, not compared.
PEER_BUFFERED = ("pgqueuer, 2 processes, batch_size 10 (buffered completions)", "pgqueuer", 2, 1, 10)

# The same claim and completion as jobs.services.job_claim_next and
# job_accept_output, as the fewest statements that do the same work.
PGBENCH_SCRIPT = r"""
-- claim: one row, SKIP LOCKED, fresh token, attempt + 1, database-time lease, Attempt row
BEGIN;
WITH next AS (
    SELECT id FROM jobs_job
    WHERE state IN ('queued', 'retrying') AND run_after <= now()
    ORDER BY run_after LIMIT 1
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE jobs_job AS j
    SET state = 'running', attempt = j.attempt + 1, lease_token = gen_random_uuid(),
        lease_until = clock_timestamp() + interval '60 seconds', worker_id = 'pgbench',
        waiting_seconds = j.waiting_seconds
            + extract(epoch FROM clock_timestamp() - j.state_changed_at),
        state_changed_at = clock_timestamp(), updated_at = clock_timestamp(),
        version = j.version + 1
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.attempt, j.lease_token
)
INSERT INTO jobs_attempt (job_id, number, lease_token, worker_id, started_at, outcome, error,
                          provider_request_ids)
SELECT id, attempt, lease_token, 'pgbench', now(), 'running', '', '[]'::jsonb FROM claimed
RETURNING job_id, number, lease_token
\gset
COMMIT;
-- accept: guarded by state, attempt, token and an unexpired lease, then the Attempt outcome
BEGIN;
UPDATE jobs_job
SET state = 'completed', finished_at = clock_timestamp(), lease_token = NULL, lease_until = NULL,
    output = '{"ok": true}', review_required = false, reason = '',
    running_seconds = running_seconds + extract(epoch FROM clock_timestamp() - state_changed_at),
    state_changed_at = clock_timestamp(), updated_at = clock_timestamp(), version = version + 1
WHERE id = :job_id AND state = 'running' AND attempt = :number AND lease_token = :lease_token
  AND lease_until > clock_timestamp();
UPDATE jobs_attempt SET outcome = 'succeeded', finished_at = clock_timestamp()
WHERE job_id = :job_id AND number = :number;
COMMIT;
"""


# What the report proposes for jobs.services: the claim as one statement (it
# commits on its own, so no BEGIN/COMMIT round trips), and the accept of
# output that publishes nothing as one statement that also closes the
# Attempt and writes the outbox event. Same rows, same fence, same events.


def fill(db: common.BenchDatabase, jobs: int) -> None:
    with db.connect() as conn:
        common.reset_queue(conn)
        common.insert_queued_jobs(conn, workspace_id=db.workspace_id, count=jobs)
        common.vacuum_analyze(conn, "jobs_job", "jobs_attempt")
        common.checkpoint(conn)


def run_pgbench(db: common.BenchDatabase, *, clients: int, jobs: int, mode: str) -> float:
    """jobs/s of the raw SQL pair (a pgbench transaction is one job here)."""
    fill(db, jobs)
    script = OUT / "claim_complete.sql"
    script.write_text(PGBENCH_SCRIPT)
    conn_args, conn_env = db.server.connection_args(db.name)
    cmd = [
        str(db.server.pgbench()),
        "-n",
        "-M",
        mode,
        "-f",
        str(script),
        "-c",
        str(clients),
        "-j",
        str(min(clients, 2)),
        "-t",
        str(jobs // clients),
        *conn_args,
        db.name,
    ]
    result = subprocess.run(cmd, env={**db.env(), **conn_env}, text=True, capture_output=True)
    if result.returncode != 0:
        raise SystemExit(f"pgbench failed:\n{result.stdout}\n{result.stderr}")
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", result.stdout)
    if not match:
        raise SystemExit(f"could not read pgbench's tps:\n{result.stdout}")
    with db.connect() as conn:
        done = conn.execute("SELECT count(*) FROM jobs_attempt WHERE outcome = 'succeeded'").fetchone()[0]
    expected = jobs // clients * clients
    if done != expected:
        raise SystemExit(f"pgbench completed {done} jobs, expected {expected}")
    return float(match.group(1))


def run_workers(
    db: common.BenchDatabase,
    procs: common.Processes,
    *,
    processes: int,
    concurrency: int,
    prefetch: int | None,
    jobs: int,
) -> common.Drain:
    fill(db, jobs)
    return common.drain_with_workers(
        db, procs, processes=processes, concurrency=concurrency, prefetch=prefetch, expected=jobs, timeout=600
    )


def peers_python() -> Path:
    """The peers' own virtualenv, made from bench/requirements-peers.txt when it changes."""
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".installed"
    wanted = PEERS_REQUIREMENTS.read_text()
    if not python.exists() or not stamp.exists() or stamp.read_text() != wanted:
        say(f"installing the peers into {PEERS_VENV} ...")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEERS_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "-r", str(PEERS_REQUIREMENTS)], check=True
        )
        stamp.write_text(wanted)
    return python


def run_peer(
    srv: common.Server, python: Path, *, peer: str, processes: int, concurrency: int, batch: int, jobs: int
) -> float:
    """jobs/s of one peer draining `jobs` no-op jobs in an empty database on the same server."""
    name = common.database_name("bench_peer_" + peer.replace("-", "_"))
    with psycopg.connect(srv.database_url("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = srv.database_url(name).replace("postgres://", "postgresql://", 1)
    result = subprocess.run(
        [
            str(python),
            str(Path(__file__).resolve().parent / "peer_drain.py"),
            peer,
            "--dsn",
            dsn,
            "--jobs",
            str(jobs),
            "--workers",
            str(processes),
            "--concurrency",
            str(concurrency),
            "--batch",
            str(batch),
        ],
        text=True,
        capture_output=True,
        timeout=900,
    )
    if result.returncode != 0:
        raise SystemExit(f"{peer} failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])["jobs_per_second"]


def run_peers(srv: common.Server, python: Path, *, jobs: int, quick: bool) -> dict[str, float]:
    configs = PEER_CONFIGS[::2] if quick else PEER_CONFIGS + [PEER_BUFFERED]
    rates = {}
    for label, peer, processes, concurrency, batch in configs:
        say(f"peer: {label} ...")
        rates[label] = run_peer(
            srv, python, peer=peer, processes=processes, concurrency=concurrency, batch=batch, jobs=jobs
        )
    return rates


def _statement_kind(sql: str) -> str:
    words = re.sub(r"\s+", " ", sql).replace('"', "").split(" ")
    verb = words[0].upper()
    if verb == "SELECT":
        table_name = words[words.index("FROM") + 1] if "FROM" in words else "?"
        lock = " FOR UPDATE SKIP LOCKED" if "SKIP LOCKED" in sql else ""
        return f"SELECT {table_name}{lock}"
    if verb == "INSERT":
        return f"INSERT {words[2]}"
    if verb == "UPDATE":
        return f"UPDATE {words[1]}"
    return verb


def breakdown(db: common.BenchDatabase, *, jobs: int) -> tuple[list[str], list[list[object]], float]:
    """Where one worker loop turn goes, in-process and without a profiler:
    time inside statement execution (per statement kind), in COMMIT, in
    Django's per-turn health check, and the rest (Python: the ORM building
    SQL, the worker, the handler). Same loop as Worker._loop: close_old_connections()
    then run_one()."""
    fill(db, jobs + 1)
    common.setup_django(db)
    import time as clock

    from django.db import close_old_connections, connection
    from django.test.utils import CaptureQueriesContext

    from jobs.worker import Worker

    worker = Worker(worker_id="breakdown", burst=True)
    worker.run_one()  # warm up the connection and the code paths
    with CaptureQueriesContext(connection) as captured:
        worker.run_one()
    statements = [re.sub(r"\s+", " ", q["sql"]) for q in captured.captured_queries]

    spent: dict[str, list[float]] = {}

    def note(key: str, seconds: float) -> None:
        spent.setdefault(key, []).append(seconds)

    def timed_execute(execute, sql, params, many, context):
        t = clock.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            note(_statement_kind(sql), clock.perf_counter() - t)

    original_commit, original_usable = connection._commit, connection.is_usable

    def timed_commit():
        t = clock.perf_counter()
        try:
            return original_commit()
        finally:
            note("COMMIT", clock.perf_counter() - t)

    def timed_usable():
        t = clock.perf_counter()
        try:
            return original_usable()
        finally:
            note("health check (SELECT 1)", clock.perf_counter() - t)

    connection._commit, connection.is_usable = timed_commit, timed_usable
    try:
        with connection.execute_wrapper(timed_execute):
            t0 = clock.perf_counter()
            for _ in range(jobs):
                close_old_connections()
                worker.run_one()
            total = clock.perf_counter() - t0
    finally:
        connection._commit, connection.is_usable = original_commit, original_usable
        connection.close()
    rows: list[list[object]] = []
    in_database = 0.0
    for key, values in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
        in_database += sum(values)
        rows.append(
            [
                key,
                f"{len(values) / jobs:.1f}",
                f"{sum(values) / jobs * 1000:.3f}",
                f"{sum(values) / total:.0%}",
            ]
        )
    rest = total - in_database
    rows.append(
        ["Python (ORM SQL building, worker, handler)", "", f"{rest / jobs * 1000:.3f}", f"{rest / total:.0%}"]
    )
    rows.append(["total per job", "", f"{total / jobs * 1000:.3f}", "100%"])
    return statements, rows, jobs / total


def profile_worker(db: common.BenchDatabase, procs: common.Processes, *, jobs: int) -> str:
    """cProfile one `runworker --burst` draining `jobs` noop jobs alone."""
    fill(db, jobs)
    out = OUT / "worker.prof"
    drain = common.drain_with_workers(
        db, procs, processes=1, concurrency=1, expected=jobs, prefix=["-m", "cProfile", "-o", str(out)]
    )
    stream = io.StringIO()
    stats = pstats.Stats(str(out), stream=stream)
    stats.strip_dirs().sort_stats("cumulative")
    stream.write(f"profiled drain: {drain.jobs_per_second:.0f} jobs/s under cProfile\n")
    stats.print_stats(
        r"services.py|worker.py|kinds.py|compiler.py|query.py:\d+\(update\)|"
        r"cursor.py|base.py:\d+\((execute|commit|_commit)|"
        r"transaction.py|__init__.py:\d+\((info|_log)|close_old_connections|"
        r"\{method 'execute'|\{method 'commit'|"
        r"\{method 'fetch|uuid4|PQ|_pq|waiting|wait_c|libpq",
        45,
    )
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 jobs; 1, 2 and 8 processes")
    parser.add_argument("--jobs", type=int, default=None, help="jobs per run (default 10,000)")
    parser.add_argument(
        "--mode",
        default="prepared",
        choices=["simple", "extended", "prepared"],
        help="pgbench query protocol for the limit (default prepared)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile one burst worker and count its statements per job",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="skip the peer queues (procrastinate, pgqueuer, django-tasks-db)",
    )
    parser.add_argument(
        "--profile-only", action="store_true", help="only the profile and the breakdown, no throughput runs"
    )
    args = parser.parse_args()
    jobs = args.jobs or (2000 if args.quick else 10000)
    jobs -= jobs % 8  # pgbench's clients each drain an equal share
    # (processes, --concurrency, --prefetch); None: the flag not given (the default claim)
    configs = (
        [(1, 1, None), (2, 1, None), (8, 1, None), (8, 1, 1), (8, 1, 10)]
        if args.quick
        else [
            (1, 1, None),
            (2, 1, None),
            (4, 1, None),
            (8, 1, None),
            (1, 2, None),
            (1, 4, None),
            (8, 1, 1),
            (2, 1, 10),
            (8, 1, 10),
        ]
    )

    db = common.fresh_database(DATABASE)
    procs = common.Processes("queue")
    host = common.machine(db)
    say(host.describe())
    say(f"{jobs} noop jobs per run; pgbench {db.server.pgbench()} -M {args.mode}\n")

    if args.profile_only:
        statements, parts, rate = breakdown(db, jobs=min(jobs, 2000))
        say(f"in-process: {rate:.0f} jobs/s")
        say(f"statements per noop job, {len(statements)}:")
        for sql in statements:
            say("  " + sql[:160])
        say(f"\nin-process breakdown ({rate:.0f} jobs/s in-process):")
        say(table(["part", "per job", "ms per job", "share"], parts))
        say("\n" + profile_worker(db, procs, jobs=min(jobs, 2000)))
        return
    peers_before: dict[str, float] = {}
    if not args.no_peers:
        python = peers_python()
        peers_before = run_peers(db.server, python, jobs=jobs, quick=args.quick)
    limits: dict[str, float] = {}
    say("pgbench limit, 1 client ...")
    limits["1 client"] = run_pgbench(db, clients=1, jobs=jobs, mode=args.mode)
    say("pgbench limit, 8 clients ...")
    limits["8 clients (before)"] = run_pgbench(db, clients=8, jobs=jobs, mode=args.mode)

    drains: list[tuple[str, common.Drain]] = []
    for processes, concurrency, prefetch in configs:
        label = (
            f"{processes} process{'es' if processes > 1 else ''}"
            + (f", --concurrency {concurrency}" if concurrency > 1 else "")
            + (f", --prefetch {prefetch}" if prefetch is not None else "")
        )
        say(f"runworker: {label} ...")
        drains.append(
            (
                label,
                run_workers(
                    db, procs, processes=processes, concurrency=concurrency, prefetch=prefetch, jobs=jobs
                ),
            )
        )

    say("pgbench limit, 8 clients again ...")
    limits["8 clients (after)"] = run_pgbench(db, clients=8, jobs=jobs, mode=args.mode)
    limit = max(limits["8 clients (before)"], limits["8 clients (after)"])
    single = limits["1 client"]

    peers_after: dict[str, float] = {}
    if not args.no_peers:
        peers_after = run_peers(db.server, python, jobs=jobs, quick=args.quick)

    if args.profile:
        statements, parts, rate = breakdown(db, jobs=min(jobs, 2000))
        profile_text = profile_worker(db, procs, jobs=min(jobs, 2000))

    procs.stop_all()
    say("")
    say(host.describe())
    say(f"jobs per run: {jobs}; synchronized start; jobs/s = jobs / (last accept - start), database time\n")
    say(table(["pgbench (raw SQL pair)", "jobs/s"], [[k, f"{v:.0f}"] for k, v in limits.items()]))
    say("")
    rows = []
    for label, drain in drains:
        rows.append(
            [
                label,
                f"{drain.jobs_per_second:.0f}",
                f"{drain.seconds:.2f}",
                f"{drain.startup_seconds:.1f}",
                f"{drain.wall_seconds:.1f}",
                f"{drain.jobs_per_second / limit:.2f}",
                f"{drain.jobs_per_second / single:.2f}",
            ]
        )
    say(
        table(
            [
                "runworker --burst",
                "jobs/s",
                "drain s",
                "start-up s",
                "wall s",
                f"ratio to limit ({limit:.0f})",
                f"ratio to 1 client ({single:.0f})",
            ],
            rows,
        )
    )
    if args.profile:
        say(f"\nstatements per noop job (claim + run + accept), {len(statements)}:")
        for sql in statements:
            say("  " + sql[:160])
        say(f"\nin-process breakdown of one worker loop turn ({rate:.0f} jobs/s in-process):")
        say(table(["part", "per job", "ms per job", "share"], parts))
        say("\ncProfile of one `runworker --burst` (cumulative; profiler overhead inflates Python):")
        say(profile_text)
    if peers_before:
        say("")
        say(
            table(
                ["peer (same server, same jobs)", "jobs/s before", "jobs/s after"],
                [[label, f"{rate:.0f}", f"{peers_after[label]:.0f}"] for label, rate in peers_before.items()],
            )
        )
        compared = [label for label in peers_before if "buffered" not in label]
        best_label = max(compared, key=lambda label: max(peers_before[label], peers_after[label]))
        best = max(peers_before[best_label], peers_after[best_label])
        plain = [(label, drain) for label, drain in drains if "--" not in label]
        own_label, own = max(plain, key=lambda item: item[1].jobs_per_second)
        ratio = own.jobs_per_second / best
        say(f"\nbest peer: {best_label}, {best:.0f} jobs/s")
        say(
            f"runworker with no flags, best of {len(plain)} process counts ({own_label}): "
            f"{own.jobs_per_second:.0f} jobs/s = {ratio:.2f}x the best peer; goal >= 2.00: "
            f"{'meets' if ratio >= 2 else 'misses'}"
        )
        for label, drain in drains:
            say(f"  {label}: {drain.jobs_per_second / best:.2f}x the best peer")
    say("")
    for label in ("8 processes", "8 processes, --prefetch 1", "8 processes, --prefetch 10"):
        eight = dict(drains).get(label)
        if eight is not None:
            ratio = eight.jobs_per_second / limit
            verdict = "meets" if ratio >= 0.5 else "misses"
            say(
                f"{label}: {eight.jobs_per_second:.0f} jobs/s = {ratio:.2f} of the pgbench limit "
                f"({limit:.0f} jobs/s at 8 clients); goal >= 0.50: {verdict}"
            )


if __name__ == "__main__":
    main()
