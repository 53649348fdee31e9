"""The worker: claim, run the handler outside any transaction, accept or fail.

`Worker.run_one()` is one claim-run-finish cycle (tests drive it directly);
`Worker.run()` is the loop behind `manage.py runworker`. Threads per process:
one loop per `--concurrency`, a lease keeper that renews the leases of the
jobs in hand, a recovery scanner on its own clock, and a listener that wakes
idle loops on NOTIFY.

Stopping (SIGTERM) has two stages. `stop()` ends claiming at once; the jobs
in hand go on, their leases still renewed, until each is accepted, failed or
released. A handler releases its job only at a check-in before expensive
work (`ctx.check()`); output already in hand is accepted. Once no job is in
hand the helper threads stop and the process exits. A second signal exits at
once.
"""

import gc
import logging
import os
import secrets
import signal
import socket
import threading
import time
import traceback
from collections import deque
from typing import Any

import psycopg
from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
)

from jobs import registry
from jobs.errors import PermanentError, TransientError
from jobs.services import (
    NOTIFY_CHANNEL,
    Claim,
    LeaseLost,
    Publish,
    attempt_record_provider_call,
    attempt_record_stale,
    job_accept_output,
    job_checkpoint,
    job_fail,
    job_heartbeat,
    job_load_checkpoint,
    job_release,
    jobs_accept_outputs,
    jobs_claim_batch,
    jobs_end_stalled_sessions,
    jobs_expire_leases,
)

log = logging.getLogger("jobs.worker")

MSG_INTERNAL_ERROR = "internal error, reference {reference}"
MSG_INTERRUPTED = "the database was busy or unreachable (reference {reference})"


def interrupted_by_infrastructure(exc: BaseException) -> bool:
    """A failure of the path to the database, not of the job: a lock wait
    that timed out, a deadlock, a connection that was lost or ended. A
    statement timeout is not among them: a statement that runs too long may
    do so every time."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    return not isinstance(exc.__cause__, psycopg.errors.QueryCanceled)


class RunTimes:
    """Recent run time per job kind in this worker (an exponential moving
    average), to tell the kinds worth prefetching. A kind not run yet counts
    as long."""

    WEIGHT = 0.2  # of the newest run

    def __init__(self, short_seconds: float):
        self.short_seconds = short_seconds
        self._mean: dict[str, float] = {}

    def observe(self, kind: str, seconds: float) -> None:
        previous = self._mean.get(kind)
        self._mean[kind] = seconds if previous is None else previous + self.WEIGHT * (seconds - previous)

    def is_short(self, kind: str) -> bool:
        mean = self._mean.get(kind)
        return mean is not None and mean < self.short_seconds

    def short_kinds(self, known: set[str]) -> set[str]:
        return {kind for kind in known if self.is_short(kind)}


class WorkerStopping(Exception):
    """The worker was asked to stop and the handler checked in before
    expensive work: hand the job back instead of starting it."""


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class JobContext:
    """What a handler gets: its input, and fenced ways to report progress,
    checkpoint and accept output. Every write checks the claim's fence."""

    def __init__(self, claim: Claim, worker: "Worker"):
        self.claim = claim
        self._worker = worker
        self._lost = threading.Event()
        self.finished = False
        # Claimed with other short jobs: an accept with nothing to publish
        # joins the group's one accept statement, run when the group ends.
        self.grouped = False

    @property
    def job_id(self):
        return self.claim.job_id

    @property
    def attempt(self) -> int:
        return self.claim.attempt

    @property
    def payload(self) -> dict:
        return self.claim.payload

    @property
    def workspace_id(self) -> int:
        return self.claim.workspace_id

    def lease_lost(self) -> None:
        self._lost.set()

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self) -> None:
        """The check-in before expensive work (the next model call, the next
        slice of a long computation): raise LeaseLost if the lease is gone
        (expired, cancelled, taken over), WorkerStopping if the worker is
        stopping. Never call it with output in hand: accept that instead."""
        self.check_lease()
        if self._worker.stopping:
            raise WorkerStopping()

    def check_lease(self) -> None:
        if self._lost.is_set():
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} lost its lease")

    def heartbeat(self, done: int | None = None, total: int | None = None) -> None:
        """Store progress and extend the lease. A stopping worker does not
        interrupt here: progress is reported after work, not before it."""
        self.check_lease()
        try:
            job_heartbeat(claim=self.claim, done=done, total=total)
        except LeaseLost:
            self._lost.set()
            raise

    def checkpoint(self, name: str, data: Any) -> None:
        self.check_lease()
        job_checkpoint(claim=self.claim, name=name, data=data)

    def load_checkpoint(self, name: str) -> Any | None:
        return job_load_checkpoint(job_id=self.job_id, name=name)

    def record_provider_call(self, request_id: str | None, usage: dict | None) -> None:
        """Keep a remote call's request id and token usage on this attempt at
        once, so a later failure (or a crash) loses no billing record."""
        attempt_record_provider_call(claim=self.claim, request_id=request_id, usage=usage)

    def accept(
        self, output: Any, *, needs_review: bool = False, publish: Publish | None = None
    ) -> str | None:
        """Accept output (and publish it in the same transaction); returns
        the job's new state. On a lost fence the result is kept only as this
        attempt's stale diagnostic.

        In a group of short jobs, output with nothing to publish is accepted
        with the group's other outputs once the group is done, each under
        its own fence, by the same service: the state is not known yet, and
        None is returned."""
        self.finished = True
        if self.grouped and publish is None:
            self._worker.defer_accept(self, output, needs_review)
            return None
        try:
            return job_accept_output(
                claim=self.claim, output=output, needs_review=needs_review, publish=publish
            )
        except LeaseLost:
            attempt_record_stale(claim=self.claim, diagnostic={"rejected": "accept", "output": output})
            raise


