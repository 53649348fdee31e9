"""Benchmark 6: claim latency as the table grows, and pruning it.

Claim latency is `job_claim_next` + `job_accept_output` of a noop job, called
in this process (one worker's view, no process start-up), p50/p99 over 2,000
claims:

1. empty history: 10,000 queued jobs, nothing else;
2. history: 1,000,000 finished jobs (completed, needs_attention, cancelled;
   31 to 112 days old) with an attempt and a delivered outbox message each,
   1% of the completed ones with a catalog revision, and 10,000 queued jobs.
   Inserted with INSERT ... SELECT generate_series. The partial index
   `job_claimable` should keep the claim flat; its plan is shown once.
3. `prunejobs --older-than 30` in a separate process, timed, while this
   process keeps claiming: the claim latency measured during the prune shows
   whether it blocks workers.

    .venv/bin/python bench/table_scale.py            # about 5-8 minutes
    .venv/bin/python bench/table_scale.py --quick    # 100,000 finished jobs, 500 claims
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import MANAGE, PYTHON, ms, percentile, say, table  # noqa: E402

DATABASE = "bench_scale"
QUEUED = 10_000
RETENTION_DAYS = 30


def insert_history(db: common.BenchDatabase, finished: int) -> dict[str, float]:
    """Finished jobs, their attempts and outbox messages, and some revisions."""
    timings = {}
    with db.connect() as conn:
        t = time.monotonic()
        conn.execute(
            f"""INSERT INTO jobs_job ({common._JOB_COLUMNS})
            SELECT gen_random_uuid(), 'noop', %(ws)s, '{{}}'::jsonb, s.state, 3, 1, 5,
                   NULL, NULL, 'seed', s.t - interval '1 minute', NULL, '',
                   0, 0, '', '{{"ok": true}}'::jsonb, false, NULL,
                   s.t, 0.5, 0.01, 0, s.t - interval '1 minute', s.t, s.t
            FROM (SELECT now() - interval '{RETENTION_DAYS + 1} days' - g * interval '7 seconds' AS t,
                         CASE WHEN g %% 50 = 0 THEN 'needs_attention'
                              WHEN g %% 97 = 0 THEN 'cancelled'
                              ELSE 'completed' END AS state
                  FROM generate_series(1, %(n)s) AS g) AS s""",
            {"ws": db.workspace_id, "n": finished},
        )
        timings["jobs"] = time.monotonic() - t
        t = time.monotonic()
        conn.execute(
            """INSERT INTO jobs_attempt (job_id, number, lease_token, worker_id, started_at,
                                         finished_at, outcome, error, diagnostic,
                                         provider_request_ids, token_usage)
            SELECT id, 1, gen_random_uuid(), 'seed', created_at, finished_at,
                   CASE state WHEN 'completed' THEN 'succeeded' WHEN 'needs_attention' THEN 'failed'
                              ELSE 'cancelled' END, '', NULL, '[]'::jsonb, NULL
            FROM jobs_job"""
        )
        timings["attempts"] = time.monotonic() - t
        t = time.monotonic()
        conn.execute(
            """INSERT INTO jobs_outboxmessage (id, workspace_id, topic, payload, created_at,
                                               available_at, attempts, delivered_at, failed_at,
                                               last_error)
            SELECT gen_random_uuid(), workspace_id, 'job.' || state,
                   jsonb_build_object('job_id', id::text, 'kind', kind, 'state', state, 'attempt', 1),
                   finished_at, finished_at, 1, finished_at, NULL, ''
            FROM jobs_job"""
        )
        timings["outbox"] = time.monotonic() - t
        t = time.monotonic()
        conn.execute(
            """INSERT INTO catalog_catalogrevision (workspace_id, supplier_id, job_id, attempt,
                                                    published_at, approved_by_id, item_count)
            SELECT workspace_id, NULL, id, 1, finished_at, NULL, 0
            FROM jobs_job WHERE state = 'completed' AND abs(hashtext(id::text)) % 100 = 0"""
        )
        timings["revisions"] = time.monotonic() - t
        t = time.monotonic()
        common.vacuum_analyze(
            conn, "jobs_job", "jobs_attempt", "jobs_outboxmessage", "catalog_catalogrevision"
        )
        timings["vacuum analyze"] = time.monotonic() - t
    return timings


def refill(db: common.BenchDatabase, count: int = QUEUED) -> None:
    with db.connect() as conn:
        common.insert_queued_jobs(conn, workspace_id=db.workspace_id, count=count)
        conn.execute("ANALYZE jobs_job")


class Claimer:
    """Claim + accept in this process, timed; refills the queue (untimed) when empty."""

    def __init__(self, db: common.BenchDatabase):
        from jobs.services import job_accept_output, job_claim_next

        self.db = db
        self.claim_next, self.accept = job_claim_next, job_accept_output
        self.claims: list[float] = []
        self.accepts: list[float] = []
        self.pairs: list[float] = []
        self.at: list[float] = []

    def once(self) -> None:
        t0 = time.perf_counter()
        claim = self.claim_next(worker_id="bench-scale")
        t1 = time.perf_counter()
        if claim is None:
            refill(self.db)
            return
        self.accept(claim=claim, output={"ok": True})
        t2 = time.perf_counter()
        self.claims.append(t1 - t0)
        self.accepts.append(t2 - t1)
        self.pairs.append(t2 - t0)
        self.at.append(time.monotonic())

    def run(self, count: int) -> Claimer:
        while len(self.pairs) < count:
            self.once()
        return self


def explain_claim(db: common.BenchDatabase) -> str:
    """The plan of the claim's SELECT ... FOR UPDATE SKIP LOCKED, as Django sends it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.services import job_accept_output, job_claim_next

    with CaptureQueriesContext(connection) as captured:
        claim = job_claim_next(worker_id="bench-explain")
    job_accept_output(claim=claim, output={"ok": True})
    sql = next(q["sql"] for q in captured.captured_queries if "SKIP LOCKED" in q["sql"])
    with db.connect(autocommit=False) as conn:
        plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}").fetchall()
        conn.rollback()  # the EXPLAIN ANALYZE locked a row; give it back
    return sql + "\n\n" + "\n".join(row[0] for row in plan)


