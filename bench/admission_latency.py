"""Benchmark: admission and status-read latency over HTTP on loopback.

Starts the app under gunicorn (as `make run` does: 2 processes x 4 threads)
on a free 127.0.0.1 port against a fresh database `bench_admission`, with a
workspace, a user and a bearer token. Then, with 1 and 8 concurrent clients
(threads, one keep-alive connection each):

- admissions: `POST /api/jobs`, a real multipart upload of a small CSV (one
  row unique to each upload, so every upload is new bytes to store) with
  a unique Idempotency-Key each (stored, sha256-addressed, job + outbox row
  committed before the 202);
- status reads: `GET /api/jobs/<id>` of admitted jobs;
- the floor: in the same gunicorn and the same run, a minimal Django view
  (bench/floor_urls.py) that reads the same multipart upload, writes it to
  the same storage with fsync and inserts one row in one transaction, the
  least any durable upload can do;
- the same admission through the service function alone (store the sheet
  and admit the job in this process, no HTTP), at 1 and 8 threads.

The admission and floor phases are repeated (`--repeat`, interleaved, so
both see the same machine each time). Prints p50/p99 latency and
requests/s of each phase, the ratios of the admission's p50/p99 to the
floor's at 1 and 8 clients in each repetition and their median (the goal:
p99 at 8 clients at most 1.25 times the floor's), the ratio of
admissions/s over HTTP to admissions/s through the service function, and
the load average before and after.

`--profile N` first runs N admissions, N floor uploads and N status reads
in this process through Django's test client (same settings, middleware
and database): the statements of one of each, the CPU time per request,
the PostgreSQL backend's CPU per statement, and a cProfile of the
admissions and of the status reads.

    .venv/bin/python bench/admission_latency.py            # about 2-3 minutes
    .venv/bin/python bench/admission_latency.py --requests 100 --repeat 1
    .venv/bin/python bench/admission_latency.py --profile 300 --profile-only

No worker runs, so the admitted jobs stay queued: only admission is measured.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import itertools
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import percentile, say, table  # noqa: E402

DATABASE = "bench_admission"
CSV = b"SKU,Description,Unit,Price,Currency\n" + b"".join(
    b"B-%04d,Benchmark item %d,piece,%d.%02d,EUR\n" % (i, i, i, i % 100) for i in range(1, 41)
)
BOUNDARY = "benchBoundary7MA4YWxkTrZu0gW"
PHASE_SECONDS = 20.0  # each measured phase stops here even if requests remain


def unique_csv() -> bytes:
    """The CSV with one row of its own: every upload is new bytes, so the
    admission stores (and fsyncs) each one as the floor does, instead of
    finding the same content already stored."""
    return CSV + b"U-1,%s,piece,1.00,EUR\n" % uuid.uuid4().hex.encode()


# The workspaces the uploads go to, in turn (see --workspaces); empty: the
# caller's only one, named by no form field.
WORKSPACES: list[str] = []
_TURN = itertools.count()


def next_workspace() -> str:
    return WORKSPACES[next(_TURN) % len(WORKSPACES)] if WORKSPACES else ""


def unique_body() -> bytes:
    return multipart(unique_csv(), "Bench Supplies", next_workspace())


def multipart(content: bytes, supplier: str, workspace: str = "") -> bytes:
    field = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="workspace"\r\n\r\n{workspace}\r\n'
        if workspace
        else ""
    )
    return (
        (
            field + f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="supplier"\r\n\r\n{supplier}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bench.csv"\r\n'
            f"Content-Type: text/csv\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


@dataclass
class Result:
    label: str
    clients: int
    latencies: list[float]
    seconds: float
    errors: int
    repetition: int = 0

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else float("nan")

    def row(self) -> list[object]:
        return [
            self.label,
            self.repetition + 1,
            self.clients,
            len(self.latencies),
            f"{percentile(self.latencies, 50) * 1000:.2f}",
            f"{percentile(self.latencies, 99) * 1000:.2f}",
            f"{self.per_second:.0f}",
            self.errors,
        ]


def run_clients(label: str, clients: int, total: int, one_request, repetition: int = 0) -> Result:
    """`clients` threads share `total` requests; each thread calls
    `one_request(state)` (state is per thread) and times it."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    remaining = [total]
    barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client() -> None:
        nonlocal errors
        state: dict = {}
        barrier.wait()
        while True:
            with lock:
                if remaining[0] <= 0 or time.monotonic() > deadline[0]:
                    break
                remaining[0] -= 1
            start = time.perf_counter()
            ok = one_request(state)
            elapsed = time.perf_counter() - start
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    errors += 1
        if "close" in state:
            state["close"]()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + PHASE_SECONDS
    started = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    return Result(label, clients, latencies, time.perf_counter() - started, errors, repetition)