class LeaseKeeper(threading.Thread):
    """Renews the lease of every job in hand every lease/3 seconds; a renewal
    that affects zero rows tells that job's handler to stop. It runs until
    the worker shuts down, not merely stops claiming: a stopping worker's
    jobs in hand keep their leases until they are accepted or released."""

    def __init__(self, stop: threading.Event):
        super().__init__(name="lease-keeper", daemon=True)
        self._stop_event = stop
        self._contexts: set[JobContext] = set()
        self._lock = threading.Lock()

    def track(self, ctx: JobContext) -> None:
        with self._lock:
            self._contexts.add(ctx)

    def untrack(self, ctx: JobContext) -> None:
        with self._lock:
            self._contexts.discard(ctx)

    def in_hand(self) -> list[JobContext]:
        with self._lock:
            return [ctx for ctx in self._contexts if not (ctx.finished or ctx.lost)]

    def run(self) -> None:
        interval = settings.JOB_LEASE_SECONDS / 3
        try:
            while not self._stop_event.wait(interval):
                with self._lock:
                    contexts = list(self._contexts)
                for ctx in contexts:
                    if ctx.finished or ctx.lost:
                        continue
                    try:
                        job_heartbeat(claim=ctx.claim)
                    except LeaseLost:
                        log.warning("job %s attempt %s lost its lease", ctx.job_id, ctx.attempt)
                        ctx.lease_lost()
                    except Exception:  # noqa: BLE001  the keeper must outlive any error
                        log.exception("lease renewal failed; retrying next turn")
                        connection.close()
        finally:
            connection.close()


class RecoveryScanner(threading.Thread):
    """Expires lapsed leases every JOB_RECOVERY_INTERVAL_SECONDS on its own
    thread and connection, so a worker busy with a long job still recovers
    the jobs of workers that died."""

    def __init__(self, stop: threading.Event, worker: "Worker"):
        super().__init__(name="recovery", daemon=True)
        self._stop_event = stop
        self._worker = worker

    def run(self) -> None:
        try:
            while not self._stop_event.wait(settings.JOB_RECOVERY_INTERVAL_SECONDS):
                try:
                    self._worker.recover()
                except Exception:  # noqa: BLE001  the scanner must outlive any error
                    log.exception("recovery scan failed; retrying next turn")
                    connection.close()
                close_old_connections()
        finally:
            connection.close()


