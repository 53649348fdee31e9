"""Job kinds. Apps register a handler per kind in their AppConfig.ready();
`jobs` itself knows only the `noop` kind."""

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobs.worker import JobContext

Handler = Callable[["JobContext"], None]

_handlers: dict[str, Handler] = {}


def register(kind: str) -> Callable[[Handler], Handler]:
    def decorator(handler: Handler) -> Handler:
        _handlers[kind] = handler
        return handler

    return decorator


def get_handler(kind: str) -> Handler | None:
    return _handlers.get(kind)


def kinds() -> list[str]:
    return sorted(_handlers)
