"""The outbox relay: reserve a small batch (short transaction, SKIP LOCKED),
POST each message to its workspace's active webhook endpoints outside any
transaction, then record the outcome: delivered, a retry after a jittered
exponential backoff, or failed after WEBHOOK_MAX_ATTEMPTS.

Endpoints are isolated from each other. Each endpoint is a lane: its POSTs
go one at a time, in order, on a pool of OUTBOX_CONCURRENCY threads, while
other lanes go on. A lane whose POST times out or is refused does not try
the rest of its backlog this time (those messages retry later), so a slow
or dead endpoint costs one timeout and delays only its own messages. The
relay reserves no new message of a workspace it is still delivering to.

Delivery is at least once. A relay killed between a POST and its record
leaves the message reserved; when the visibility timeout passes another
relay posts it again with the same `Webhook-Id`, which receivers dedupe on.

Every request is signed: `Webhook-Signature: v1=<hex>` where hex is the
HMAC-SHA256, keyed with the endpoint's secret, of
`"{Webhook-Id}.{Webhook-Timestamp}.{raw body}"` (and a second `v1=<hex>`
with the previous secret while a rotation's grace period lasts). Where a
POST may go is decided in `jobs.webhooks`.
"""

import json
import logging
import queue
import threading
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Case, Q, Value, When
from django.db.models.functions import Now

from jobs.backoff import backoff_seconds
from jobs.models import WebhookEndpoint
from jobs.outbox import (
    NOTE_NO_ENDPOINTS,
    Reservation,
    WebhookDelivery,
    outbox_mark_delivered,
    outbox_mark_failed,
    outbox_release,
    outbox_reserve_batch,
    outbox_schedule_retry,
    webhook_delivery_record,
    webhook_secrets_in_use,
)
from jobs.webhooks import REFUSED, PostResult, webhook_post

log = logging.getLogger("jobs.relay")

NOT_ATTEMPTED = "not attempted (the relay is stopping or its reservation ran out)"
# Messages one relay delivers at once, in units of OUTBOX_BATCH_SIZE.
IN_FLIGHT_BATCHES = 4


def retry_delay_seconds(attempt: int) -> float:
    """The relay's backoff: equal jitter, so retries of many messages spread
    out but none comes back at once."""
    return backoff_seconds(
        attempt,
        base=settings.OUTBOX_BACKOFF_BASE_SECONDS,
        cap=settings.OUTBOX_BACKOFF_MAX_SECONDS,
        jitter=0.5,
    )


def webhook_body(reservation: Reservation) -> bytes:
    return json.dumps(
        {
            "id": str(reservation.message_id),
            "topic": reservation.topic,
            "created_at": reservation.created_at.isoformat(),
            "payload": reservation.payload,
        },
        cls=DjangoJSONEncoder,
        separators=(",", ":"),
    ).encode()


def _endpoints_of(workspace_id: int) -> list[WebhookEndpoint]:
    """Active endpoints with `secrets_in_use`: the current secret, and the
    previous one while its grace period lasts (database time)."""
    endpoints = list(
        WebhookEndpoint.objects.filter(workspace_id=workspace_id, active=True)
        .annotate(
            previous_valid=Case(
                When(Q(previous_secret_expires_at__gt=Now()), then=Value(True)), default=Value(False)
            )
        )
        .order_by("pk")
    )
    for endpoint in endpoints:
        endpoint.secrets_in_use = webhook_secrets_in_use(endpoint)
    return endpoints


@dataclass
class _InFlight:
    """A reserved message while its endpoints' lanes post it."""

    reservation: Reservation
    body: bytes
    deadline: float  # monotonic; no POST starts after it (the reservation would lapse)
    remaining: int
    # Database time minus this process's clock, as of the reservation: the
    # Webhook-Timestamp is database time, so a relay whose clock is off
    # still signs with the time a receiver checks against.
    clock_offset: float = 0.0
    attempted: bool = False
    errors: list[str] = field(default_factory=list)