def profile_in_process(token: str, count: int) -> str:
    """Statements per request and CPU per request of admissions, floor
    uploads and status reads through the test client, then a cProfile of
    `count` admissions and of `count` status reads."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(SERVER_NAME="127.0.0.1")
    content_type = f"multipart/form-data; boundary={BOUNDARY}"

    admitted: list[str] = []

    def admit() -> None:
        response = client.generic(
            "POST",
            "/api/jobs",
            unique_body(),
            content_type=content_type,
            HTTP_AUTHORIZATION=f"Bearer {token}",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        )
        assert response.status_code == 202, response.content
        admitted.append(response.json()["id"])

    def floor() -> None:
        response = client.generic("POST", "/bench/floor-upload", unique_body(), content_type=content_type)
        assert response.status_code == 202, response.content

    reads = itertools.count()

    def read() -> None:
        job_id = admitted[next(reads) % len(admitted)]
        response = client.get(f"/api/jobs/{job_id}", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 200, response.content

    out = io.StringIO()
    for _ in range(20):  # imports, connection, caches
        admit()
        floor()
    requests = (("admission", admit), ("floor upload", floor), ("status read", read))
    for label, request in requests:
        with CaptureQueriesContext(connection) as captured:
            request()
        out.write(f"{label}: {len(captured.captured_queries)} statements\n")
        for query in captured.captured_queries:
            out.write(f"    {' '.join(query['sql'].split())[:150]}\n")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    for label, request in requests:
        cpu, wall, server = time.process_time(), time.perf_counter(), backend_cpu_seconds(backend)
        for _ in range(count):
            request()
        out.write(
            f"{label}: {(time.process_time() - cpu) * 1000 / count:.2f} ms CPU here "
            f"(test client included), {(backend_cpu_seconds(backend) - server) * 1000 / count:.2f} "
            f"ms in its PostgreSQL backend, {(time.perf_counter() - wall) * 1000 / count:.2f} "
            f"ms wall per request\n"
        )
    out.write(statement_costs(connection, backend, count, admit, floor, read))
    for label, request in (("admissions", admit), ("status reads", read)):
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(count):
            request()
        profiler.disable()
        stats = io.StringIO()
        pstats.Stats(profiler, stream=stats).sort_stats("cumulative").print_stats(45)
        out.write(f"\ncProfile of {count} {label} (CPU time; the profiler inflates Python):\n")
        out.write(stats.getvalue())
    return out.getvalue()


def statement_costs(connection, backend: int, count: int, *requests) -> str:
    """The PostgreSQL backend's CPU per statement, by the statement's first
    words, over `count` of each request (the kernel counts CPU in ticks, so
    only the average over many statements means anything)."""
    spent: dict[str, float] = {}
    runs: dict[str, int] = {}

    def measure(execute, sql, params, many, context):
        before = backend_cpu_seconds(backend)
        try:
            return execute(sql, params, many, context)
        finally:
            key = " ".join(sql.split())[:60]
            spent[key] = spent.get(key, 0.0) + backend_cpu_seconds(backend) - before
            runs[key] = runs.get(key, 0) + 1

    with connection.execute_wrapper(measure):
        for _ in range(count):
            for request in requests:
                request()
    lines = [
        f"    {spent[key] * 1000 / runs[key]:.2f} ms  {key}"
        for key in sorted(spent, key=spent.get, reverse=True)
    ]
    return "PostgreSQL backend CPU per statement:\n" + "\n".join(lines) + "\n"


def backend_cpu_seconds(pid: int) -> float:
    """User + system CPU of a PostgreSQL backend on this machine (NaN when
    the server is elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ratio_lines(results: list[Result], repeat: int) -> list[str]:
    """Admission / floor p50 and p99 per repetition and client count, and the medians."""
    lines = []
    for clients in (1, 8):
        p50s, p99s = [], []
        for rep in range(repeat):
            adm = next(
                r
                for r in results
                if r.label == "admission (HTTP)" and r.clients == clients and r.repetition == rep
            )
            floor = next(
                r
                for r in results
                if r.label == "floor upload (HTTP)" and r.clients == clients and r.repetition == rep
            )
            p50s.append(percentile(adm.latencies, 50) / percentile(floor.latencies, 50))
            p99s.append(percentile(adm.latencies, 99) / percentile(floor.latencies, 99))
        each = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(p50s, p99s, strict=True))
        lines.append(
            f"admission / floor at {clients} client{'s' if clients > 1 else ''}: "
            f"p50 {statistics.median(p50s):.2f}, p99 {statistics.median(p99s):.2f} "
            f"(median of {repeat}; each repetition p50/p99: {each})"
        )
    return lines


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="admissions per run [400]")
    parser.add_argument("--reads", type=int, default=1000, help="status reads per run [1000]")
    parser.add_argument(
        "--repeat", type=int, default=3, help="repetitions of the admission and floor phases [3]"
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="first profile N admissions, floor uploads and status reads in-process",
    )
    parser.add_argument("--profile-only", action="store_true", help="only the in-process profile")
    parser.add_argument(
        "--workspaces",
        type=int,
        default=200,
        metavar="N",
        help="spread the uploads over N workspaces at the default rate limit (60 a minute "
        "each); 1: one workspace, its limit raised above what the benchmark sends [200]",
    )
    return parser.parse_args()


