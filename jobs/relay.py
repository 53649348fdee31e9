"""The outbox relay: reserve a small batch (short transaction, SKIP LOCKED),
POST each message to its workspace's active webhook endpoints outside any
transaction, then record the outcome: delivered, a retry after a jittered
exponential backoff, or failed after WEBHOOK_MAX_ATTEMPTS.

Delivery is at least once. A relay killed between a POST and its record
leaves the message reserved; when the visibility timeout passes another
relay posts it again with the same `Webhook-Id`, which receivers dedupe on.

Every request is signed: `Webhook-Signature: v1=<hex>` where hex is the
HMAC-SHA256, keyed with the endpoint's secret, of
`"{Webhook-Id}.{Webhook-Timestamp}.{raw body}"`.
"""

import hashlib
import hmac
import http.client
import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import environ
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, close_old_connections, connection

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
)

log = logging.getLogger("jobs.relay")

USER_AGENT = "Pricesheet-Webhooks/1"
SIGNATURE_VERSION = "v1"

_env = environ.Env()

# Relay settings with their defaults; settings.py may define them, else
# they are read from the environment under the same name.
_DEFAULTS = {
    # How long a reservation hides a message from other relays. Keep it above
    # (active endpoints per workspace) x WEBHOOK_TIMEOUT_SECONDS.
    "OUTBOX_VISIBILITY_SECONDS": 60.0,
    "OUTBOX_BATCH_SIZE": 10,
    "OUTBOX_POLL_INTERVAL_SECONDS": 1.0,
    "OUTBOX_BACKOFF_BASE_SECONDS": 10.0,
    "OUTBOX_BACKOFF_MAX_SECONDS": 3600.0,
}


def relay_setting(name: str) -> int | float:
    default = _DEFAULTS[name]
    if hasattr(settings, name):
        return type(default)(getattr(settings, name))
    if isinstance(default, int):
        return _env.int(name, default=default)
    return _env.float(name, default=default)


def retry_delay_seconds(attempt: int) -> float:
    """Exponential backoff with equal jitter: between half and all of
    min(cap, base * 2^(attempt-1)), so retries of many messages spread out
    but none comes back at once."""
    ceiling = min(relay_setting("OUTBOX_BACKOFF_MAX_SECONDS"),
                  relay_setting("OUTBOX_BACKOFF_BASE_SECONDS") * 2 ** max(attempt - 1, 0))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def webhook_signature(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


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


@dataclass(frozen=True)
class PostResult:
    status_code: int | None
    error: str
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A redirected POST would be replayed as a GET, or to a host the endpoint
    # was not configured for: a 3xx counts as a failed delivery instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def webhook_post(*, url: str, secret: str, message_id: str, body: bytes, timeout: float) -> PostResult:
    timestamp = int(time.time())
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "Webhook-Id": message_id,
            "Webhook-Timestamp": str(timestamp),
            "Webhook-Signature": webhook_signature(
                secret=secret, message_id=message_id, timestamp=timestamp, body=body
            ),
        },
    )
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        with _opener.open(request, timeout=timeout) as response:
            response.read(4096)
            return PostResult(status_code=response.status, error="", duration_ms=elapsed())
    except urllib.error.HTTPError as exc:
        exc.close()
        return PostResult(status_code=exc.code, error=f"HTTP {exc.code} {exc.reason}",
                          duration_ms=elapsed())
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return PostResult(status_code=None, error=f"{type(exc).__name__}: {reason}",
                          duration_ms=elapsed())