def counts(db: common.BenchDatabase) -> dict[str, int]:
    with db.connect() as conn:
        return {
            "finished jobs": conn.execute(
                "SELECT count(*) FROM jobs_job WHERE state = ANY(%s)", [list(common.FINISHED_STATES)]
            ).fetchone()[0],
            "attempts": conn.execute("SELECT count(*) FROM jobs_attempt").fetchone()[0],
            "outbox messages": conn.execute("SELECT count(*) FROM jobs_outboxmessage").fetchone()[0],
            "jobs with a revision": conn.execute(
                "SELECT count(*) FROM catalog_catalogrevision r JOIN jobs_job j ON j.id = r.job_id"
            ).fetchone()[0],
        }


def summary(label: str, c: Claimer) -> list[object]:
    return [
        label,
        len(c.pairs),
        ms(percentile(c.claims, 50)),
        ms(percentile(c.claims, 99)),
        ms(percentile(c.accepts, 50)),
        ms(percentile(c.accepts, 99)),
        ms(percentile(c.pairs, 50)),
        ms(percentile(c.pairs, 99)),
        ms(max(c.pairs)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 finished jobs, 500 claims")
    parser.add_argument("--finished", type=int, default=None, help="finished jobs (default 1,000,000)")
    parser.add_argument("--claims", type=int, default=None, help="claims per measurement (default 2,000)")
    parser.add_argument("--batch-size", type=int, default=1000, help="prunejobs --batch-size (default 1000)")
    args = parser.parse_args()
    finished = args.finished or (100_000 if args.quick else 1_000_000)
    claims = args.claims or (500 if args.quick else 2000)

    db = common.fresh_database(DATABASE)
    host = common.machine(db)
    say(host.describe())
    common.setup_django(db)
    from django.db import connection

    say(f"empty history: {QUEUED} queued, {claims} claims ...")
    refill(db)
    with db.connect() as conn:
        common.vacuum_analyze(conn, "jobs_job", "jobs_attempt")
    Claimer(db).run(50)  # warm the connection and code paths
    empty = Claimer(db).run(claims)

    say(f"inserting {finished:,} finished jobs with attempts, outbox messages, revisions ...")
    with db.connect() as conn:
        common.reset_queue(conn)
    inserted = insert_history(db, finished)
    refill(db)
    say("  " + ", ".join(f"{k} {v:.1f} s" for k, v in inserted.items()))
    plan = explain_claim(db)
    say(f"history: {finished:,} finished + {QUEUED} queued, {claims} claims ...")
    Claimer(db).run(50)
    big = Claimer(db).run(claims)
    before = counts(db)

    say(f"prunejobs --older-than {RETENTION_DAYS} --batch-size {args.batch_size}, claiming meanwhile ...")
    during = Claimer(db)
    started = time.monotonic()
    prune = subprocess.Popen(
        [
            PYTHON,
            str(MANAGE),
            "prunejobs",
            "--older-than",
            str(RETENTION_DAYS),
            "--batch-size",
            str(args.batch_size),
        ],
        cwd=common.ROOT,
        env=db.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        while prune.poll() is None:
            during.once()
        prune_seconds = time.monotonic() - started
    finally:
        if prune.poll() is None:
            prune.kill()
    output = prune.stdout.read().strip()
    if prune.returncode != 0:
        raise SystemExit(f"prunejobs failed:\n{output}")
    after = counts(db)
    # Django start-up is part of the prune's wall time; the claims made before
    # its first batch are in `during` too (harmless: they are the baseline).
    connection.close()
    removed = before["finished jobs"] - after["finished jobs"]

    say("\nclaim query and its plan with the history in place:\n")
    say(plan)
    say("")
    say(host.describe())
    say(
        "claim = job_claim_next, accept = job_accept_output (noop output), in-process, "
        "one connection; latencies in ms\n"
    )
    say(
        table(
            [
                "table",
                "claims",
                "claim p50",
                "claim p99",
                "accept p50",
                "accept p99",
                "pair p50",
                "pair p99",
                "pair max",
            ],
            [
                summary("empty history, 10k queued", empty),
                summary(f"{finished:,} finished + 10k queued", big),
                summary("same, while prunejobs runs", during),
            ],
        )
    )
    say("")
    say(
        table(
            ["rows", "before prune", "after prune"], [[k, f"{before[k]:,}", f"{after[k]:,}"] for k in before]
        )
    )
    say(
        f'\nprunejobs: "{output}" in {prune_seconds:.1f} s wall '
        f"({removed / prune_seconds:,.0f} jobs/s, Django start-up included); "
        f"jobs with a revision kept: {after['jobs with a revision']:,} of {before['jobs with a revision']:,}"
    )
    say(
        f"\nclaim+accept p50 with {finished:,} finished / empty history: "
        f"x{percentile(big.pairs, 50) / percentile(empty.pairs, 50):.2f}; "
        f"p99 x{percentile(big.pairs, 99) / percentile(empty.pairs, 99):.2f}"
    )
    say(
        f"claim+accept p50 during prune / before: "
        f"x{percentile(during.pairs, 50) / percentile(big.pairs, 50):.2f}; "
        f"p99 x{percentile(during.pairs, 99) / percentile(big.pairs, 99):.2f}; "
        f"max {ms(max(during.pairs))} ms"
    )


if __name__ == "__main__":
    main()