def report(results: list[Result], repeat: int) -> None:
    say("")
    say(
        table(
            ["what", "repetition", "clients", "requests", "p50 ms", "p99 ms", "per s", "errors"],
            [r.row() for r in results],
        )
    )
    say("")
    for line in ratio_lines(results, repeat):
        say(line)

    def first(label: str, clients: int) -> Result:
        return next(r for r in results if r.label == label and r.clients == clients)

    http = [first("admission (HTTP)", c).per_second for c in (1, 8)]
    svc = [first("admission (service function)", c).per_second for c in (1, 8)]
    say(
        f"HTTP / service function, admissions per second: {http[0] / svc[0]:.2f} at 1 client, "
        f"{http[1] / svc[1]:.2f} at 8 clients (first repetition)"
    )
    say(f"load average after: {load_average()}")


def more_workspaces(first, count: int) -> list:
    """`first` and count - 1 new workspaces with the benchmark's user as a
    member; with more than one, the uploads name them in turn (WORKSPACES)."""
    from accounts.models import Membership, Workspace
    from accounts.services import membership_add

    spaces = [first]
    for n in range(1, count):
        spaces.append(Workspace.objects.create(slug=f"bench-{n}", name=f"Benchmarks {n}"))
        membership_add(workspace=spaces[-1], username="bench", role=Membership.Role.MEMBER)
    if count > 1:
        WORKSPACES[:] = [space.slug for space in spaces]
    return spaces


