"""Job kinds. Apps register a handler per kind in their AppConfig.ready();
`jobs` itself knows only the `noop` kind."""

from collections.abc import Callable
from typing import Any

# A handler takes the worker's `JobContext` (jobs.worker). It is typed `Any`
# here so that this module, which the worker imports, imports nothing back.
Handler = Callable[[Any], None]

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
