"""Drain N no-op jobs with one peer job queue, for bench/queue_throughput.py.

Runs inside the peers' own virtualenv (bench/requirements-peers.txt; never the
app's), against an empty database on the same server as the project's runs:

    PEERS_PYTHON bench/peer_drain.py procrastinate --dsn DSN --jobs 10000 --workers 2 --concurrency 4

The parent installs the peer's schema and enqueues the jobs, then starts the
worker processes; each imports everything, says "ready" and waits, so Python
start-up is not measured. The clock runs from "go" to the moment every job
is recorded as done in the database, and one JSON line is printed:
{"peer", "jobs", "seconds", "jobs_per_second"}.

Each peer runs in its best documented configuration for no-op work:
- procrastinate: async task, `run_worker(concurrency=C, wait=False)` (exits
  when the queue is empty), LISTEN/NOTIFY on.
- pgqueuer: `QueueManager.run(mode=drain, batch_size=B)`; with B > 1 it
  buffers completions (a job's completion is written with the next B - 1),
  with B = 1 every completion is written before the next dequeue.
- django-tasks with the django-tasks-db backend: `db_worker --batch`,
  `CONN_MAX_AGE` set (its documentation's advice; without it every loop
  reconnects).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
PEERS = ("procrastinate", "pgqueuer", "django-tasks-db")
ENQUEUE_CHUNK = 1000


# --- procrastinate ---------------------------------------------------------------------


def _procrastinate_app(dsn: str):
    import procrastinate

    # Built in a function on purpose: the app serves this script's own processes only.
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app, noop


def procrastinate_setup(dsn: str, jobs: int) -> None:
    app, noop = _procrastinate_app(dsn)

    async def fill() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            for start in range(0, jobs, ENQUEUE_CHUNK):
                await noop.batch_defer_async(*([{}] * min(ENQUEUE_CHUNK, jobs - start)))

    asyncio.run(fill())


def procrastinate_work(dsn: str, concurrency: int, batch: int) -> None:
    app, _ = _procrastinate_app(dsn)
    _barrier()
    app.run_worker(concurrency=concurrency, wait=False, install_signal_handlers=False)


PROCRASTINATE_DONE = "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"


# --- pgqueuer -------------------------------------------------------------------------------


def pgqueuer_setup(dsn: str, jobs: int) -> None:
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    async def fill() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        queries = Queries(PsycopgDriver(conn))
        await queries.install()
        for start in range(0, jobs, ENQUEUE_CHUNK):
            n = min(ENQUEUE_CHUNK, jobs - start)
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        await conn.close()

    asyncio.run(fill())


def pgqueuer_work(dsn: str, concurrency: int, batch: int) -> None:
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    async def work() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        manager = QueueManager(Queries(PsycopgDriver(conn)))

        @manager.entrypoint("noop")
        async def noop(job) -> None:
            return None

        await asyncio.to_thread(_barrier)
        await manager.run(
            batch_size=batch, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1)
        )

    asyncio.run(work())


# pgqueuer deletes a job when it is done; the drain ends when none is left.
PGQUEUER_DONE = "SELECT %(jobs)s - count(*) FROM pgqueuer"


# --- django-tasks-db ------------------------------------------------------------------------


def _django(dsn: str) -> None:
    os.environ["PEER_DSN"] = dsn
    os.environ["DJANGO_SETTINGS_MODULE"] = "peer_django_settings"
    sys.path.insert(0, str(HERE))
    import django

    django.setup()


def djangotasks_setup(dsn: str, jobs: int) -> None:
    _django(dsn)
    from django.core.management import call_command
    from django.db import transaction

    from peer_django_settings import noop

    call_command("migrate", verbosity=0)
    for start in range(0, jobs, ENQUEUE_CHUNK):
        with transaction.atomic():
            for _ in range(min(ENQUEUE_CHUNK, jobs - start)):
                noop.enqueue()


def djangotasks_work(dsn: str, concurrency: int, batch: int) -> None:
    _django(dsn)
    from django.core.management import call_command

    _barrier()
    call_command(
        "db_worker",
        batch=True,
        startup_delay=False,
        interval=0.05,
        verbosity=0,
        reload=False,
        worker_id=f"bench{os.getpid()}",
    )


DJANGOTASKS_DONE = "SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status = 'SUCCESSFUL'"


SETUP = {
    "procrastinate": procrastinate_setup,
    "pgqueuer": pgqueuer_setup,
    "django-tasks-db": djangotasks_setup,
}
WORK = {"procrastinate": procrastinate_work, "pgqueuer": pgqueuer_work, "django-tasks-db": djangotasks_work}
DONE = {"procrastinate": PROCRASTINATE_DONE, "pgqueuer": PGQUEUER_DONE, "django-tasks-db": DJANGOTASKS_DONE}


# --- the drain -------------------------------------------------------------------------------


def _barrier() -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("no go")


def _done(dsn: str, peer: str, jobs: int) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(DONE[peer], {"jobs": jobs}).fetchone()[0]


def drain(args: argparse.Namespace) -> dict:
    SETUP[args.peer](args.dsn, args.jobs)
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
    command = [
        sys.executable,
        __file__,
        args.peer,
        "--dsn",
        args.dsn,
        "--role",
        "worker",
        "--concurrency",
        str(args.concurrency),
        "--batch",
        str(args.batch),
    ]
    workers = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(args.workers)
    ]
    try:
        for worker in workers:
            if worker.stdout.readline().strip() != "ready":
                raise SystemExit(f"a {args.peer} worker did not start")
        started = time.perf_counter()
        for worker in workers:
            worker.stdin.write("go\n")
            worker.stdin.flush()
        deadline = started + args.timeout
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            while (done := conn.execute(DONE[args.peer], {"jobs": args.jobs}).fetchone()[0]) < args.jobs:
                if time.perf_counter() > deadline:
                    raise SystemExit(f"{args.peer}: {done} of {args.jobs} jobs done after {args.timeout} s")
                # The measurement's granularity (at most 0.1 s on drains of tens of
                # seconds), not a wait standing in for a condition; a coarser poll
                # keeps its count(*) from taking CPU from the peer it measures.
                time.sleep(0.1)
        seconds = time.perf_counter() - started
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
    return {"peer": args.peer, "jobs": args.jobs, "seconds": seconds, "jobs_per_second": args.jobs / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("peer", choices=PEERS)
    parser.add_argument("--dsn", required=True, help="libpq URL of an empty database")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1, help="pgqueuer's batch_size")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--role", choices=("drain", "worker"), default="drain")
    args = parser.parse_args()
    if args.role == "worker":
        WORK[args.peer](args.dsn, args.concurrency, args.batch)
        return
    print(json.dumps(drain(args)), flush=True)


if __name__ == "__main__":
    main()
