"""Webhook endpoints as an outbound-request policy: which URLs may be
configured, which addresses may be reached, how a POST is made and signed.

A webhook URL is chosen by a workspace admin, so it is untrusted: it could
point the relay at the service's own network (loopback, a private range, the
cloud metadata address). Only `https` is allowed (`WEBHOOK_ALLOW_INSECURE`
lets `http` through for development), and the host must resolve only to
public addresses (`WEBHOOK_ALLOW_PRIVATE_NETWORKS` lifts that for local
receivers). The check runs when the endpoint is saved and again for every
POST, which connects to the address just vetted (a second lookup could
answer differently) and never follows a redirect.

What a failed POST records says only "refused", "timeout" or the HTTP
status: no detail that would map the network behind the endpoint.
"""

import hashlib
import hmac
import http.client
import ipaddress
import secrets
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

USER_AGENT = f"{settings.JOBS_PRODUCT.capitalize()}-Webhooks/1"
SIGNATURE_VERSION = "v1"
SECRET_PREFIX = "whsec_"

MSG_SCHEME = "Webhook URLs must use https."
MSG_SCHEME_INSECURE = "Webhook URLs must use https or http."
MSG_NO_HOST = "The webhook URL has no host name."
MSG_USERINFO = "Put credentials in the receiver's check of the signature, not in the URL."
MSG_UNRESOLVED = "The host name {host} does not resolve."
MSG_PRIVATE = (
    "{host} resolves to an address that is not public (loopback, private, link-local, "
    "multicast or reserved); webhooks are only sent to public addresses."
)

REFUSED = "refused"
TIMEOUT = "timeout"


class EndpointRefused(Exception):
    """The URL or the addresses its host resolves to are not allowed."""


@dataclass(frozen=True)
class Target:
    """A vetted URL: where to connect (an address that passed the policy)
    and what to ask for there."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


@dataclass(frozen=True)
class PostResult:
    status_code: int | None
    error: str  # "", "refused", "timeout" or "HTTP <status>"
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


# --- secrets and signatures ---------------------------------------------------------------


def secret_generate() -> str:
    """A new signing secret: 256 random bits."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def secret_masked(secret: str) -> str:
    """What staff see after creation: enough to tell two secrets apart."""
    if not secret:
        return ""
    return f"{secret[: len(SECRET_PREFIX)]}…{secret[-4:]}" if len(secret) > 12 else "…"


def webhook_signature(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


def webhook_signatures(*, secrets_in_use: list[str], message_id: str, timestamp: int, body: bytes) -> str:
    """`v1=<current> v1=<previous>`: during a rotation's grace period a
    receiver that still holds the previous secret verifies too."""
    return " ".join(
        webhook_signature(secret=secret, message_id=message_id, timestamp=timestamp, body=body)
        for secret in secrets_in_use
    )


# --- the address policy -----------------------------------------------------------------


NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, by which traffic to it
    reaches an IPv4 host: IPv4-mapped, IPv4-compatible (::a.b.c.d), NAT64
    (64:ff9b::/96 and the local-use 64:ff9b:1::/48, last 32 bits), 6to4
    (2002::/16) and Teredo (2001::/32: server and client)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    last32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in IPV4_COMPATIBLE and int(ip) > 1:  # not :: or ::1
        return [last32]
    if any(ip in network for network in NAT64):
        return [last32]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def address_is_public(address: str) -> bool:
    """False for loopback, private, link-local, multicast, reserved,
    unspecified and shared (CGNAT) addresses, also when an IPv6 address
    carries one of them as its IPv4 part (see `embedded_ipv4`): such an
    address is judged by the IPv4 address it reaches."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(v4.is_global and not v4.is_multicast for v4 in embedded)
    return ip.is_global and not ip.is_multicast


def url_problem(url: str, *, allow_insecure: bool) -> str | None:
    """What is wrong with the URL's form, or None (no network access)."""
    parts = urlsplit(url)
    allowed = ("https", "http") if allow_insecure else ("https",)
    if parts.scheme not in allowed:
        return MSG_SCHEME_INSECURE if allow_insecure else MSG_SCHEME
    if not parts.hostname:
        return MSG_NO_HOST
    if parts.username or parts.password:
        return MSG_USERINFO
    return None


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to (through `socket.getaddrinfo`)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def target_vet(url: str) -> Target:
    """Check the URL and resolve its host; raise EndpointRefused with a
    reason staff can act on. Any non-public address refuses the host: an
    attacker who controls DNS would otherwise mix one in."""
    problem = url_problem(url, allow_insecure=settings.WEBHOOK_ALLOW_INSECURE)
    if problem:
        raise EndpointRefused(problem)
    parts = urlsplit(url)
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise EndpointRefused(f"The webhook URL has an invalid port: {exc}") from None
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        raise EndpointRefused(MSG_UNRESOLVED.format(host=host))
    if not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS and not all(map(address_is_public, addresses)):
        raise EndpointRefused(MSG_PRIVATE.format(host=host))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme=parts.scheme, host=host, port=port, path=path, address=addresses[0])


# --- the POST -----------------------------------------------------------------------------


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the vetted address; Host names the configured host."""

    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to the vetted address; TLS verifies the configured host name
    (SNI and certificate), so pinning the address weakens nothing."""

    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def webhook_post(
    *,
    url: str,
    secrets_in_use: list[str],
    message_id: str,
    body: bytes,
    timeout: float,
    timestamp: int | None = None,
) -> PostResult:
    """POST one signed message. http.client follows no redirect: a 3xx is a
    failed delivery like any other non-2xx status. ``timestamp`` (Unix
    seconds, the relay passes database time) defaults to this clock's."""
    started = time.monotonic()

    def result(status: int | None, error: str) -> PostResult:
        return PostResult(
            status_code=status, error=error, duration_ms=int((time.monotonic() - started) * 1000)
        )

    try:
        target = target_vet(url)
    except EndpointRefused:
        return result(None, REFUSED)
    if timestamp is None:
        timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Webhook-Id": message_id,
        "Webhook-Timestamp": str(timestamp),
        "Webhook-Signature": webhook_signatures(
            secrets_in_use=secrets_in_use, message_id=message_id, timestamp=timestamp, body=body
        ),
    }
    cls = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    conn = cls(target, timeout)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read(4096)
        status = response.status
    except TimeoutError:
        return result(None, TIMEOUT)
    except (OSError, http.client.HTTPException, ValueError):
        return result(None, REFUSED)
    finally:
        conn.close()
    return result(status, "" if 200 <= status < 300 else f"HTTP {status}")