def main() -> None:
    args = parse_args()
    say(f"load average before: {load_average()}")

    say(f"fresh database {DATABASE} ...")
    db = common.fresh_database(DATABASE)
    media = Path(tempfile.mkdtemp(prefix="bench-admission-media-"))
    # The per-workspace upload rate limit (60 a minute by default) holds as
    # deployed: the uploads go to many workspaces in turn, none of which
    # reaches it. With one workspace it is set above what the benchmark
    # sends, and its window then holds every upload of the last minute; its
    # check runs on every upload either way.
    limit = {} if args.workspaces > 1 else {"UPLOAD_RATE_PER_MINUTE": 1_000_000}
    env = db.env(MEDIA_ROOT=media, LOG_LEVEL="WARNING", CONN_MAX_AGE=60, **limit)

    common.setup_django(db, MEDIA_ROOT=media, DJANGO_SETTINGS_MODULE="bench.floor_settings", **limit)
    from django.db import connections

    from accounts.models import Membership, Workspace
    from accounts.services import apitoken_create, membership_add
    from catalog.services import pricesheet_admit

    workspace = Workspace.objects.get(pk=db.workspace_id)
    user = membership_add(workspace=workspace, username="bench", role=Membership.Role.MEMBER).user
    _, token = apitoken_create(user=user, name="bench")
    spaces = more_workspaces(workspace, args.workspaces)
    say(
        f"{len(spaces)} workspace(s), upload rate limit "
        f"{limit.get('UPLOAD_RATE_PER_MINUTE', 'as deployed (60 a minute each)')}"
    )

    with connections["default"].cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor_upload (id text PRIMARY KEY, "
            "sha256 text NOT NULL, size bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
        )
    if args.profile:
        say(profile_in_process(token, args.profile))
        if args.profile_only:
            return
    env["DJANGO_SETTINGS_MODULE"] = "bench.floor_settings"
    port, stop_gunicorn = common.start_gunicorn(env, ready_path="/api/jobs", ready_status=401)
    say(f"gunicorn on 127.0.0.1:{port} (2 workers x 4 threads); media in {media}")

    auth = {"Authorization": f"Bearer {token}"}
    content_type = f"multipart/form-data; boundary={BOUNDARY}"
    admitted: list[str] = []

    def connection(state: dict) -> http.client.HTTPConnection:
        if "conn" not in state:
            state["conn"] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            state["close"] = state["conn"].close
        return state["conn"]

    def admit_http(state: dict) -> bool:
        conn = connection(state)
        conn.request(
            "POST",
            "/api/jobs",
            body=unique_body(),
            headers={**auth, "Content-Type": content_type, "Idempotency-Key": str(uuid.uuid4())},
        )
        response = conn.getresponse()
        payload = response.read()
        if response.status != 202:
            return False
        admitted.append(payload.decode().split('"id": "')[1].split('"')[0])
        return True

    def floor_http(state: dict) -> bool:
        conn = connection(state)
        conn.request(
            "POST", "/bench/floor-upload", body=unique_body(), headers={"Content-Type": content_type}
        )
        response = conn.getresponse()
        response.read()
        return response.status == 202

    def read_http(state: dict) -> bool:
        conn = connection(state)
        state["n"] = state.get("n", 0) + 1
        conn.request("GET", f"/api/jobs/{admitted[state['n'] % len(admitted)]}", headers=auth)
        response = conn.getresponse()
        response.read()
        return response.status == 200

    def admit_service(state: dict) -> bool:
        if "close" not in state:
            state["close"] = connections.close_all
        pricesheet_admit(
            workspace=spaces[next(_TURN) % len(spaces)],
            chunks=[unique_csv()],
            original_name="bench.csv",
            content_type="text/csv",
            supplier_name="Bench Supplies",
            idempotency_key=str(uuid.uuid4()),
            user=user,
        )
        return True

    # A short warm-up: imports, connections and caches on both sides.
    run_clients("warm-up", 8, 40, admit_http)
    run_clients("warm-up", 8, 40, floor_http)
    run_clients("warm-up", 2, 10, admit_service)

    results = []
    for repetition in range(args.repeat):
        for clients in (1, 8):
            # Interleaved, so both see the same machine.
            results.append(run_clients("admission (HTTP)", clients, args.requests, admit_http, repetition))
            results.append(run_clients("floor upload (HTTP)", clients, args.requests, floor_http, repetition))
    for clients in (1, 8):
        results.append(run_clients("status read (HTTP)", clients, args.reads, read_http))
    for clients in (1, 8):
        results.append(run_clients("admission (service function)", clients, args.requests, admit_service))
    stop_gunicorn()
    report(results, args.repeat)


if __name__ == "__main__":
    main()