def _record_outcome(message: _InFlight) -> str:
    """Delivered, a retry, failed, or (nothing was posted) given back."""
    reservation = message.reservation
    if not message.errors:
        outbox_mark_delivered(message_id=reservation.message_id)
        return "delivered"
    if not message.attempted:
        outbox_release(reservation=reservation)
        return "released"
    error = "; ".join(message.errors)
    if reservation.attempt >= settings.WEBHOOK_MAX_ATTEMPTS:
        recorded = outbox_mark_failed(
            reservation=reservation, error=f"gave up after {reservation.attempt} attempts: {error}"
        )
        outcome = "failed"
    else:
        recorded = outbox_schedule_retry(
            reservation=reservation,
            error=error,
            delay_seconds=retry_delay_seconds(reservation.attempt),
        )
        outcome = "retry"
    if not recorded:
        log.warning(
            "outbox %s: reservation %s was taken over; outcome not recorded",
            reservation.message_id,
            reservation.attempt,
        )
        return "lost"
    log.warning("outbox %s attempt %s: %s (%s)", reservation.message_id, reservation.attempt, outcome, error)
    return outcome


class Dispatcher:
    """Posts reserved messages, one lane per endpoint (see the module's
    docstring). Lanes only make HTTP requests; everything that touches the
    database (`submit`, `collect`) runs on the caller's thread, so the relay
    needs one connection however many lanes are busy."""

    def __init__(self, *, stop: threading.Event | None = None):
        self._stop = stop
        self._pool = ThreadPoolExecutor(
            max_workers=settings.OUTBOX_CONCURRENCY, thread_name_prefix="webhook-lane"
        )
        self._lock = threading.Lock()
        self._lanes: dict[int, deque[tuple[WebhookEndpoint, _InFlight]]] = {}
        # (endpoint, message, the POST's result or None, the error it was skipped for)
        self._done: queue.Queue[tuple[WebhookEndpoint, _InFlight, PostResult | None, str]] = queue.Queue()
        self._workspaces: Counter[int] = Counter()  # messages in flight per workspace
        self.in_flight = 0

    def busy_workspaces(self) -> list[int]:
        return [ws for ws, n in self._workspaces.items() if n > 0]

    def submit(self, reservation: Reservation) -> None:
        endpoints = _endpoints_of(reservation.workspace_id)
        if not endpoints:
            outbox_mark_delivered(message_id=reservation.message_id, note=NOTE_NO_ENDPOINTS)
            return
        done = set(
            WebhookDelivery.objects.filter(message_id=reservation.message_id, succeeded=True).values_list(
                "endpoint_id", flat=True
            )
        )
        todo = [endpoint for endpoint in endpoints if endpoint.pk not in done]
        if not todo:
            outbox_mark_delivered(message_id=reservation.message_id)
            return
        # A local deadline inside the reservation: a POST started later could
        # outlive it and be made twice at once. (With a visibility shorter than
        # the timeout, which it should not be, POSTs still start in its first half.)
        visibility = settings.OUTBOX_VISIBILITY_SECONDS
        deadline = time.monotonic() + max(visibility - settings.WEBHOOK_TIMEOUT_SECONDS, visibility / 2)
        # The reservation's end is database time (clock_timestamp() + visibility).
        offset = reservation.reserved_until.timestamp() - visibility - time.time()
        message = _InFlight(
            reservation=reservation,
            body=webhook_body(reservation),
            deadline=deadline,
            remaining=len(todo),
            clock_offset=offset,
        )
        self._workspaces[reservation.workspace_id] += 1
        self.in_flight += 1
        with self._lock:
            for endpoint in todo:
                lane = self._lanes.get(endpoint.pk)
                if lane is None:
                    lane = self._lanes[endpoint.pk] = deque()
                    self._pool.submit(self._drain, endpoint.pk)
                lane.append((endpoint, message))

    def _drain(self, endpoint_id: int) -> None:
        """Post a lane's backlog in order until it is empty (pool thread)."""
        failing = ""  # the error that stopped this lane's POSTs, if any
        while True:
            with self._lock:
                lane = self._lanes[endpoint_id]
                if not lane:
                    del self._lanes[endpoint_id]
                    return
                endpoint, message = lane.popleft()
            result, skipped = None, failing
            stopping = self._stop is not None and self._stop.is_set()
            if not (failing or stopping or time.monotonic() > message.deadline):
                try:
                    result = webhook_post(
                        url=endpoint.url,
                        secrets_in_use=endpoint.secrets_in_use,
                        message_id=str(message.reservation.message_id),
                        body=message.body,
                        timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
                        timestamp=int(time.time() + message.clock_offset),
                    )
                except Exception:  # noqa: BLE001  one bad POST must not stop the lane
                    log.exception(
                        "outbox %s: POST to endpoint %s crashed", message.reservation.message_id, endpoint_id
                    )
                # No answer at all: spare this endpoint the rest of its backlog
                # now (those messages retry after their backoff, with the same
                # error), and the other lanes the wait.
                if result is None or result.status_code is None:
                    failing = result.error if result is not None else REFUSED
            self._done.put((endpoint, message, result, skipped))

    def collect(self, timeout: float = 0) -> int:
        """Record what the lanes finished (waiting up to `timeout` for the
        first): each POST, and each message whose endpoints are all done."""
        handled = 0
        try:
            item = self._done.get(timeout=timeout) if timeout > 0 else self._done.get_nowait()
            while True:
                self._record(*item)
                handled += 1
                item = self._done.get_nowait()
        except queue.Empty:
            return handled

    def _record(
        self, endpoint: WebhookEndpoint, message: _InFlight, result: PostResult | None, skipped: str
    ) -> None:
        message.remaining -= 1
        if skipped:
            # Not posted because the endpoint just failed: an attempt like
            # that failure, so the message backs off instead of coming back.
            message.attempted = True
            message.errors.append(f"{endpoint.url}: {skipped}")
        elif result is None:
            message.errors.append(f"{endpoint.url}: {NOT_ATTEMPTED}")
        else:
            message.attempted = True
            if not result.succeeded:
                message.errors.append(f"{endpoint.url}: {result.error}")
        try:
            if result is not None:
                webhook_delivery_record(
                    reservation=message.reservation,
                    endpoint=endpoint,
                    succeeded=result.succeeded,
                    status_code=result.status_code,
                    error=result.error,
                    duration_ms=result.duration_ms,
                )
            if message.remaining == 0:
                _record_outcome(message)
        except DatabaseError:
            # The reservation lapses and the message is delivered again.
            log.exception("outbox %s: could not record a delivery", message.reservation.message_id)
            connection.close()
        finally:
            if message.remaining == 0:
                self._workspaces[message.reservation.workspace_id] -= 1
                self.in_flight -= 1

    def drain(self) -> None:
        """Until every submitted message has an outcome."""
        while self.in_flight:
            self.collect(timeout=1.0)

    def close(self) -> None:
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True)


