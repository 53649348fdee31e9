"""Chaos soak: real web, worker and relay processes under faults, then checks
by SQL that every promise held.

    python bench/chaos.py                # full: 8 workers, 5,000 jobs, 10 minutes of faults
    python bench/chaos.py --quick        # 4 workers, 200 jobs, about a minute

Clients upload clean sheets, sheets that need review and poison files through
the HTTP API (re-submitting with the same Idempotency-Key, and cancelling some
jobs mid-flight); workers extract through a local OpenAI-compatible server
that delays, fails and times out at random. Meanwhile, at random (after a
first SIGSTOP that catches a worker with a job in hand): SIGKILL a
worker, SIGSTOP one for longer than its lease then SIGCONT it,
pg_terminate_backend a connection, kill the outbox relay, and (full run, on
the embedded cluster) restart PostgreSQL with `-m immediate`. What dies is
restarted. After quiescence the checks run; the counts are printed last.
The test suite runs the short version (tests/test_chaos.py).
"""

import argparse
import hashlib
import hmac
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.helpers import free_port, kill_all  # noqa: E402  (the project root is on the path now)
from config.embedded import SYSTEM_USER  # noqa: E402

UNFINISHED = ("queued", "running", "retrying")


@dataclass
class ChaosConfig:
    workers: int = 8
    jobs: int = 5000
    fault_seconds: float = 600.0
    fault_interval: tuple[float, float] = (1.0, 3.0)
    lease_seconds: float = 2.0
    clients: int = 8
    cancel_rate: float = 0.05
    resubmit_rate: float = 0.2
    review_rate: float = 0.2
    poison_rate: float = 0.1
    llm_error_rate: float = 0.1
    llm_timeout_rate: float = 0.03
    receiver_error_rate: float = 0.1
    pg_restart_data_dir: Path | None = None  # the embedded cluster's folder, to restart it
    quiesce_seconds: float = 300.0
    # Uploads admitted per workspace per minute (UPLOAD_RATE_PER_MINUTE):
    # out of the way of the paced run; the noisy run sets it to its burst.
    upload_rate_per_minute: int = 1_000_000
    # The noisy run: the soak's workspace uploads `noisy_jobs` at once (in
    # place of the paced `jobs`), and a quiet workspace uploads up to
    # `quiet_jobs` clean sheets, one at a time, while that backlog waits.
    noisy_jobs: int = 0
    quiet_jobs: int = 5


@dataclass
class Report:
    jobs: int = 0
    states: dict = field(default_factory=dict)
    faults: Counter = field(default_factory=Counter)
    stale_rejected: int = 0
    admissions: int = 0
    resubmissions_same_job: int = 0
    client_retries: int = 0
    outbox: dict = field(default_factory=dict)
    webhook_posts: int = 0
    # The noisy run: per quiet job (seconds to its first claim, noisy jobs
    # queued ahead of it, noisy jobs claimed before it, and of those, the
    # ones claimed while a lost quiet attempt's lease ran), and the bound.
    quiet_waits: list[tuple[float, int, int, int]] = field(default_factory=list)
    quiet_wait_bound: float = 0.0
    noisy_refused: str = ""
    violations: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        return [
            f"jobs: {self.jobs} ({', '.join(f'{k} {v}' for k, v in sorted(self.states.items()))})",
            f"admissions answered: {self.admissions}; re-submissions that returned the same job: "
            f"{self.resubmissions_same_job}; client retries after errors: {self.client_retries}",
            f"outbox: {', '.join(f'{k} {v}' for k, v in sorted(self.outbox.items()))}; "
            f"webhook POSTs received: {self.webhook_posts}",
            f"faults injected: {sum(self.faults.values())} ({faults})",
            f"stale completions rejected: {self.stale_rejected}"
            + ("" if self.stale_rejected else " (no fault hit a job in flight)"),
            *self._noisy_lines(),
            f"violations: {len(self.violations)}",
            *[f"  VIOLATION: {v}" for v in self.violations],
        ]

    def _noisy_lines(self) -> list[str]:
        if not self.quiet_waits:
            return []
        waits = ", ".join(
            f"{wait:.1f} s ({ahead} ahead, {overtaken} overtook"
            + (f", {held} more while a stopped worker held a quiet job" if held else "")
            + ")"
            for wait, ahead, overtaken, held in self.quiet_waits
        )
        return [
            f"quiet workspace's jobs, wait for a first claim: {waits}; "
            f"the longest noisy job, with a wake-up and a claim: {self.quiet_wait_bound:.1f} s",
            f"noisy workspace past its rate: {self.noisy_refused}",
        ]


