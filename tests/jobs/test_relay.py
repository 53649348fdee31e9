"""The outbox relay against a local HTTP receiver that verifies signatures
and dedupes by message id, as a real consumer would."""

import hashlib
import hmac
import json
import signal
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connections, transaction
from django.db.models.functions import Now

from jobs.models import OutboxMessage, WebhookEndpoint
from jobs.outbox import (
    NOTE_NO_ENDPOINTS,
    WebhookDelivery,
    outbox_mark_failed,
    outbox_redeliver,
    outbox_reserve_batch,
    outbox_schedule_retry,
)
from jobs.relay import RelayThread, relay_once, retry_delay_seconds
from jobs.webhooks import webhook_signature
from jobs.services import outbox_write
from tests.helpers import wait_for

SECRET = "receiver-secret"


class Receiver:
    """A webhook consumer on 127.0.0.1: records every request, checks its
    signature, applies each message id's effect once, then answers with the
    status it was told to (it can fail after applying, like a consumer that
    crashes before responding, or hold a request open)."""

    def __init__(self, secret: str = SECRET):
        self.secret = secret
        self.requests: list[dict] = []
        self.effects: dict[str, dict] = {}
        self.failures_left = 0
        self.hold_first = False
        self.released = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = receiver.receive(dict(self.headers), body)
                try:
                    self.send_response(status)
                    self.end_headers()
                except OSError:
                    pass  # the relay is gone

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def verify(self, headers: dict, body: bytes) -> bool:
        signed = f"{headers['Webhook-Id']}.{headers['Webhook-Timestamp']}.".encode() + body
        expected = "v1=" + hmac.new(self.secret.encode(), signed, hashlib.sha256).hexdigest()
        fresh = abs(time.time() - int(headers["Webhook-Timestamp"])) < 300
        return fresh and hmac.compare_digest(expected, headers["Webhook-Signature"])

    def receive(self, headers: dict, body: bytes) -> int:
        valid = self.verify(headers, body)
        with self._lock:
            self.requests.append({"headers": headers, "body": body, "valid": valid})
            first = len(self.requests) == 1
            if not valid:
                return 401
            self.effects.setdefault(headers["Webhook-Id"], json.loads(body))
            failing = self.failures_left > 0
            if failing:
                self.failures_left -= 1
        if first and self.hold_first:
            self.released.wait(30)
        return 500 if failing else 200

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def second_receiver():
    r = Receiver(secret="second-secret")
    yield r
    r.close()


def endpoint_for(workspace, receiver, *, active=True):
    return WebhookEndpoint.objects.create(
        workspace=workspace, url=receiver.url, secret=receiver.secret, active=active
    )


def message_in(workspace, topic="job.completed"):
    return outbox_write(workspace_id=workspace.pk, topic=topic, payload={"job_id": "j-1"})


def make_due(message):
    OutboxMessage.objects.filter(pk=message.pk).update(available_at=Now())


def fresh(message):
    return OutboxMessage.objects.get(pk=message.pk)


def test_delivers_a_signed_message_to_the_workspace_endpoint(workspace, receiver):
    endpoint_for(workspace, receiver)
    message = message_in(workspace)

    assert relay_once() == 1

    [request] = receiver.requests
    assert request["valid"]
    assert request["headers"]["Webhook-Id"] == str(message.pk)
    body = json.loads(request["body"])
    assert body == {
        "id": str(message.pk),
        "topic": "job.completed",
        "created_at": fresh(message).created_at.isoformat(),
        "payload": {"job_id": "j-1"},
    }
    assert fresh(message).delivered_at is not None
    delivery = WebhookDelivery.objects.get(message=message)
    assert (delivery.succeeded, delivery.status_code, delivery.attempt) == (True, 200, 1)


def test_signature_changes_with_the_secret_the_timestamp_and_the_body():
    base = webhook_signature(secret="s", message_id="m", timestamp=1, body=b"{}")
    assert base.startswith("v1=")
    assert webhook_signature(secret="t", message_id="m", timestamp=1, body=b"{}") != base
    assert webhook_signature(secret="s", message_id="m", timestamp=2, body=b"{}") != base
    assert webhook_signature(secret="s", message_id="m", timestamp=1, body=b"[]") != base


