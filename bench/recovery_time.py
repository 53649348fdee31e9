"""Benchmark 4: recovery time after SIGKILL of the worker holding a job.

Worker A claims a `sleep` job whose first attempt would take 600 s and whose
second takes 10 ms; worker B is started and idle. A is killed with SIGKILL;
the figure is the time from the kill to the `started_at` of the job's
attempt 2 (B's claim), both in database time (clock_timestamp() read right
before the kill). It is bounded by the lease A last renewed (renewals every
lease/3, so between 2/3 of a lease and a full lease is left at the kill) plus
B's recovery-scan interval (JOB_RECOVERY_INTERVAL_SECONDS, default lease/4).

    .venv/bin/python bench/recovery_time.py           # default 60 s lease once, 2 s lease x5; ~2.5 min
    .venv/bin/python bench/recovery_time.py --quick   # 2 s lease x2 only
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import percentile, say, table  # noqa: E402

DATABASE = "bench_recovery"
PAYLOAD = '{"attempt_seconds": {"1": 600}, "seconds": 0.01}'
DEFAULT_LEASE = 60.0


def listeners(db: common.BenchDatabase) -> int:
    with db.connect() as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN %%'"
        ).fetchone()[0]


def one_recovery(
    db: common.BenchDatabase, procs: common.Processes, *, lease: float | None, label: str
) -> dict[str, float]:
    env = {} if lease is None else {"JOB_LEASE_SECONDS": lease}
    lease_seconds = DEFAULT_LEASE if lease is None else lease
    with db.connect() as conn:
        common.reset_queue(conn)
        common.insert_queued_jobs(conn, workspace_id=db.workspace_id, count=1, kind="sleep", payload=PAYLOAD)
        job_id = conn.execute("SELECT id FROM jobs_job").fetchone()[0]

    a = procs.worker(db, f"{label}-a", **env)

    def claimed_by_a() -> bool:
        if a.poll() is not None:
            raise SystemExit(f"worker A exited:\n{procs.log_tail(a)}")
        with db.connect() as conn:
            return (
                conn.execute(
                    "SELECT count(*) FROM jobs_attempt WHERE job_id = %s AND number = 1 AND worker_id = %s",
                    [job_id, f"{label}-a"],
                ).fetchone()[0]
                == 1
            )

    common.wait_for(claimed_by_a, timeout=60, message="A to claim the job")

    b = procs.worker(db, f"{label}-b", **env)
    common.wait_for(lambda: listeners(db) >= 2, timeout=60, message="B to be up and listening")
    time.sleep(0.5)  # B is past its start-up recovery scan, idle

    with db.connect() as conn:
        t_kill, lease_until = conn.execute(
            "SELECT extract(epoch FROM clock_timestamp())::float8, "
            "extract(epoch FROM lease_until)::float8 FROM jobs_job WHERE id = %s",
            [job_id],
        ).fetchone()
        a.kill()
        a.wait(timeout=10)

        def second_attempt():
            if b.poll() is not None:
                raise SystemExit(f"worker B exited:\n{procs.log_tail(b)}")
            row = conn.execute(
                "SELECT extract(epoch FROM started_at)::float8, worker_id "
                "FROM jobs_attempt WHERE job_id = %s AND number = 2",
                [job_id],
            ).fetchone()
            return row

        started, by = common.wait_for(
            second_attempt, timeout=lease_seconds * 1.5 + 30, interval=0.02, message="attempt 2 to start"
        )
        common.wait_for(
            lambda: conn.execute(
                "SELECT state = 'completed' FROM jobs_job WHERE id = %s", [job_id]
            ).fetchone()[0],
            timeout=30,
            message="attempt 2 to complete",
        )
    procs.stop(b)
    if by != f"{label}-b":
        raise SystemExit(f"attempt 2 ran on {by}, expected B")
    return {
        "lease": lease_seconds,
        "recovery": started - t_kill,
        "lease_left": lease_until - t_kill,
        "after_expiry": started - lease_until,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="only the 2 s lease, twice (skips the 60 s default lease)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="runs at the 2 s lease (default 5)")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 5)
    plan: list[float | None] = ([] if args.quick else [None]) + [2.0] * repeats

    db = common.fresh_database(DATABASE)
    procs = common.Processes("recovery")
    host = common.machine(db)
    say(host.describe())
    runs = []
    for i, lease in enumerate(plan):
        shown = f"{DEFAULT_LEASE:g} s (default)" if lease is None else f"{lease:g} s"
        say(f"lease {shown}: run {i + 1}/{len(plan)} ...")
        runs.append(one_recovery(db, procs, lease=lease, label=f"r{i}"))
    procs.stop_all()

    say("")
    say(host.describe())
    say(
        "SIGKILL of worker A holding a sleep job; time to attempt 2 started by idle worker B "
        "(database time); recovery scan every lease/4 (the default)\n"
    )
    rows = [
        [
            f"{r['lease']:g}",
            f"{r['lease_left']:.2f}",
            f"{r['after_expiry']:.2f}",
            f"{r['recovery']:.2f}",
            f"{r['recovery'] / r['lease']:.2f}",
        ]
        for r in runs
    ]
    say(
        table(
            ["lease s", "lease left at kill s", "claim after expiry s", "recovery s", "recovery / lease"],
            rows,
        )
    )
    say("")
    summary = []
    for lease in sorted({r["lease"] for r in runs}):
        values = [r["recovery"] for r in runs if r["lease"] == lease]
        summary.append(
            [
                f"{lease:g}",
                len(values),
                f"{min(values):.2f}",
                f"{percentile(values, 50):.2f}",
                f"{max(values):.2f}",
                f"{1.25 * lease:.2f}",
                f"{percentile(values, 50) / lease:.2f}",
            ]
        )
    say(
        table(
            ["lease s", "runs", "min s", "median s", "max s", "bound (lease + lease/4) s", "median / lease"],
            summary,
        )
    )


if __name__ == "__main__":
    main()