# --- inputs -----------------------------------------------------------------


def clean_sheet(n: int) -> bytes:
    rows = [
        f"C{n}-{i},Item {n}/{i},kg,{random.randint(1, 9999) / 100:.2f},EUR"
        for i in range(random.randint(2, 12))
    ]
    return ("SKU,Description,Unit,Price,Currency\n" + "\n".join(rows) + "\n").encode()


def review_sheet(n: int) -> bytes:
    rows = [
        f"R{n}-{i},Item {n}/{i},kg,{random.randint(1, 9999) / 100:.2f}" for i in range(random.randint(2, 12))
    ]
    return ("SKU,Description,Unit,Price\n" + "\n".join(rows) + "\n").encode()


def poison_sheet(n: int) -> tuple[str, bytes]:
    return random.choice(
        [
            (f"poison-{n}.xlsx", b"%PDF-1.4 not a workbook\n" * 10),
            (f"poison-{n}.csv", b""),
            (f"poison-{n}.csv", b"no,header,here\nat,all,really\n"),
        ]
    )


# --- the webhook receiver -------------------------------------------------------


class Receiver:
    """Accepts signed webhooks, fails some at random, dedupes by message id."""

    def __init__(self, secret: str, error_rate: float):
        self.secret = secret
        self.error_rate = error_rate
        self.posts = 0
        self.bad_signatures = 0
        self.ids: set[str] = set()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers["Content-Length"])
                body = self.rfile.read(length)
                if len(body) < length:
                    return  # the sender went away mid-request (a relay killed while posting): nothing came
                msg_id = self.headers.get("Webhook-Id", "")
                stamp = self.headers.get("Webhook-Timestamp", "")
                signed = f"{msg_id}.{stamp}.".encode() + body
                expected = "v1=" + hmac.new(receiver.secret.encode(), signed, hashlib.sha256).hexdigest()
                with receiver._lock:
                    receiver.posts += 1
                    if not hmac.compare_digest(expected, self.headers.get("Webhook-Signature", "")):
                        receiver.bad_signatures += 1
                    fail = random.random() < receiver.error_rate
                    if not fail:
                        receiver.ids.add(msg_id)
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- processes ---------------------------------------------------------------------


def with_app_name(url: str, name: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


class Fleet:
    """The web server, the workers and the relay, restarted when they die."""

    def __init__(self, *, database_url: str, env: dict, log_dir: Path, workers: int):
        self.database_url = database_url
        self.env = env
        self.log_dir = log_dir
        self.port = free_port()
        self.web: subprocess.Popen | None = None
        self.relay: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.generation = 0
        self.count = workers
        self.all: list[subprocess.Popen] = []
        self._lock = threading.Lock()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        env = {**os.environ, **self.env, "DATABASE_URL": with_app_name(self.database_url, f"chaos-{name}")}
        with open(self.log_dir / f"{name}.log", "ab") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.all.append(proc)
        return proc

    def start_web(self) -> None:
        self.web = self._spawn(
            "web",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--log-level",
                "warning",
            ],
        )

    def start_relay(self) -> None:
        self.relay = self._spawn("relay", [sys.executable, "manage.py", "relayoutbox"])

    def start_worker(self) -> str:
        self.generation += 1
        worker_id = f"w{self.generation}"
        self.workers[worker_id] = self._spawn(
            worker_id, [sys.executable, "manage.py", "runworker", "--worker-id", worker_id]
        )
        return worker_id

    def start(self) -> None:
        self.start_web()
        self.start_relay()
        for _ in range(self.count):
            self.start_worker()

    def restart_dead(self) -> int:
        restarted = 0
        with self._lock:
            for worker_id, proc in list(self.workers.items()):
                if proc.poll() is not None:
                    del self.workers[worker_id]
                    self.start_worker()
                    restarted += 1
            if self.relay is not None and self.relay.poll() is not None:
                self.start_relay()
                restarted += 1
            if self.web is not None and self.web.poll() is not None:
                self.start_web()
                restarted += 1
        return restarted

    def stop(self) -> None:
        kill_all(self.all)


# --- the client -------------------------------------------------------------------------


