"""Outbox delivery writes: reserve a batch, record each POST, then mark the
message delivered, schedule a retry, mark it failed, or give it back; and
staff's redeliver. Each is one guarded UPDATE or one short transaction.

A reservation moves `available_at` forward (a visibility timeout) and bumps
`attempts`; the pair (attempts, available_at) it wrote is its fence. A relay
that outlived its reservation (another relay reserved the message since) may
still record what it delivered, but can no longer reschedule or fail the
message: its fenced UPDATE affects zero rows.
"""

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import models, transaction
from django.db.models import F, Value

from jobs.models import OutboxMessage, WebhookDelivery, WebhookEndpoint
from jobs.services import ClockTimestamp
from jobs.webhooks import secret_generate


class MessageNotFailed(Exception):
    """Only a message the relay gave up on can be redelivered."""

    def __init__(self, message_id: uuid.UUID, status: str):
        super().__init__(f"outbox message {message_id} is {status}, not failed")
        self.message_id = message_id
        self.status = status


NOTE_NO_ENDPOINTS = "nothing to deliver: the workspace has no active webhook endpoint"


@dataclass(frozen=True)
class Reservation:
    """A message the relay holds until `reserved_until` (database time)."""

    message_id: uuid.UUID
    workspace_id: int
    topic: str
    payload: Any
    created_at: datetime
    attempt: int
    reserved_until: datetime


def _pending():
    return OutboxMessage.objects.filter(delivered_at__isnull=True, failed_at__isnull=True)


def _fenced(reservation: Reservation):
    """The message, only while this reservation is still the latest one."""
    return _pending().filter(
        pk=reservation.message_id,
        attempts=reservation.attempt,
        available_at=reservation.reserved_until,
    )


def _after(seconds: float):
    return ClockTimestamp() + Value(timedelta(seconds=seconds), output_field=models.DurationField())


def outbox_reserve_batch(
    *, batch_size: int, visibility_seconds: float, exclude_workspaces: Collection[int] = ()
) -> list[Reservation]:
    """Reserve up to `batch_size` deliverable messages for `visibility_seconds`.

    A short transaction, committed before any POST: SKIP LOCKED lets
    concurrent relays pass over rows another relay is reserving instead of
    queueing behind it, and once committed the moved `available_at` hides the
    rows from every relay until the timeout, so a relay that dies mid-delivery
    loses nothing: the message becomes deliverable again by itself.
    Messages of `exclude_workspaces` (whose earlier messages this relay is
    still delivering) are left for later.
    """
    with transaction.atomic():
        ids = list(
            _pending()
            .filter(available_at__lte=ClockTimestamp())
            .exclude(workspace_id__in=list(exclude_workspaces))
            .select_for_update(skip_locked=True)
            .order_by("available_at")
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            return []
        OutboxMessage.objects.filter(id__in=ids).update(
            available_at=_after(visibility_seconds), attempts=F("attempts") + 1
        )
        rows = (
            OutboxMessage.objects.filter(id__in=ids)
            .order_by("created_at")
            .values("id", "workspace_id", "topic", "payload", "created_at", "attempts", "available_at")
        )
        return [
            Reservation(
                message_id=row["id"],
                workspace_id=row["workspace_id"],
                topic=row["topic"],
                payload=row["payload"],
                created_at=row["created_at"],
                attempt=row["attempts"],
                reserved_until=row["available_at"],
            )
            for row in rows
        ]


def webhook_delivery_record(
    *,
    reservation: Reservation,
    endpoint: WebhookEndpoint,
    succeeded: bool,
    status_code: int | None,
    error: str,
    duration_ms: int,
) -> WebhookDelivery:
    """Append the outcome of one POST. Not fenced: the POST happened."""
    return WebhookDelivery.objects.create(
        message_id=reservation.message_id,
        endpoint=endpoint,
        url=endpoint.url,
        attempt=reservation.attempt,
        succeeded=succeeded,
        status_code=status_code,
        error=error,
        duration_ms=duration_ms,
    )


def outbox_mark_delivered(*, message_id: uuid.UUID, note: str = "") -> bool:
    """Every active endpoint has the message. Not fenced on the reservation:
    a success reported late by a relay that outlived its reservation is still
    a success. Returns False when it was already delivered."""
    return bool(
        OutboxMessage.objects.filter(pk=message_id, delivered_at__isnull=True).update(
            delivered_at=ClockTimestamp(), failed_at=None, last_error=note
        )
    )


def outbox_schedule_retry(*, reservation: Reservation, error: str, delay_seconds: float) -> bool:
    """Make the message deliverable again after `delay_seconds` (database
    time). Fenced: False when another reservation has taken over."""
    return bool(_fenced(reservation).update(available_at=_after(delay_seconds), last_error=error))


def outbox_mark_failed(*, reservation: Reservation, error: str) -> bool:
    """Give up after the last attempt; staff can redeliver. Fenced."""
    return bool(_fenced(reservation).update(failed_at=ClockTimestamp(), last_error=error))


def outbox_release(*, reservation: Reservation) -> bool:
    """Give back a reservation the relay did not use (it ran out of time or is
    stopping): deliverable at once, and the unused attempt is not counted."""
    return bool(_fenced(reservation).update(available_at=ClockTimestamp(), attempts=F("attempts") - 1))


def outbox_redeliver(*, message_id: uuid.UUID) -> None:
    """Send a failed message through the relay again with a fresh attempt
    budget. Its delivery history is kept; endpoints that already have it
    are not posted to again."""
    updated = OutboxMessage.objects.filter(pk=message_id, failed_at__isnull=False).update(
        failed_at=None, available_at=ClockTimestamp(), attempts=0
    )
    if not updated:
        row = OutboxMessage.objects.filter(pk=message_id).values("delivered_at").first()
        if row is None:
            raise OutboxMessage.DoesNotExist(f"outbox message {message_id} does not exist")
        raise MessageNotFailed(message_id, "delivered" if row["delivered_at"] else "pending")


def webhook_secret_rotate(*, endpoint_id: int, grace_seconds: float) -> str:
    """Give the endpoint a new secret and return it (to be shown once). The
    previous secret keeps signing, beside the new one, for `grace_seconds`
    (database time), so the receiver can switch without losing a message.
    One UPDATE: the old value moves in the same statement that replaces it."""
    secret = secret_generate()
    updated = WebhookEndpoint.objects.filter(pk=endpoint_id).update(
        previous_secret=F("secret"),
        previous_secret_expires_at=_after(grace_seconds),
        secret=secret,
    )
    if not updated:
        raise WebhookEndpoint.DoesNotExist(f"webhook endpoint {endpoint_id} does not exist")
    return secret


def webhook_secrets_in_use(endpoint: WebhookEndpoint) -> list[str]:
    """The secrets that sign a POST now: the current one, and the previous
    one while its grace period lasts (`previous_valid`, annotated in database
    time by the query that loaded the endpoint)."""
    current = [endpoint.secret]
    if endpoint.previous_secret and getattr(endpoint, "previous_valid", False):
        return current + [endpoint.previous_secret]
    return current
