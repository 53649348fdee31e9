"""Webhook endpoints as an outbound-request policy: URLs, addresses,
connections, what failures record, generated and rotated secrets, and
endpoints isolated from each other.

Only 127.0.0.1 is ever connected to. Refusals of private and link-local
targets are shown with a stub resolver (a patched `socket.getaddrinfo`) and
a `socket.create_connection` that fails the test if it is called."""

import hashlib
import hmac
import ipaddress
import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.admin import helpers
from django.contrib.messages import get_messages
from django.core.exceptions import ValidationError
from django.db.models.functions import Now

from jobs import webhooks
from jobs.models import OutboxMessage, WebhookEndpoint
from jobs.outbox import WebhookDelivery, webhook_secret_rotate
from jobs.relay import RelayThread, relay_once
from jobs.services import outbox_write
from jobs.webhooks import address_is_public, target_vet, url_problem
from tests.helpers import free_port, wait_for
from tests.jobs.test_relay import Receiver

NOT_PUBLIC = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "100.64.0.1",
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    "::1",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::",
    # IPv6 forms that carry a private IPv4 address: NAT64, 6to4,
    # IPv4-compatible, Teredo (client 10.0.0.1, obfuscated).
    "64:ff9b::127.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b:1::a00:1",
    "2002:a00:1::1",
    "2002:7f00:1::",
    "::10.0.0.1",
    "::169.254.169.254",
    "2001:0:5db8:d1f8:0:f227:f5ff:fffe",
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"]


@pytest.fixture
def strict(settings):
    settings.WEBHOOK_ALLOW_INSECURE = False
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False


@pytest.fixture
def resolver(monkeypatch):
    """A stub DNS: host name -> addresses. Nothing else resolves."""
    table: dict[str, list[str]] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        try:
            addresses = [str(ipaddress.ip_address(host))]  # a literal resolves to itself
        except ValueError:
            if host not in table:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            addresses = table[host]
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    monkeypatch.setattr(webhooks.socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.fixture
def no_connections(monkeypatch):
    """Fail the test if anything tries to connect anywhere."""
    attempts = []

    def create_connection(address, *args, **kwargs):
        attempts.append(address)
        raise AssertionError(f"a connection to {address} was attempted")

    monkeypatch.setattr(webhooks.socket, "create_connection", create_connection)
    return attempts


def message_in(workspace):
    return outbox_write(workspace_id=workspace.pk, topic="job.completed", payload={"job_id": "j"})


# --- the policy, pure ------------------------------------------------------------------


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_non_public_addresses_are_refused(address):
    assert address_is_public(address) is False


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address):
    assert address_is_public(address) is True


@pytest.mark.parametrize(
    "url, insecure, problem",
    [
        ("ftp://hooks.example.com/x", True, "https or http"),
        ("http://hooks.example.com/x", False, "must use https"),
        ("https://user:pw@hooks.example.com/x", False, "credentials"),
        ("https:///x", False, "no host"),
    ],
)
def test_url_form_problems(url, insecure, problem):
    assert problem in url_problem(url, allow_insecure=insecure)


def test_https_url_has_no_form_problem():
    assert url_problem("https://hooks.example.com/pricesheet", allow_insecure=False) is None


# --- when the endpoint is saved -----------------------------------------------------------


@pytest.mark.parametrize(
    "addresses",
    [["10.0.0.7"], ["169.254.169.254"], ["127.0.0.1"], ["93.184.216.34", "10.0.0.7"], ["fe80::1"]],
)
def test_saving_an_endpoint_refuses_hosts_resolving_to_non_public_addresses(
    workspace, strict, resolver, no_connections, addresses
):
    resolver["hooks.example.com"] = addresses
    endpoint = WebhookEndpoint(workspace=workspace, url="https://hooks.example.com/x")
    with pytest.raises(ValidationError) as info:
        endpoint.full_clean()
    assert "not public" in str(info.value.message_dict["url"])
    assert no_connections == []


def test_saving_an_endpoint_refuses_an_unresolvable_host(workspace, strict, resolver):
    endpoint = WebhookEndpoint(workspace=workspace, url="https://nowhere.example.com/x")
    with pytest.raises(ValidationError, match="does not resolve"):
        endpoint.full_clean()


def test_saving_an_endpoint_accepts_a_public_https_host(workspace, strict, resolver):
    resolver["hooks.example.com"] = ["93.184.216.34"]
    WebhookEndpoint(workspace=workspace, url="https://hooks.example.com/x").full_clean()


def test_private_targets_are_allowed_when_the_setting_says_so(workspace, settings, resolver):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    settings.WEBHOOK_ALLOW_INSECURE = False
    resolver["receiver.internal"] = ["10.0.0.7"]
    assert target_vet("https://receiver.internal/x").address == "10.0.0.7"