def relay_once(*, stop: threading.Event | None = None) -> int:
    """Reserve one batch and deliver it completely. Returns how many
    messages were reserved (0: nothing is deliverable now)."""
    reserved = outbox_reserve_batch(
        batch_size=settings.OUTBOX_BATCH_SIZE, visibility_seconds=settings.OUTBOX_VISIBILITY_SECONDS
    )
    if not reserved:
        return 0
    dispatcher = Dispatcher(stop=stop)
    try:
        for reservation in reserved:
            dispatcher.submit(reservation)
    finally:
        dispatcher.close()
    return len(reserved)


class RelayThread(threading.Thread):
    """Delivers outbox messages until `stop` is set (or, with `burst`, until
    nothing is deliverable now). It reserves while fewer than
    IN_FLIGHT_BATCHES x OUTBOX_BATCH_SIZE messages are in flight, skipping
    workspaces still being delivered to, and otherwise waits for a message
    to finish or OUTBOX_POLL_INTERVAL_SECONDS."""

    def __init__(self, stop: threading.Event, *, burst: bool = False):
        super().__init__(name="outbox-relay", daemon=True)
        self._stop_event = stop
        self._burst = burst

    def run(self) -> None:
        interval = settings.OUTBOX_POLL_INTERVAL_SECONDS
        batch_size = settings.OUTBOX_BATCH_SIZE
        visibility = settings.OUTBOX_VISIBILITY_SECONDS
        capacity = batch_size * IN_FLIGHT_BATCHES
        dispatcher = Dispatcher(stop=self._stop_event)
        log.info("outbox relay started")
        try:
            while not self._stop_event.is_set():
                close_old_connections()
                room = min(batch_size, capacity - dispatcher.in_flight)
                reserved = []
                if room > 0:
                    try:
                        reserved = outbox_reserve_batch(
                            batch_size=room,
                            visibility_seconds=visibility,
                            exclude_workspaces=dispatcher.busy_workspaces(),
                        )
                        for reservation in reserved:
                            dispatcher.submit(reservation)
                    except DatabaseError:
                        # Reserved messages not submitted reappear after
                        # their visibility timeout.
                        log.exception("outbox relay: database error; reconnecting")
                        connection.close()
                        self._stop_event.wait(interval)
                        continue
                if self._burst and not reserved and not dispatcher.in_flight:
                    break
                # Drained, full or blocked: wait (a while) for a lane to finish.
                dispatcher.collect(timeout=interval if len(reserved) < batch_size else 0)
        finally:
            dispatcher.close()
            connection.close()
            log.info("outbox relay stopped")