class Listener(threading.Thread):
    """LISTENs on its own connection and wakes idle loops on NOTIFY. A lost
    notification only delays a job: loops also poll."""

    def __init__(self, stop: threading.Event, wake):
        super().__init__(name="listener", daemon=True)
        self._stop_event = stop
        self._wake = wake

    def run(self) -> None:
        params = {
            k: v
            for k, v in connection.get_connection_params().items()
            if k in ("dbname", "host", "port", "user", "password", "sslmode", "options")
            or k.startswith("keepalives")
        }
        while not self._stop_event.is_set():
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self._wake()  # anything admitted while we were not listening
                    while not self._stop_event.is_set():
                        for _ in conn.notifies(timeout=1.0):
                            self._wake()
            except psycopg.Error:
                log.warning("listener connection failed; reconnecting")
                self._stop_event.wait(1.0)


class Worker:
    def __init__(
        self,
        *,
        worker_id: str | None = None,
        concurrency: int = 1,
        burst: bool = False,
        relay: bool = False,
        prefetch: int | None = None,
        shutdown_timeout: float | None = None,
    ):
        self.worker_id = worker_id or default_worker_id()
        # How long a graceful stop may take before the jobs in hand are
        # released and the process exits (None: as long as they take).
        self.shutdown_timeout = shutdown_timeout
        self.concurrency = concurrency
        self.burst = burst
        self.relay = relay
        # Claims taken per statement. Each keeps its own token, attempt and
        # lease (renewed while it waits here). None: decided per claim, see
        # _claim(); a number: always that many (1 never prefetches).
        self.prefetch = prefetch
        self.run_times = RunTimes(settings.JOB_PREFETCH_SHORT_SECONDS)
        self._local = threading.local()  # each loop's accepts waiting for their group
        # _stop ends claiming (the first signal); _shutdown ends the helper
        # threads once no job is in hand any more.
        self._stop = threading.Event()
        self._shutdown = threading.Event()
        self._wakers: list[threading.Event] = []
        self._keeper = LeaseKeeper(self._shutdown)
        # Only kinds this process can run are claimed: during a rolling
        # deploy an older worker leaves a new kind to the newer workers.
        self.kinds = registry.kinds()
        self._claimed: deque[JobContext] = deque()  # run_one's; each loop thread has its own

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake_all()

    def _wake_all(self) -> None:
        for event in self._wakers:
            event.set()

    # --- one cycle ---------------------------------------------------------------

    def run_one(self) -> bool:
        """Claim one job and run it to an outcome. False when nothing is claimable."""
        return self._run_one(self._claimed)

    def _run_one(self, claimed: deque[JobContext]) -> bool:
        if not claimed and not self.stopping:
            claims = self._claim()
            for claim in claims:
                ctx = JobContext(claim, self)
                ctx.grouped = len(claims) > 1
                self._keeper.track(ctx)  # its lease is renewed while it waits
                claimed.append(ctx)
        if not claimed:
            return False
        self.execute(claimed.popleft())
        if not claimed:
            self.flush_accepts()
        return True

    def _pending(self) -> list[tuple[JobContext, Any, bool]]:
        if not hasattr(self._local, "pending"):
            self._local.pending = []
        return self._local.pending

    def defer_accept(self, ctx: JobContext, output: Any, needs_review: bool) -> None:
        self._pending().append((ctx, output, needs_review))

    def flush_accepts(self) -> None:
        """Accept the finished jobs of this loop's group in one statement."""
        pending = self._pending()
        if not pending:
            return
        group = list(pending)
        pending.clear()
        try:
            states = jobs_accept_outputs(accepts=[(ctx.claim, out, review) for ctx, out, review in group])
        except DatabaseError:
            # Nothing was accepted: the leases expire and recovery hands the
            # jobs to new attempts.
            log.exception("could not accept %d finished jobs", len(group))
            connection.close()
            return
        for ctx, output, _ in group:
            if ctx.job_id not in states:
                log.warning("job %s attempt %s: lease lost, result discarded", ctx.job_id, ctx.attempt)
                self._finish_quietly(
                    attempt_record_stale, claim=ctx.claim, diagnostic={"rejected": "accept", "output": output}
                )

    def _claim(self) -> list[Claim]:
        if self.prefetch is not None:
            return jobs_claim_batch(worker_id=self.worker_id, limit=self.prefetch, kinds=self.kinds)
        # The oldest claimable job first, of any kind.
        first = jobs_claim_batch(worker_id=self.worker_id, limit=1, kinds=self.kinds)
        more = settings.JOB_PREFETCH_MAX - 1
        if not first or more < 1 or not self.run_times.is_short(first[0].kind):
            return first
        # It is of a kind this worker runs in milliseconds: take the next
        # ones of such kinds too, so they cost one claim statement together.
        # A long job is never among them, so none waits in this worker
        # while another worker is free.
        short = self.run_times.short_kinds(set(self.kinds))
        return first + jobs_claim_batch(worker_id=self.worker_id, limit=more, kinds=short)

    def release_claimed(self, claimed: deque[JobContext]) -> None:
        """Hand back prefetched claims that were never started (after
        accepting the ones that were run)."""
        self.flush_accepts()
        while claimed:
            ctx = claimed.popleft()
            self._finish_quietly(job_release, claim=ctx.claim)
            self._keeper.untrack(ctx)

    def execute(self, ctx: JobContext) -> None:
        claim = ctx.claim
        log.info("job %s attempt %s (%s) claimed", claim.job_id, claim.attempt, claim.kind)
        handler = registry.get_handler(claim.kind)
        started = time.perf_counter()
        try:
            ctx.check()  # a prefetched claim may wait while the worker stops
            if handler is None:
                raise PermanentError(f"no handler is registered for job kind {claim.kind!r}")
            handler(ctx)
            if not ctx.finished:
                raise PermanentError("the handler returned without accepting any output")
            log.info("job %s attempt %s accepted", claim.job_id, claim.attempt)
        except LeaseLost:
            # Publication rights are gone. A refused accept recorded its
            # result; a refused heartbeat or checkpoint is recorded here.
            log.warning("job %s attempt %s: lease lost, result discarded", claim.job_id, claim.attempt)
            if not ctx.finished:
                self._finish_quietly(attempt_record_stale, claim=claim, diagnostic={"rejected": "heartbeat"})
        except WorkerStopping:
            self._finish_quietly(job_release, claim=claim)
            log.info("job %s attempt %s released", claim.job_id, claim.attempt)
        except PermanentError as exc:
            self._finish_quietly(
                job_fail,
                claim=claim,
                error=str(exc),
                transient=False,
                stale={"rejected": "fail", "error": str(exc)},
            )
        except TransientError as exc:
            self._finish_quietly(
                job_fail,
                claim=claim,
                error=str(exc),
                transient=True,
                stale={"rejected": "fail", "error": str(exc)},
            )
        except Exception as exc:  # noqa: BLE001  anything unexpected may succeed next time
            # Members read the job's reason: they get a reference, never the
            # exception (it may hold paths or SQL); staff see the detail on
            # the attempt and in the log under the same reference.
            reference = secrets.token_hex(4)
            log.warning(
                "job %s attempt %s failed (reference %s): %s",
                claim.job_id,
                claim.attempt,
                reference,
                exc,
                exc_info=True,
            )
            error = f"reference {reference}: {type(exc).__name__}: {exc}"
            if isinstance(exc, DatabaseError):
                connection.close()
            # A lock timeout or a lost connection does not use up the job's
            # attempts (up to JOB_MAX_TOTAL_ATTEMPTS): the job did not fail.
            charged = not interrupted_by_infrastructure(exc)
            shown = MSG_INTERNAL_ERROR if charged else MSG_INTERRUPTED
            self._finish_quietly(
                job_fail,
                claim=claim,
                error=error,
                transient=True,
                charged=charged,
                reason=shown.format(reference=reference),
                stale={"rejected": "fail", "error": error, "traceback": traceback.format_exc(limit=5)},
            )
        finally:
            self._keeper.untrack(ctx)
            self.run_times.observe(claim.kind, time.perf_counter() - started)

    def _finish_quietly(self, transition, *, claim: Claim, stale: dict | None = None, **kwargs) -> None:
        """Run a closing transition; a lost fence is recorded, not raised."""
        try:
            transition(claim=claim, **kwargs)
        except LeaseLost:
            if stale is not None:
                attempt_record_stale(claim=claim, diagnostic=stale)
        except DatabaseError:
            # The database went away: the lease will expire and recovery
            # will hand the job to another attempt.
            log.exception("job %s attempt %s: could not record outcome", claim.job_id, claim.attempt)
            connection.close()

    def recover(self) -> list:
        moved = jobs_expire_leases()
        # A job passed over because its row is still locked long after its
        # lease ran out: end the stalled session holding it, then expire it.
        if jobs_end_stalled_sessions(leases=settings.JOB_STALLED_LEASES):
            moved += jobs_expire_leases()
        for job_id, state in moved:
            log.warning("job %s: lease expired, moved to %s", job_id, state)
        return moved

    # --- the loop -------------------------------------------------------------

    def run(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
        self._wakers = [threading.Event() for _ in range(self.concurrency)]
        self._keeper.start()
        self.warm_up()
        # What start-up made (Django, the app registry, the modules) lives as
        # long as the process: full collections need not scan it again and
        # again while jobs run, nor free it object by object at exit (a
        # fifth of a second per process).
        gc.freeze()
        try:
            self.recover()  # once at start (a burst run may end before the first interval)
        except DatabaseError:
            log.exception("recovery scan failed; the scanner retries on its clock")
            connection.close()
        recovery = RecoveryScanner(self._shutdown, self)
        recovery.start()
        helpers: list[threading.Thread] = [self._keeper, recovery]
        if not self.burst:
            listener = Listener(self._stop, self._wake_all)
            listener.start()
            helpers.append(listener)
        if self.relay:
            from jobs.relay import RelayThread

            relay = RelayThread(self._stop)
            relay.start()
            helpers.append(relay)
        log.info("worker %s started (concurrency %s)", self.worker_id, self.concurrency)
        loops = [
            threading.Thread(target=self._loop, args=(i,), name=f"loop-{i}", daemon=True)
            for i in range(1, self.concurrency)
        ]
        for thread in loops:
            thread.start()
        try:
            self._loop(0)
            for thread in loops:
                while thread.is_alive():
                    thread.join(0.5)
        finally:
            # Every loop has finished its jobs in hand: nothing holds a lease.
            self.stop()
            self._shutdown.set()
            for thread in helpers:
                thread.join(5)
            connection.close()
            log.info("worker %s stopped", self.worker_id)

    def warm_up(self) -> None:
        """What the kinds this worker runs prepare before the first claim; a
        failure is logged, and the first job of the kind meets it again."""
        for name in self.kinds:
            kind = registry.get_kind(name)
            if kind is not None and kind.warm_up is not None:
                try:
                    kind.warm_up()
                except Exception:  # noqa: BLE001  the jobs themselves report what is wrong
                    log.exception("warming up job kind %s failed", name)

    def _loop(self, index: int) -> None:
        wake = self._wakers[index]
        claimed = self._claimed if index == 0 else deque()
        try:
            while not self._stop.is_set():
                try:
                    if self._run_one(claimed):
                        continue
                except DatabaseError:
                    log.exception("database error; reconnecting")
                    connection.close()
                    self._stop.wait(1.0)
                    continue
                if self.burst:
                    break
                wake.wait(settings.JOB_POLL_INTERVAL_SECONDS)
                wake.clear()
                # Between busy turns the connection is in use and known good;
                # an idle one is checked (and replaced if stale) before reuse.
                close_old_connections()
        finally:
            self.release_claimed(claimed)
            if index != 0:
                connection.close()

    def _on_signal(self, signum, frame) -> None:
        if self._stop.is_set():
            log.warning("second signal: exiting now")
            os._exit(1)
        log.info(
            "signal %s: no more claims; finishing or releasing jobs in hand (a second signal exits at once)",
            signum,
        )
        self.stop()
        if self.shutdown_timeout is not None:
            timer = threading.Timer(self.shutdown_timeout, self._stop_now)
            timer.daemon = True
            timer.start()

    def _stop_now(self) -> None:
        """The graceful stop ran out of time: hand back every job still in
        hand (its fence makes any later write of the handler a no-op; the
        attempt is not counted) and exit."""
        contexts = self._keeper.in_hand()
        log.warning(
            "shutdown timeout (%ss): releasing %d job(s) in hand and exiting",
            self.shutdown_timeout,
            len(contexts),
        )
        for ctx in contexts:
            self._finish_quietly(job_release, claim=ctx.claim)
        connection.close()
        os._exit(1)