def _multipart(fields: dict[str, str], filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        + data
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Clients:
    """Submits jobs through the API, retrying on errors with the same key."""

    def __init__(self, base_url: str, token: str, config: ChaosConfig, report: Report):
        self.base_url = base_url
        self.token = token
        self.config = config
        self.report = report
        self.answers: dict[str, set[str]] = defaultdict(set)  # key -> job ids answered
        self._lock = threading.Lock()

    def _request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.base_url + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            try:
                return error.code, json.loads(error.read() or b"{}")
            except ValueError:
                return error.code, {}

    def submit(self, n: int) -> None:
        roll = random.random()
        if roll < self.config.poison_rate:
            name, data = poison_sheet(n)
        elif roll < self.config.poison_rate + self.config.review_rate:
            name, data = f"review-{n}.csv", review_sheet(n)
        else:
            name, data = f"clean-{n}.csv", clean_sheet(n)
        key = f"chaos-{n}-{uuid.uuid4().hex[:8]}"
        body, content_type = _multipart({"supplier": f"Supplier {n % 7}"}, name, data)
        times = 2 if random.random() < self.config.resubmit_rate else 1
        job_id = None
        for _ in range(times):
            answered = self._admit(key, body, content_type)
            if answered is not None:
                if job_id is not None and answered == job_id:
                    with self._lock:
                        self.report.resubmissions_same_job += 1
                job_id = answered
        if job_id and random.random() < self.config.cancel_rate:
            for _ in range(10):
                status, _ = self._call("POST", f"/api/jobs/{job_id}/cancel")
                if status in (200, 409):
                    break

    def _call(self, method: str, path: str) -> tuple[int, dict]:
        try:
            return self._request(method, path)
        except OSError:
            return 0, {}

    def _admit(self, key: str, body: bytes, content_type: str) -> str | None:
        for attempt in range(30):
            try:
                status, answer = self._request(
                    "POST", "/api/jobs", body, {"Idempotency-Key": key, "Content-Type": content_type}
                )
            except OSError:
                status, answer = 0, {}
            if status in (200, 201, 202):
                with self._lock:
                    self.answers[key].add(answer["id"])
                    self.report.admissions += 1
                return answer["id"]
            if status in (400, 413, 415, 422):  # refused for what it is: never admitted
                return None
            with self._lock:
                self.report.client_retries += 1
            time.sleep(min(0.1 * 2**attempt, 2.0))  # a client's own backoff
        return None

    def run(self, count: int, seconds: float) -> None:
        """Spread `count` submissions over about `seconds`."""
        gap = seconds / max(count, 1) * self.config.clients
        numbers = iter(range(count))
        lock = threading.Lock()

        def client():
            while True:
                with lock:
                    n = next(numbers, None)
                if n is None:
                    return
                self.submit(n)
                time.sleep(random.uniform(0, 2 * gap))  # pacing, not waiting on a condition

        threads = [threading.Thread(target=client) for _ in range(self.config.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


# --- faults --------------------------------------------------------------------------------


class Faults:
    def __init__(self, fleet: Fleet, config: ChaosConfig, report: Report):
        self.fleet = fleet
        self.config = config
        self.report = report
        self.stop = threading.Event()
        self.paused_holding = 0
        self._pg_restarts = 0

    def run(self) -> None:
        from django.db import connection

        kinds = ["kill_worker", "pause_worker", "terminate_backend", "kill_relay"]
        try:
            while not self.stop.wait(random.uniform(*self.config.fault_interval)):
                self.fleet.restart_dead()
                # The soak must prove a stale completion is refused: until one
                # is recorded, every fault is a pause (the paced uploads keep
                # jobs in flight early on; at the end the queue may have
                # drained, and a pause would catch nothing). A pause that finds
                # a job in hand may still see none: the job can be cancelled,
                # or its accept committed, as the worker stops. The noisy
                # run's quick jobs need not show one (see main).
                proving = not self.config.noisy_jobs and not self._caught()
                kind = "pause_worker" if proving else random.choice(kinds)
                if (
                    self.config.pg_restart_data_dir is not None
                    and self._pg_restarts < 2
                    and random.random() < 0.03
                ):
                    kind = "pg_restart"
                getattr(self, kind)()
            # If no pause has caught one yet, try again while a job is left to
            # catch (a drained queue leaves none: each pause would only wait
            # out its lease).
            for _ in range(20):
                if self._caught() or not self._jobs_left():
                    break
                if self.pause_worker() and not self.config.noisy_jobs:
                    # The worker comes back to a lost lease and records it.
                    _wait(self._stale_recorded, 10, "a stale attempt", quiet=True)
            self.fleet.restart_dead()
        finally:
            connection.close()

    def _caught(self) -> bool:
        """The full soak: a stale result was refused; the noisy run: a pause
        caught a worker with a job in hand."""
        return self.paused_holding > 0 if self.config.noisy_jobs else self._stale_recorded()

    def _stale_recorded(self) -> bool:
        from jobs.models import Attempt

        return Attempt.objects.filter(outcome=Attempt.Outcome.STALE).exists()

    def _jobs_left(self) -> bool:
        from jobs.models import Job

        return Job.objects.filter(state__in=UNFINISHED).exists()

    def _holding_worker(self) -> tuple[str, subprocess.Popen] | None:
        from jobs.models import Job

        holding = set(Job.objects.filter(state="running").values_list("worker_id", flat=True))
        candidates = [(w, p) for w, p in self.fleet.workers.items() if w in holding and p.poll() is None]
        if not candidates:
            candidates = [(w, p) for w, p in self.fleet.workers.items() if p.poll() is None]
        return random.choice(candidates) if candidates else None

    def kill_worker(self) -> None:
        chosen = self._holding_worker()
        if chosen:
            chosen[1].kill()
            self.report.faults["SIGKILL worker"] += 1
            self.fleet.restart_dead()

    def pause_worker(self) -> bool:
        """SIGSTOP a worker for longer than its lease; True when it held a job."""
        from jobs.models import Job

        chosen = self._holding_worker()
        if not chosen:
            return False
        worker_id, proc = chosen
        proc.send_signal(signal.SIGSTOP)
        held = Job.objects.filter(state="running", worker_id=worker_id).exists()
        self.report.faults["SIGSTOP worker past its lease"] += 1
        if held:
            self.paused_holding += 1
        # Longer than the lease, so another worker takes its job over.
        time.sleep(self.config.lease_seconds * 2 + 1)
        proc.send_signal(signal.SIGCONT)
        return held

    def terminate_backend(self) -> None:
        from django.db import connection

        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name LIKE 'chaos-%%' AND pid <> pg_backend_pid() "
                    "ORDER BY random() LIMIT 1"
                )
                if cursor.fetchone():
                    self.report.faults["pg_terminate_backend"] += 1
        except Exception:  # noqa: BLE001  the database may be restarting
            connection.close()

    def kill_relay(self) -> None:
        if self.fleet.relay is not None and self.fleet.relay.poll() is None:
            self.fleet.relay.kill()
            self.report.faults["SIGKILL relay"] += 1
            self.fleet.restart_dead()

    def pg_restart(self) -> None:
        from django.db import connection

        data_dir = self.config.pg_restart_data_dir
        pg_ctl = _pg_ctl()
        command = f"{pg_ctl} -D {data_dir} restart -m immediate -w -l {data_dir}/log"
        if os.geteuid() == 0:  # as root the cluster runs as its own system user
            result = subprocess.run(
                ["su", SYSTEM_USER, "-s", "/bin/sh", "-c", command], capture_output=True, timeout=120
            )
        else:
            result = subprocess.run(command.split(), capture_output=True, timeout=120)
        connection.close()
        if result.returncode == 0:
            self._pg_restarts += 1
            self.report.faults["PostgreSQL restart -m immediate"] += 1


def _pg_ctl() -> str:
    from config.embedded import bin_dir

    return str(bin_dir() / "pg_ctl")


# --- a noisy workspace --------------------------------------------------------------------


class NoisyRun:
    """The soak's workspace uploads a burst; a quiet workspace uploads one
    clean sheet at a time while at least three rounds of the burst (3 x
    workers jobs) still wait. A fair claim runs each quiet job when the
    next worker is free: it waits about one job's processing, and hardly
    any noisy job is claimed before it; oldest first, it waits for the
    whole backlog ahead."""

    def __init__(
        self,
        *,
        clients: "Clients",
        quiet: "Clients",
        noisy_workspace_id: int,
        quiet_workspace_id: int,
        config: ChaosConfig,
        report: Report,
    ):
        self.clients = clients
        self.quiet = quiet
        self.noisy_workspace_id = noisy_workspace_id
        self.quiet_workspace_id = quiet_workspace_id
        self.config = config
        self.report = report
        self.quiet_jobs: list[tuple[str, int]] = []  # (job id, noisy jobs queued ahead)

    def _noisy_waiting(self) -> int:
        from jobs.models import Job

        return Job.objects.filter(
            workspace_id=self.noisy_workspace_id, state__in=["queued", "retrying"]
        ).count()

    def run(self) -> None:
        from django.db import connection

        burst = threading.Thread(target=self._burst)
        burst.start()
        ahead = 3 * self.config.workers
        try:
            # The backlog waits, and the workers are claiming.
            _wait(
                lambda: self._noisy_waiting() >= ahead and self._noisy_claims() >= self.config.workers,
                90,
                "the noisy backlog",
            )
            for n in range(self.config.quiet_jobs):
                waiting = self._noisy_waiting()
                if waiting < ahead:
                    break
                job_id = self._quiet_upload(n)
                if job_id is None:
                    break
                self.quiet_jobs.append((job_id, waiting))
                _wait(lambda job_id=job_id: self._claimed(job_id), 120, "a quiet job's claim")
        finally:
            burst.join()
            connection.close()

    def _burst(self) -> None:
        self.clients.run(self.config.noisy_jobs, 0.0)
        self._past_the_rate()  # within the minute of the burst

    def _noisy_claims(self) -> int:
        from jobs.models import Attempt

        return Attempt.objects.filter(job__workspace_id=self.noisy_workspace_id).count()

    def _claimed(self, job_id: str) -> bool:
        from jobs.models import Attempt

        return Attempt.objects.filter(job_id=job_id).exists()

    def _quiet_upload(self, n: int) -> str | None:
        body, content_type = _multipart({"supplier": f"Quiet {n % 3}"}, f"quiet-{n}.csv", clean_sheet(n))
        for _ in range(10):
            try:
                status, answer = self.quiet._request(
                    "POST", "/api/jobs", body, {"Idempotency-Key": f"quiet-{n}", "Content-Type": content_type}
                )
            except OSError:
                continue  # the web server may be restarting
            if status == 202:
                return answer["id"]
            if status == 429:
                self.report.violations.append("the quiet workspace was refused for the noisy one's rate")
                return None
        return None

    def _past_the_rate(self) -> None:
        """Noisy uploads past UPLOAD_RATE_PER_MINUTE within the minute (the
        burst's refused files did not count): 429 with Retry-After."""
        for n in range(30):
            status, retry_after = self._noisy_upload(n)
            if status != 202:
                break
        self.report.noisy_refused = f"{status}, Retry-After {retry_after}"
        if status != 429 or not (retry_after or "").isdigit():
            self.report.violations.append(
                f"an upload past the noisy workspace's rate answered "
                f"{self.report.noisy_refused}, not 429 with Retry-After"
            )

    def _noisy_upload(self, n: int) -> tuple[int, str | None]:
        body, content_type = _multipart({"supplier": "Past the rate"}, f"past-{n}.csv", clean_sheet(n))
        request = urllib.request.Request(
            self.clients.base_url + "/api/jobs",
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {self.clients.token}",
                "Content-Type": content_type,
                "Idempotency-Key": f"past-the-rate-{n}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers.get("Retry-After")
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Retry-After")

    def check(self, rows) -> None:
        """Each quiet job waits for one job's processing, not the backlog:
        at most one noisy job per worker is claimed between its admission
        and its first claim (oldest first, every job queued ahead of it
        is), apart from claims made while a stopped worker still held one
        of the quiet workspace's jobs. Its wait in seconds is reported
        beside the longest noisy attempt that succeeded, plus a wake-up and
        a claim."""
        v = self.report.violations
        if len(self.quiet_jobs) < 3:
            v.append(f"only {len(self.quiet_jobs)} quiet job(s) ran while the noisy backlog waited")
        longest = rows(
            "SELECT coalesce(max(extract(epoch FROM a.finished_at - a.started_at)), 0) "
            "FROM jobs_attempt a JOIN jobs_job j ON j.id = a.job_id "
            "WHERE j.workspace_id = %s AND a.outcome = 'succeeded'",
            [self.noisy_workspace_id],
        )[0][0]
        self.report.quiet_wait_bound = float(longest) + 2 * 0.5 + 2.0
        for job_id, ahead in self.quiet_jobs:
            wait, created, claimed = rows(
                "SELECT extract(epoch FROM min(a.started_at) - j.created_at), j.created_at, "
                "min(a.started_at) FROM jobs_job j JOIN jobs_attempt a ON a.job_id = j.id "
                "WHERE j.id = %s GROUP BY j.created_at",
                [job_id],
            )[0]
            # The noisy attempts that started meanwhile: (worker, attempt
            # number, whether a quiet job was then held by a worker that lost
            # it). Until that lease expires, the claim counts the quiet job as
            # running, as it must: nothing can tell a stopped worker from a
            # slow one sooner. Those claims are reported apart.
            meanwhile = rows(
                "SELECT a.worker_id, a.number, EXISTS (SELECT 1 FROM jobs_attempt q "
                "JOIN jobs_job qj ON qj.id = q.job_id WHERE qj.workspace_id = %s "
                "AND q.outcome IN ('expired', 'stale') AND q.started_at < a.started_at "
                "AND coalesce(q.finished_at, 'infinity') > a.started_at) "
                "FROM jobs_attempt a JOIN jobs_job j ON j.id = a.job_id "
                "WHERE j.workspace_id = %s AND a.started_at > %s AND a.started_at < %s "
                "ORDER BY a.started_at",
                [self.quiet_workspace_id, self.noisy_workspace_id, created, claimed],
            )
            held = sum(1 for *_, lost in meanwhile if lost)
            meanwhile = [(worker, number) for worker, number, lost in meanwhile if not lost]
            wait, overtaken = float(wait), len(meanwhile)
            self.report.quiet_waits.append((wait, ahead, overtaken, held))
            # Counted in jobs, not seconds: a fleet stalled by the faults (every
            # worker paused or restarting) claims nothing at all meanwhile.
            if overtaken > self.config.workers:
                by = ", ".join(f"{worker} (attempt {number})" for worker, number in meanwhile)
                v.append(
                    f"quiet job {job_id} waited {wait:.1f} s while {overtaken} of the {ahead} "
                    f"noisy jobs ahead of it were claimed first, by {by}"
                )


# --- the run and the checks --------------------------------------------------------------


# Each promise as a query counting the rows that break it, and how to say so.
PROMISES = [
    (
        "SELECT count(*) FROM jobs_job WHERE state IN ('queued','running','retrying')",
        "{} job(s) still queued, running or retrying after quiescence",
    ),
    (
        "SELECT count(*) FROM jobs_job WHERE state = 'running' AND lease_until < clock_timestamp()",
        "{} job(s) running with an expired lease",
    ),
    (
        "SELECT count(*) FROM (SELECT job_id FROM catalog_catalogrevision GROUP BY job_id "
        "HAVING count(*) > 1) AS doubled",
        "{} job(s) with more than one catalog revision",
    ),
    (
        "SELECT count(*) FROM jobs_job j LEFT JOIN catalog_catalogrevision r ON r.job_id = j.id "
        "WHERE j.kind = 'parse_sheet' AND j.state = 'completed' AND r.id IS NULL",
        "{} completed parse(s) without a revision",
    ),
    (
        "SELECT count(*) FROM catalog_catalogitem i JOIN catalog_catalogrevision r ON r.id = i.revision_id "
        "JOIN jobs_job j ON j.id = r.job_id WHERE j.state <> 'completed'",
        "{} catalog item(s) of jobs that are not completed",
    ),
    (
        "SELECT count(*) FROM catalog_catalogrevision r JOIN jobs_job j ON j.id = r.job_id "
        "LEFT JOIN jobs_attempt a ON a.job_id = j.id AND a.number = r.attempt "
        "WHERE r.attempt <> j.attempt OR a.outcome IS DISTINCT FROM 'succeeded'",
        "{} revision(s) not from the attempt that held the fence",
    ),
    (
        "SELECT count(*) FROM jobs_job j JOIN catalog_catalogrevision r ON r.job_id = j.id "
        "WHERE j.state = 'cancelled'",
        "{} job(s) both cancelled and published",
    ),
    (
        "SELECT count(*) FROM jobs_job WHERE attempt > max_attempts",
        "{} job(s) with more attempts than max_attempts",
    ),
    (
        "SELECT count(*) FROM (SELECT 1 FROM jobs_job WHERE idempotency_key IS NOT NULL "
        "GROUP BY workspace_id, idempotency_key HAVING count(*) > 1) AS shared",
        "{} idempotency key(s) mapping to two jobs",
    ),
]


def _rows(sql: str, params=()) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def check(report: Report, answers: dict[str, set[str]], receiver: Receiver) -> None:
    """The promises, by SQL."""
    rows = _rows
    v = report.violations
    report.states = dict(rows("SELECT state, count(*) FROM jobs_job GROUP BY state"))
    report.jobs = sum(report.states.values())
    for sql, message in PROMISES:
        broken = rows(sql)[0][0]
        if broken:
            v.append(message.format(broken))
    # Coverage, not a promise: whether a fault hit a job in flight (the soak
    # test asks for one; a short run with quick jobs may see none).
    report.stale_rejected = rows("SELECT count(*) FROM jobs_attempt WHERE outcome = 'stale'")[0][0]
    _check_answers(v, answers, rows)
    _check_outbox(report, receiver, rows)


def _check_answers(v: list[str], answers: dict[str, set[str]], rows) -> None:
    """Every idempotency key answered with one job, and every answered job exists."""
    for key, ids in answers.items():
        if len(ids) != 1:
            v.append(f"key {key} answered with {len(ids)} different jobs")
    answered = {job_id for ids in answers.values() for job_id in ids}
    if answered:
        existing = {
            str(r[0]) for r in rows("SELECT id FROM jobs_job WHERE id = ANY(%s::uuid[])", [list(answered)])
        }
        lost = answered - existing
        if lost:
            v.append(f"{len(lost)} job(s) answered 202 but not in the database")


def _check_outbox(report: Report, receiver: Receiver, rows) -> None:
    v = report.violations
    report.outbox = dict(
        rows(
            "SELECT CASE WHEN delivered_at IS NOT NULL THEN 'delivered' WHEN failed_at IS NOT NULL "
            "THEN 'failed' ELSE 'pending' END, count(*) FROM jobs_outboxmessage GROUP BY 1"
        )
    )
    if report.outbox.get("pending"):
        v.append(f"{report.outbox['pending']} outbox message(s) neither delivered nor failed")
    delivered = {str(r[0]) for r in rows("SELECT id FROM jobs_outboxmessage WHERE delivered_at IS NOT NULL")}
    unreceived = delivered - receiver.ids
    if unreceived:
        v.append(f"{len(unreceived)} message(s) marked delivered that the receiver never accepted")
    if receiver.bad_signatures:
        v.append(f"{receiver.bad_signatures} webhook(s) with a bad signature")
    report.webhook_posts = receiver.posts


def run(config: ChaosConfig, *, database_url: str, media_root: Path, log_dir: Path) -> Report:
    """Run the soak against an already migrated database (Django set up)."""
    from django.db import connection

    from accounts.models import Membership
    from accounts.services import apitoken_create, membership_add, workspace_create
    from jobs.models import Job, OutboxMessage, WebhookEndpoint
    from tests.fake_llm import FakeProvider

    report = Report()
    log_dir.mkdir(parents=True, exist_ok=True)
    workspace = workspace_create(slug=f"chaos-{uuid.uuid4().hex[:6]}", name="Chaos")
    user = membership_add(
        workspace=workspace, username=f"chaos-{uuid.uuid4().hex[:6]}", role=Membership.Role.ADMIN
    ).user
    _, token = apitoken_create(user=user, name="chaos")
    secret = uuid.uuid4().hex
    receiver = Receiver(secret, config.receiver_error_rate)
    WebhookEndpoint.objects.create(workspace=workspace, url=receiver.url, secret=secret)
    quiet_token = None
    if config.noisy_jobs:
        quiet_workspace = workspace_create(slug=f"quiet-{uuid.uuid4().hex[:6]}", name="Quiet")
        quiet_user = membership_add(
            workspace=quiet_workspace, username=f"quiet-{uuid.uuid4().hex[:6]}", role=Membership.Role.ADMIN
        ).user
        _, quiet_token = apitoken_create(user=quiet_user, name="chaos")
        WebhookEndpoint.objects.create(workspace=quiet_workspace, url=receiver.url, secret=secret)
    provider = FakeProvider()
    provider.chaos = {
        "error_rate": config.llm_error_rate,
        "timeout_rate": config.llm_timeout_rate,
        "max_delay": 0.3,
        "timeout_delay": 4.0,
    }
    env = {
        "SECRET_KEY": os.environ.get(
            "SECRET_KEY", "chaos-only-secret-key-not-for-production-0123456789-abcdefghij"
        ),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "HTTPS": "false",
        "MEDIA_ROOT": str(media_root),
        "EXTRACTOR": "openai",
        "LLM_BASE_URL": provider.url,
        "LLM_API_KEY": "chaos",
        "LLM_MODEL": "fake",
        "LLM_TIMEOUT_SECONDS": "2",
        "JOB_LEASE_SECONDS": str(config.lease_seconds),
        "JOB_RECOVERY_INTERVAL_SECONDS": str(config.lease_seconds / 4),
        "JOB_POLL_INTERVAL_SECONDS": "0.5",
        "JOB_MAX_ATTEMPTS": "6",
        "JOB_BACKOFF_BASE_SECONDS": "0.2",
        "JOB_BACKOFF_MAX_SECONDS": "2",
        "WEBHOOK_TIMEOUT_SECONDS": "2",
        "WEBHOOK_MAX_ATTEMPTS": "10",
        "WEBHOOK_ALLOW_INSECURE": "true",
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "OUTBOX_VISIBILITY_SECONDS": "4",
        "OUTBOX_BACKOFF_BASE_SECONDS": "0.2",
        "OUTBOX_BACKOFF_MAX_SECONDS": "1",
        "OUTBOX_POLL_INTERVAL_SECONDS": "0.3",
        "PYTHONUNBUFFERED": "1",
        "LOG_LEVEL": "WARNING",
        "UPLOAD_RATE_PER_MINUTE": str(config.noisy_jobs or config.upload_rate_per_minute),
    }
    fleet = Fleet(database_url=database_url, env=env, log_dir=log_dir, workers=config.workers)
    faults = Faults(fleet, config, report)
    try:
        fleet.start()
        clients = Clients(f"http://127.0.0.1:{fleet.port}", token, config, report)
        _wait(lambda: clients._call("GET", "/api/jobs")[0] == 200, 60, "the web server")
        fault_thread = threading.Thread(target=faults.run, daemon=True)
        fault_thread.start()
        started = time.monotonic()
        noisy = None
        if config.noisy_jobs:
            noisy = NoisyRun(
                clients=clients,
                quiet=Clients(clients.base_url, quiet_token, config, report),
                noisy_workspace_id=workspace.pk,
                quiet_workspace_id=quiet_workspace.pk,
                config=config,
                report=report,
            )
            noisy.run()
        else:
            clients.run(config.jobs, config.fault_seconds * 0.8)
        remaining = config.fault_seconds - (time.monotonic() - started)
        if remaining > 0:
            faults.stop.wait(remaining)
        faults.stop.set()
        fault_thread.join()
        fleet.restart_dead()
        provider.chaos = None  # the provider recovers; what failed for good stays failed

        def quiet() -> bool:
            fleet.restart_dead()
            try:
                return (
                    not Job.objects.filter(state__in=UNFINISHED).exists()
                    and not OutboxMessage.objects.filter(
                        delivered_at__isnull=True, failed_at__isnull=True
                    ).exists()
                )
            except Exception:  # noqa: BLE001
                connection.close()
                return False

        _wait(quiet, config.quiesce_seconds, "quiescence", quiet=True)
        check(report, clients.answers, receiver)
        if noisy is not None:
            noisy.check(_rows)
    finally:
        faults.stop.set()
        fleet.stop()
        provider.close()
        receiver.close()
    return report


def _wait(predicate, timeout: float, what: str, quiet: bool = False) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    if not quiet:
        raise RuntimeError(f"timed out waiting for {what}")
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 workers, 200 jobs, about a minute")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--seconds", type=float, help="how long faults are injected")
    parser.add_argument(
        "--noisy",
        type=int,
        metavar="N",
        help="the noisy run: one workspace uploads N sheets at once, a quiet one "
        "uploads one at a time meanwhile; checks the quiet one's waits",
    )
    args = parser.parse_args()
    config = ChaosConfig()
    if args.quick:
        config = ChaosConfig(workers=4, jobs=200, fault_seconds=45, quiesce_seconds=180)
    config.workers = args.workers or config.workers
    config.jobs = args.jobs or config.jobs
    config.fault_seconds = args.seconds or config.fault_seconds
    config.noisy_jobs = args.noisy or 0

    import environ
    import psycopg

    os.environ.setdefault("SECRET_KEY", "chaos-only-secret-key-not-for-production-0123456789-abcdefghij")
    os.environ.setdefault("HTTPS", "false")
    base = os.environ.get("DATABASE_URL")
    if base is None:
        from config.embedded import database_url

        data_dir = ROOT / ".pgdata"
        base = database_url(data_dir)
        if not args.quick:
            config.pg_restart_data_dir = data_dir
    settings = environ.Env.db_url_config(base)
    conninfo = {
        "dbname": "postgres",
        "user": settings["USER"] or None,
        "password": settings["PASSWORD"] or None,
        "host": settings["HOST"] or settings.get("OPTIONS", {}).get("host"),
        "port": settings["PORT"] or None,
    }
    with psycopg.connect(**{k: v for k, v in conninfo.items() if v}, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_chaos WITH (FORCE)")
        conn.execute("CREATE DATABASE bench_chaos")
    url = base.replace(f"/{settings['NAME']}", "/bench_chaos", 1)
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    out = ROOT / "bench" / "out" / "chaos"
    started = time.monotonic()
    report = run(config, database_url=url, media_root=out / "media", log_dir=out / "logs")
    print(
        f"chaos soak: {config.workers} workers, {config.jobs} jobs, "
        f"{config.fault_seconds:.0f} s of faults, {time.monotonic() - started:.0f} s in all; "
        f"logs in {out / 'logs'}"
    )
    for line in report.lines():
        print(line)
    # The full soak must also show a stale completion refused (the noisy run's quick jobs may not).
    untested = not config.noisy_jobs and not report.stale_rejected
    sys.exit(1 if report.violations or untested else 0)


if __name__ == "__main__":
    main()