def test_admin_form_refuses_a_link_local_url(
    client, workspace, strict, resolver, no_connections, django_user_model
):
    client.force_login(django_user_model.objects.create_superuser("root"))
    resolver["metadata.example.com"] = ["169.254.169.254"]
    response = client.post(
        "/admin/jobs/webhookendpoint/add/",
        {"workspace": workspace.pk, "url": "https://metadata.example.com/latest", "active": "on"},
    )
    assert response.status_code == 200
    assert "not public" in str(response.context["adminform"].form.errors["url"])
    assert not WebhookEndpoint.objects.exists()
    assert no_connections == []


# --- at connection time --------------------------------------------------------------------


def test_delivery_to_a_host_now_resolving_to_a_private_address_is_refused_without_connecting(
    workspace, strict, resolver, no_connections
):
    # Vetted when saved; its DNS answer has changed since.
    resolver["hooks.example.com"] = ["10.0.0.7"]
    WebhookEndpoint.objects.create(workspace=workspace, url="https://hooks.example.com/x")
    message = message_in(workspace)

    relay_once()

    delivery = WebhookDelivery.objects.get(message=message)
    assert (delivery.succeeded, delivery.status_code, delivery.error) == (False, None, "refused")
    assert OutboxMessage.objects.get(pk=message.pk).last_error == "https://hooks.example.com/x: refused"
    assert no_connections == []


def test_delivery_connects_to_the_vetted_address_with_the_configured_host(workspace, settings, resolver):
    receiver = Receiver()
    try:
        port = receiver.server.server_address[1]
        resolver["hooks.example.test"] = ["127.0.0.1"]
        endpoint = WebhookEndpoint.objects.create(
            workspace=workspace, url=f"http://hooks.example.test:{port}/hook", secret=receiver.secret
        )
        message_in(workspace)

        relay_once()

        [request] = receiver.requests
        assert request["valid"]
        assert request["headers"]["Host"] == f"hooks.example.test:{port}"
        assert WebhookDelivery.objects.get(endpoint=endpoint).succeeded
    finally:
        receiver.close()


class _Redirecting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self):
        self.hits.append(self.path)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(307)
        self.send_header("Location", "/elsewhere")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args):
        pass


def test_redirects_are_not_followed_and_record_only_the_status(workspace):
    _Redirecting.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        WebhookEndpoint.objects.create(
            workspace=workspace, url=f"http://127.0.0.1:{server.server_address[1]}/hook"
        )
        message = message_in(workspace)
        relay_once()
    finally:
        server.shutdown()
        server.server_close()
    assert _Redirecting.hits == ["/hook"]
    delivery = WebhookDelivery.objects.get(message=message)
    assert (delivery.status_code, delivery.error) == (307, "HTTP 307")


def test_a_closed_port_records_only_refused(workspace):
    url = f"http://127.0.0.1:{free_port()}/hook"
    WebhookEndpoint.objects.create(workspace=workspace, url=url)
    message = message_in(workspace)
    relay_once()
    assert WebhookDelivery.objects.get(message=message).error == "refused"
    assert OutboxMessage.objects.get(pk=message.pk).last_error == f"{url}: refused"


# --- secrets -----------------------------------------------------------------------------


def signatures_verify(secret: str, headers: dict, body: bytes) -> bool:
    signed = f"{headers['Webhook-Id']}.{headers['Webhook-Timestamp']}.".encode() + body
    expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, sig) for sig in headers["Webhook-Signature"].split())


def test_a_new_endpoint_gets_a_generated_secret(workspace):
    first = WebhookEndpoint.objects.create(workspace=workspace, url="https://a.example.com/")
    second = WebhookEndpoint.objects.create(workspace=workspace, url="https://b.example.com/")
    assert first.secret.startswith("whsec_") and len(first.secret) >= 40
    assert first.secret != second.secret