def message_deliver(reservation: Reservation) -> str:
    """POST one reserved message to every active endpoint that does not have
    it yet, then record the outcome. Returns "delivered", "retry" or "failed"
    (or "lost" when another reservation took over before the outcome)."""
    endpoints = list(
        WebhookEndpoint.objects.filter(workspace_id=reservation.workspace_id, active=True)
        .order_by("pk")
    )
    if not endpoints:
        outbox_mark_delivered(message_id=reservation.message_id, note=NOTE_NO_ENDPOINTS)
        return "delivered"
    done = set(
        WebhookDelivery.objects.filter(message_id=reservation.message_id, succeeded=True)
        .values_list("endpoint_id", flat=True)
    )
    body = webhook_body(reservation)
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    errors = []
    for endpoint in endpoints:
        if endpoint.pk in done:
            continue
        result = webhook_post(url=endpoint.url, secret=endpoint.secret,
                              message_id=str(reservation.message_id), body=body, timeout=timeout)
        webhook_delivery_record(reservation=reservation, endpoint=endpoint,
                                succeeded=result.succeeded, status_code=result.status_code,
                                error=result.error, duration_ms=result.duration_ms)
        if not result.succeeded:
            errors.append(f"{endpoint.url}: {result.error}")
    if not errors:
        outbox_mark_delivered(message_id=reservation.message_id)
        return "delivered"
    error = "; ".join(errors)
    if reservation.attempt >= settings.WEBHOOK_MAX_ATTEMPTS:
        recorded = outbox_mark_failed(
            reservation=reservation, error=f"gave up after {reservation.attempt} attempts: {error}"
        )
        outcome = "failed"
    else:
        recorded = outbox_schedule_retry(
            reservation=reservation, error=error,
            delay_seconds=retry_delay_seconds(reservation.attempt),
        )
        outcome = "retry"
    if not recorded:
        log.warning("outbox %s: reservation %s was taken over; outcome not recorded",
                    reservation.message_id, reservation.attempt)
        return "lost"
    log.warning("outbox %s attempt %s: %s (%s)", reservation.message_id, reservation.attempt,
                outcome, error)
    return outcome


def relay_once(*, stop: threading.Event | None = None) -> int:
    """Reserve one batch and deliver it. Returns how many messages were
    reserved (0: nothing is deliverable now)."""
    visibility = relay_setting("OUTBOX_VISIBILITY_SECONDS")
    reserved = outbox_reserve_batch(batch_size=relay_setting("OUTBOX_BATCH_SIZE"),
                                    visibility_seconds=visibility)
    # Local deadline a little inside the reservation: a message started later
    # than this could outlive its reservation and be posted twice at once.
    deadline = time.monotonic() + visibility - settings.WEBHOOK_TIMEOUT_SECONDS
    for index, reservation in enumerate(reserved):
        if index and (time.monotonic() > deadline or (stop is not None and stop.is_set())):
            for rest in reserved[index:]:
                outbox_release(reservation=rest)
            break
        try:
            message_deliver(reservation)
        except DatabaseError:
            raise
        except Exception:  # noqa: BLE001  one bad message must not stop the others
            log.exception("outbox %s: delivery crashed; retried after the visibility timeout",
                          reservation.message_id)
    return len(reserved)


class RelayThread(threading.Thread):
    """Delivers outbox messages until `stop` is set (or, with `burst`, until
    nothing is deliverable now): a full batch is followed at once by the
    next, otherwise it waits OUTBOX_POLL_INTERVAL_SECONDS."""

    def __init__(self, stop: threading.Event, *, burst: bool = False):
        super().__init__(name="outbox-relay", daemon=True)
        self._stop_event = stop
        self._burst = burst

    def run(self) -> None:
        interval = relay_setting("OUTBOX_POLL_INTERVAL_SECONDS")
        batch_size = relay_setting("OUTBOX_BATCH_SIZE")
        log.info("outbox relay started")
        try:
            while not self._stop_event.is_set():
                close_old_connections()
                try:
                    reserved = relay_once(stop=self._stop_event)
                except DatabaseError:
                    log.exception("outbox relay: database error; reconnecting")
                    connection.close()
                    self._stop_event.wait(interval)
                    continue
                if self._burst and reserved == 0:
                    break
                if reserved < batch_size and not self._burst:
                    # The backlog is drained (a full batch goes again at once).
                    self._stop_event.wait(interval)
        finally:
            connection.close()
            log.info("outbox relay stopped")
