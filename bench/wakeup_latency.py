"""Benchmark 3: wake-up latency of an idle worker, LISTEN/NOTIFY against polling.

One idle `runworker` process; jobs admitted one at a time through
`jobs.services.job_admit` with a small jittered gap, by a separate process
that has the same environment as the worker. Latency is
`Attempt.started_at - Job.created_at`, both database time: from the admitting
transaction to the claiming one. Two modes, same run, same database:

- notify: JOB_NOTIFY=true (the default): admission NOTIFYs, the worker's
  listener wakes the loop;
- poll: JOB_NOTIFY=false: admission does not NOTIFY (the setting applies to
  the admitting process too); the worker finds jobs by polling every
  JOB_POLL_INTERVAL_SECONDS (default 2).

    .venv/bin/python bench/wakeup_latency.py           # 200 jobs per mode, about 1 minute
    .venv/bin/python bench/wakeup_latency.py --quick   # 50 jobs per mode
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import PYTHON, ms, percentile, say, table  # noqa: E402

DATABASE = "bench_wakeup"


def admit_jobs(label: str, count: int, gap: float) -> None:
    """Child process: admit `count` noop jobs one at a time (Django set up
    from this process's environment, JOB_NOTIFY included)."""
    sys.path.insert(0, str(common.ROOT))
    import django

    django.setup()
    from accounts.models import Workspace
    from jobs.services import job_admit

    workspace = Workspace.objects.get(slug=common.WORKSPACE_SLUG)
    for i in range(count):
        job_admit(
            workspace_id=workspace.pk,
            kind="noop",
            payload={},
            idempotency_key=f"{label}-{i}",
            fingerprint=label,
        )
        if i + 1 < count:
            time.sleep(gap * random.uniform(0.5, 1.5))


def admitter(db: common.BenchDatabase, env: dict, label: str, count: int, gap: float) -> None:
    result = subprocess.run(
        [PYTHON, __file__, "--admit", label, "--count", str(count), "--gap", str(gap)],
        env=db.env(**env),
        cwd=common.ROOT,
        text=True,
        capture_output=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"admitting process failed:\n{result.stdout}\n{result.stderr}")


def completed(db: common.BenchDatabase, label: str) -> int:
    with db.connect() as conn:
        return conn.execute(
            "SELECT count(*) FROM jobs_job WHERE idempotency_key LIKE %s AND state = 'completed'",
            [f"{label}-%"],
        ).fetchone()[0]


def latencies(db: common.BenchDatabase, label: str) -> list[float]:
    with db.connect() as conn:
        rows = conn.execute(
            """SELECT extract(epoch FROM a.started_at - j.created_at)::float8
               FROM jobs_job j JOIN jobs_attempt a ON a.job_id = j.id AND a.number = 1
               WHERE j.idempotency_key LIKE %s""",
            [f"{label}-%"],
        ).fetchall()
    return [r[0] for r in rows]


def measure(
    db: common.BenchDatabase, procs: common.Processes, *, mode: str, count: int, gap: float
) -> list[float]:
    env = {"JOB_NOTIFY": "true" if mode == "notify" else "false"}
    worker = procs.worker(db, f"idle-{mode}", **env)
    with db.connect() as conn:

        def listening() -> bool:
            if worker.poll() is not None:
                raise SystemExit(f"worker exited:\n{procs.log_tail(worker)}")
            return (
                conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND query LIKE 'LISTEN %%'"
                ).fetchone()[0]
                > 0
            )

        common.wait_for(listening, timeout=60, message="the worker's listener")
    # A first job warms the worker's connection and code paths; it is not counted.
    admitter(db, env, f"warm-{mode}", 1, 0)
    common.wait_for(lambda: completed(db, f"warm-{mode}") == 1, timeout=30, message="the warm-up job")
    time.sleep(1.0)  # idle again, waiting on its wake-up event
    admitter(db, env, mode, count, gap)
    common.wait_for(
        lambda: completed(db, mode) == count, timeout=60 + count * 0.1, message=f"{count} {mode} jobs"
    )
    procs.stop(worker)
    return latencies(db, mode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 jobs per mode")
    parser.add_argument("--count", type=int, default=None, help="jobs per mode (default 200)")
    parser.add_argument(
        "--gap",
        type=float,
        default=0.05,
        help="mean seconds between admissions, jittered +-50%% (default 0.05)",
    )
    parser.add_argument("--admit", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    count = args.count or (50 if args.quick else 200)
    if args.admit:
        admit_jobs(args.admit, count, args.gap)
        return

    db = common.fresh_database(DATABASE)
    procs = common.Processes("wakeup")
    host = common.machine(db)
    poll_interval = float(os.environ.get("JOB_POLL_INTERVAL_SECONDS", 2.0))
    say(host.describe())
    results: dict[str, list[float]] = {}
    for mode in ("notify", "poll"):
        say(f"{mode}: {count} jobs, one every ~{args.gap * 1000:.0f} ms ...")
        results[mode] = measure(db, procs, mode=mode, count=count, gap=args.gap)
    procs.stop_all()

    say("")
    say(host.describe())
    say(
        f"{count} noop jobs per mode admitted one at a time through job_admit, gap "
        f"{args.gap * 1000:.0f} ms +-50%; latency = Attempt.started_at - Job.created_at "
        f"(database time); poll interval {poll_interval:g} s\n"
    )
    rows = []
    for mode, values in results.items():
        rows.append(
            [
                mode,
                len(values),
                ms(percentile(values, 50)),
                ms(percentile(values, 99)),
                ms(max(values)),
                ms(sum(values) / len(values)),
            ]
        )
    say(table(["mode", "jobs", "p50 ms", "p99 ms", "max ms", "mean ms"], rows))
    notify, poll = results["notify"], results["poll"]
    say(
        f"\npolling / LISTEN-NOTIFY: p50 x{percentile(poll, 50) / percentile(notify, 50):.0f}, "
        f"p99 x{percentile(poll, 99) / percentile(notify, 99):.0f}"
    )


if __name__ == "__main__":
    main()
