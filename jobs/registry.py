"""Job kinds. An app registers each of its kinds once, in its
AppConfig.ready(): the handler the worker runs, and what the generic pieces
of `jobs` show of such a job (status fields, items, admin fields, links).
`jobs` itself knows only its diagnostic kinds (`jobs.kinds`) and nothing of
what the apps above it do with their jobs."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# A handler takes the worker's `JobContext` (jobs.worker); the other pieces
# take a `Job`. Typed `Any` here so that this module, which the worker and
# the models' users import, imports nothing back.
Handler = Callable[[Any], None]
JobView = Callable[[Any], Any]


class KindAlreadyRegistered(ImproperlyConfigured):
    """A kind is registered once: a second registration would silently
    replace the handler and the views every job of the kind goes through."""

    def __init__(self, kind: str):
        super().__init__(f"job kind {kind!r} is already registered")
        self.kind = kind


@dataclass(frozen=True)
class JobKind:
    """What a kind brings besides its handler; every piece is optional.

    - ``status_fields(job) -> dict``: members added to the job's status
      resource; a ``links`` member is merged into the generic links.
    - ``items(job)``: the job's items view (`GET /api/jobs/<id>/items`, paged):
      a list, a queryset, or rows read by slices (``len()`` and ``[a:b]``);
      without it the kind has no items and the address is a 404.
    - ``admin_fields``: label -> ``renderer(job) -> str`` (may be safe HTML),
      read-only rows on the job's admin page.
    - ``admin_output(job) -> str``: renders the job's output on its admin
      page (safe HTML); without it the output shows as JSON.
    - ``page_link(job)`` and ``review_link(job)``: the addresses of the job's
      own page and of its review (shown while it waits for one), or None.
    - ``warm_up()``: run once by a worker that runs the kind, as it starts
      and before its first claim (e.g. start a pool of processes), so the
      first job does not wait for it.
    """

    name: str
    handler: Handler
    status_fields: JobView | None = None
    items: JobView | None = None
    admin_fields: Mapping[str, JobView] = field(default_factory=dict)
    admin_output: JobView | None = None
    page_link: JobView | None = None
    review_link: JobView | None = None
    warm_up: Callable[[], None] | None = None


_kinds: dict[str, JobKind] = {}


def register(kind: str, **pieces: Any) -> Callable[[Handler], Handler]:
    """Decorate a kind's handler; keyword arguments are the other pieces of
    `JobKind`. Raises KindAlreadyRegistered for a kind already known."""

    def decorator(handler: Handler) -> Handler:
        if kind in _kinds:
            raise KindAlreadyRegistered(kind)
        _kinds[kind] = JobKind(name=kind, handler=handler, **pieces)
        return handler

    return decorator


def unregister(kind: str) -> None:
    """Forget a kind (tests that register kinds of their own)."""
    _kinds.pop(kind, None)


def get_kind(kind: str) -> JobKind | None:
    return _kinds.get(kind)


def get_handler(kind: str) -> Handler | None:
    registered = _kinds.get(kind)
    return registered.handler if registered is not None else None


def kinds() -> list[str]:
    return sorted(_kinds)