def test_admin_shows_the_secret_once_then_masked(client, workspace, resolver, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root"))
    resolver["hooks.example.com"] = ["93.184.216.34"]
    add_page = client.get("/admin/jobs/webhookendpoint/add/").content.decode()
    assert 'name="secret"' not in add_page  # never typed in

    response = client.post(
        "/admin/jobs/webhookendpoint/add/",
        {"workspace": workspace.pk, "url": "https://hooks.example.com/x", "active": "on"},
        follow=True,
    )

    endpoint = WebhookEndpoint.objects.get()
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(endpoint.secret in m for m in shown)
    change_page = client.get(f"/admin/jobs/webhookendpoint/{endpoint.pk}/change/").content.decode()
    list_page = client.get("/admin/jobs/webhookendpoint/").content.decode()
    assert endpoint.secret not in change_page and endpoint.secret not in list_page
    assert endpoint.secret[-4:] in change_page


def test_admin_rotation_shows_the_new_secret_once(client, workspace, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root"))
    endpoint = WebhookEndpoint.objects.create(workspace=workspace, url="https://a.example.com/")
    old = endpoint.secret

    response = client.post(
        "/admin/jobs/webhookendpoint/",
        {"action": "rotate_secret", helpers.ACTION_CHECKBOX_NAME: [str(endpoint.pk)]},
        follow=True,
    )

    endpoint.refresh_from_db()
    assert endpoint.secret != old and endpoint.previous_secret == old
    assert any(endpoint.secret in str(m) for m in get_messages(response.wsgi_request))


def test_rotation_signs_with_both_secrets_during_the_grace_period_only(workspace):
    receiver = Receiver()
    try:
        endpoint = WebhookEndpoint.objects.create(
            workspace=workspace, url=receiver.url, secret="whsec_the-old-secret-value-0000"
        )
        new = webhook_secret_rotate(endpoint_id=endpoint.pk, grace_seconds=3600)
        message_in(workspace)
        relay_once()
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            previous_secret_expires_at=Now() - timedelta(seconds=1)
        )
        message_in(workspace)
        relay_once()
    finally:
        receiver.close()

    during, after = receiver.requests
    assert len(during["headers"]["Webhook-Signature"].split()) == 2
    assert signatures_verify(new, during["headers"], during["body"])
    assert signatures_verify("whsec_the-old-secret-value-0000", during["headers"], during["body"])
    assert len(after["headers"]["Webhook-Signature"].split()) == 1
    assert signatures_verify(new, after["headers"], after["body"])
    assert not signatures_verify("whsec_the-old-secret-value-0000", after["headers"], after["body"])


# --- isolation --------------------------------------------------------------------------------


@pytest.fixture
def slow():
    receiver = Receiver()
    receiver.hold_first = True  # holds its first request until released
    yield receiver
    receiver.close()


@pytest.fixture
def fast():
    receiver = Receiver()
    yield receiver
    receiver.close()


def delivered(message) -> bool:
    return OutboxMessage.objects.filter(pk=message.pk, delivered_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_delay_another_workspaces_messages(
    workspace, other_workspace, slow, fast, settings
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 30  # the slow endpoint cannot time out during the test
    settings.OUTBOX_VISIBILITY_SECONDS = 120
    WebhookEndpoint.objects.create(workspace=workspace, url=slow.url, secret=slow.secret)
    WebhookEndpoint.objects.create(workspace=other_workspace, url=fast.url, secret=fast.secret)
    held = message_in(workspace)
    stop = threading.Event()
    relay = RelayThread(stop)
    relay.start()
    try:
        wait_for(lambda: slow.requests, timeout=15, message="the slow endpoint's first POST")
        others = [message_in(other_workspace) for _ in range(3)]
        wait_for(
            lambda: all(delivered(m) for m in others),
            timeout=15,
            message="the other workspace's messages, while the slow POST is held",
        )
        assert not delivered(held) and not slow.released.is_set()
        slow.released.set()
        wait_for(lambda: delivered(held), timeout=15, message="the held message")
    finally:
        slow.released.set()
        stop.set()
        relay.join(30)
    assert not relay.is_alive()
    assert len(fast.requests) == 3 and all(r["valid"] for r in fast.requests)


@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_delay_the_same_message_to_another_endpoint(workspace, slow, fast, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 30
    settings.OUTBOX_VISIBILITY_SECONDS = 120
    WebhookEndpoint.objects.create(workspace=workspace, url=slow.url, secret=slow.secret)
    WebhookEndpoint.objects.create(workspace=workspace, url=fast.url, secret=fast.secret)
    message = message_in(workspace)
    stop = threading.Event()
    relay = RelayThread(stop)
    relay.start()
    try:
        wait_for(
            lambda: slow.requests and fast.requests,
            timeout=15,
            message="both endpoints to receive the message, one of them held",
        )
        assert not slow.released.is_set()
        slow.released.set()
        wait_for(lambda: delivered(message), timeout=15, message="the message to be delivered")
    finally:
        slow.released.set()
        stop.set()
        relay.join(30)
    assert [r["headers"]["Webhook-Id"] for r in fast.requests] == [str(message.pk)]


def test_an_endpoint_that_times_out_is_not_retried_for_the_rest_of_the_batch(workspace, slow, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    WebhookEndpoint.objects.create(workspace=workspace, url=slow.url, secret=slow.secret)
    messages = [message_in(workspace) for _ in range(3)]

    assert relay_once() == 3

    assert len(slow.requests) == 1  # one timeout, not three
    rows = OutboxMessage.objects.filter(pk__in=[m.pk for m in messages])
    assert [(row.last_error, row.attempts, row.delivered_at) for row in rows] == [
        (f"{slow.url}: timeout", 1, None)
    ] * 3
    # All three back off before the endpoint is tried again.
    assert relay_once() == 0