def test_failing_receiver_gets_retries_with_backoff_and_one_effect(workspace, receiver):
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    receiver.failures_left = 2

    for attempt in (1, 2):
        relay_once()
        row = fresh(message)
        assert row.delivered_at is None
        assert row.attempts == attempt
        assert "HTTP 500" in row.last_error
        # The retry waits for its backoff: nothing is deliverable now.
        assert not OutboxMessage.objects.filter(pk=message.pk, available_at__lte=Now()).exists()
        assert relay_once() == 0
        make_due(message)
    relay_once()

    assert fresh(message).delivered_at is not None
    assert len(receiver.requests) == 3
    assert {r["headers"]["Webhook-Id"] for r in receiver.requests} == {str(message.pk)}
    assert list(receiver.effects) == [str(message.pk)]


def test_backoff_grows_exponentially_within_its_jitter_bounds(settings):
    settings.OUTBOX_BACKOFF_BASE_SECONDS = 10
    settings.OUTBOX_BACKOFF_MAX_SECONDS = 60
    for _ in range(50):
        assert 5 <= retry_delay_seconds(1) <= 10
        assert 20 <= retry_delay_seconds(3) <= 40
        assert 30 <= retry_delay_seconds(9) <= 60


def test_message_fails_after_the_last_attempt_and_redeliver_sends_it_again(workspace, receiver, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    receiver.failures_left = 2

    relay_once()
    make_due(message)
    relay_once()

    row = fresh(message)
    assert row.failed_at is not None and row.delivered_at is None
    assert row.last_error.startswith("gave up after 2 attempts")
    make_due(message)
    assert relay_once() == 0

    outbox_redeliver(message_id=message.pk)
    relay_once()

    row = fresh(message)
    assert row.delivered_at is not None and row.failed_at is None
    assert len(receiver.requests) == 3
    assert WebhookDelivery.objects.filter(message=message).count() == 3


def test_message_without_an_active_endpoint_is_marked_delivered_with_a_note(workspace, receiver):
    endpoint_for(workspace, receiver, active=False)
    message = message_in(workspace)

    relay_once()

    row = fresh(message)
    assert row.delivered_at is not None
    assert row.last_error == NOTE_NO_ENDPOINTS
    assert receiver.requests == []


def test_endpoints_of_other_workspaces_get_nothing(workspace, other_workspace, receiver):
    endpoint_for(other_workspace, receiver)
    message_in(workspace)

    relay_once()

    assert receiver.requests == []


def test_retry_posts_only_to_endpoints_that_lack_the_message(workspace, receiver, second_receiver):
    endpoint_for(workspace, receiver)
    endpoint_for(workspace, second_receiver)
    message = message_in(workspace)
    second_receiver.failures_left = 1

    relay_once()
    assert fresh(message).delivered_at is None
    make_due(message)
    relay_once()

    assert fresh(message).delivered_at is not None
    assert len(receiver.requests) == 1
    assert len(second_receiver.requests) == 2
    assert all(r["valid"] for r in receiver.requests + second_receiver.requests)


def test_timeout_counts_as_a_failed_attempt(workspace, receiver, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    receiver.hold_first = True
    endpoint_for(workspace, receiver)
    message = message_in(workspace)

    relay_once()

    row = fresh(message)
    assert row.delivered_at is None and row.attempts == 1
    assert row.last_error.endswith(": timeout")


def test_reserved_message_is_hidden_until_its_visibility_timeout(workspace):
    message = message_in(workspace)

    [first] = outbox_reserve_batch(batch_size=10, visibility_seconds=60)
    assert outbox_reserve_batch(batch_size=10, visibility_seconds=60) == []
    make_due(message)
    [second] = outbox_reserve_batch(batch_size=10, visibility_seconds=60)

    assert (first.message_id, first.attempt) == (message.pk, 1)
    assert (second.message_id, second.attempt) == (message.pk, 2)


def test_a_reservation_taken_over_cannot_reschedule_or_fail_the_message(workspace):
    message = message_in(workspace)
    [stale] = outbox_reserve_batch(batch_size=1, visibility_seconds=60)
    make_due(message)
    [current] = outbox_reserve_batch(batch_size=1, visibility_seconds=60)

    assert outbox_schedule_retry(reservation=stale, error="late", delay_seconds=0) is False
    assert outbox_mark_failed(reservation=stale, error="late") is False
    row = fresh(message)
    assert (row.available_at, row.failed_at, row.last_error) == (current.reserved_until, None, "")


def test_reservations_come_in_batches_of_the_asked_size(workspace):
    for _ in range(5):
        message_in(workspace)

    assert len(outbox_reserve_batch(batch_size=2, visibility_seconds=60)) == 2
    assert len(outbox_reserve_batch(batch_size=10, visibility_seconds=60)) == 3


@pytest.mark.django_db(transaction=True)
def test_reservation_skips_a_message_another_relay_has_locked(workspace):
    locked_message = message_in(workspace)
    free_message = message_in(workspace)
    locked = threading.Event()
    release = threading.Event()

    def other_relay_holding_a_row_lock():
        try:
            with transaction.atomic():
                OutboxMessage.objects.select_for_update().get(pk=locked_message.pk)
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_relay_holding_a_row_lock)
    thread.start()
    assert locked.wait(10)
    started = time.monotonic()
    reserved = outbox_reserve_batch(batch_size=10, visibility_seconds=60)
    waited = time.monotonic() - started
    release.set()
    thread.join()

    assert [r.message_id for r in reserved] == [free_message.pk]
    assert waited < 5


@pytest.mark.django_db(transaction=True)
def test_message_written_in_a_rolled_back_transaction_is_never_delivered(workspace, receiver):
    endpoint_for(workspace, receiver)

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        outbox_write(workspace_id=workspace.pk, topic="job.completed", payload={"x": 1})
        raise Abort

    assert relay_once() == 0
    assert receiver.requests == []
    assert OutboxMessage.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_relay_thread_delivers_until_stopped(workspace, receiver):
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    stop = threading.Event()
    thread = RelayThread(stop)
    thread.start()
    try:
        wait_for(
            lambda: OutboxMessage.objects.filter(pk=message.pk, delivered_at__isnull=False).exists(),
            timeout=10,
            message="the relay thread to deliver",
        )
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert len(receiver.requests) == 1


@pytest.mark.processes
def test_relay_killed_mid_post_redelivers_after_visibility_timeout(workspace, receiver, processes):
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    receiver.hold_first = True

    relay = processes.start("relayoutbox", OUTBOX_VISIBILITY_SECONDS=1)
    wait_for(lambda: receiver.requests, timeout=30, message="the relay's first POST")
    relay.send_signal(signal.SIGKILL)
    relay.wait(10)
    receiver.released.set()

    row = fresh(message)
    assert row.delivered_at is None and row.attempts == 1
    wait_for(
        lambda: OutboxMessage.objects.filter(pk=message.pk, available_at__lte=Now()).exists(),
        timeout=10,
        message="the reservation to time out",
    )
    again = processes.start("relayoutbox", "--burst", OUTBOX_VISIBILITY_SECONDS=1)
    assert again.wait(30) == 0, processes.output(again)

    row = fresh(message)
    assert row.delivered_at is not None and row.attempts == 2
    assert [r["headers"]["Webhook-Id"] for r in receiver.requests] == [str(message.pk)] * 2
    assert all(r["valid"] for r in receiver.requests)
    assert list(receiver.effects) == [str(message.pk)]


@pytest.mark.processes
def test_relayoutbox_stops_gracefully_on_sigterm(workspace, receiver, processes):
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    relay = processes.start("relayoutbox")
    wait_for(
        lambda: OutboxMessage.objects.filter(pk=message.pk, delivered_at__isnull=False).exists(),
        timeout=30,
        message="the relay to deliver",
    )

    relay.send_signal(signal.SIGTERM)

    assert relay.wait(15) == 0, processes.output(relay)
    assert "outbox relay stopped" in processes.output(relay)


def test_retry_schedule_is_in_database_time(workspace, receiver, settings):
    settings.OUTBOX_BACKOFF_BASE_SECONDS = 100
    endpoint_for(workspace, receiver)
    message = message_in(workspace)
    receiver.failures_left = 1

    relay_once()

    assert OutboxMessage.objects.filter(
        pk=message.pk,
        available_at__gt=Now() + timedelta(seconds=49),
        available_at__lt=Now() + timedelta(seconds=101),
    ).exists()


def test_the_webhook_timestamp_is_database_time_not_the_relays_clock(workspace, receiver):
    import dataclasses

    from jobs.relay import Dispatcher

    endpoint_for(workspace, receiver)
    message_in(workspace)
    [reservation] = outbox_reserve_batch(batch_size=1, visibility_seconds=60)
    # As if the database's clock were 10 minutes ahead of this process's.
    ahead = dataclasses.replace(
        reservation, reserved_until=reservation.reserved_until + timedelta(minutes=10)
    )
    dispatcher = Dispatcher()
    try:
        dispatcher.submit(ahead)
    finally:
        dispatcher.close()
    [request] = receiver.requests
    assert abs(int(request["headers"]["Webhook-Timestamp"]) - (time.time() + 600)) < 30
