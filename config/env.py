"""Typed reads of the environment for `config/settings.py`, the one module
that reads it. A value that does not parse, or is out of its range, stops
the start with an error that names the variable and says what it takes:
django-environ alone reads `JOB_NOTIFY=maybe` as false and `12s` as 12.

Each read is recorded (`Environment.names`), so a test can hold the
README's table of settings to what the settings read."""

from __future__ import annotations

import math
import os

import environ
from django.core.exceptions import ImproperlyConfigured

MSG_NOT_INT = "{name}={raw!r} is not a whole number"
MSG_NOT_NUMBER = "{name}={raw!r} is not a number"
MSG_NOT_BOOL = "{name}={raw!r} is not true or false (true, 1, yes, on / false, 0, no, off)"
MSG_BELOW = "{name}={raw!r} must be at least {minimum:g}"
MSG_NOT_ABOVE = "{name}={raw!r} must be more than {above:g}"
MSG_UNSET = "{name} must be set"
MSG_CHOICE = "{name}={raw!r} must be one of: {choices}"

TRUE = frozenset({"true", "1", "yes", "y", "on", "ok"})
FALSE = frozenset({"false", "0", "no", "n", "off"})


class Environment:
    """The process environment (and a `.env` file), read by name and type."""

    def __init__(self, dotenv=None):
        if dotenv is not None:
            environ.Env.read_env(dotenv, overwrite=False)
        self._env = environ.Env()
        self.names: list[str] = []

    def _raw(self, name: str) -> str | None:
        """The text set for ``name``; None when unset. For numbers and
        switches an empty value counts as unset (`X=` in a compose file)."""
        self.names.append(name)
        return os.environ.get(name)

    def is_set(self, name: str) -> bool:
        return self._raw(name) is not None

    def str(self, name: str, default: str | None = None, *, choices: tuple[str, ...] = ()) -> str:
        """The text of ``name``; without a ``default`` it must be set."""
        raw = self._raw(name)
        if raw is None and default is None:
            raise ImproperlyConfigured(MSG_UNSET.format(name=name))
        value = default if raw is None else self._env.str(name)
        if choices and value not in choices:
            raise ImproperlyConfigured(MSG_CHOICE.format(name=name, raw=value, choices=", ".join(choices)))
        return value

    def list(self, name: str, default: list[str]) -> list[str]:
        return default if self._raw(name) is None else self._env.list(name)

    def bool(self, name: str, default: bool) -> bool:
        raw = self._raw(name)
        if raw is None or not raw.strip():
            return default
        word = raw.strip().lower()
        if word not in TRUE | FALSE:
            raise ImproperlyConfigured(MSG_NOT_BOOL.format(name=name, raw=raw))
        return word in TRUE

    def int(self, name: str, default: int, *, minimum: int | None = None) -> int:
        raw = self._raw(name)
        if raw is None or not raw.strip():
            return default
        try:
            value = int(raw.strip())
        except ValueError:
            raise ImproperlyConfigured(MSG_NOT_INT.format(name=name, raw=raw)) from None
        _check_range(name, raw, value, minimum=minimum, above=None)
        return value

    def float(
        self, name: str, default: float, *, minimum: float | None = None, above: float | None = None
    ) -> float:
        raw = self._raw(name)
        if raw is None or not raw.strip():
            return default
        try:
            value = float(raw.strip())
        except ValueError:
            raise ImproperlyConfigured(MSG_NOT_NUMBER.format(name=name, raw=raw)) from None
        if not math.isfinite(value):
            raise ImproperlyConfigured(MSG_NOT_NUMBER.format(name=name, raw=raw))
        _check_range(name, raw, value, minimum=minimum, above=above)
        return value

    def db_url_config(self, url: str) -> dict:
        return self._env.db_url_config(url)


def _check_range(name: str, raw: str, value: float, *, minimum: float | None, above: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(MSG_BELOW.format(name=name, raw=raw, minimum=minimum))
    if above is not None and value <= above:
        raise ImproperlyConfigured(MSG_NOT_ABOVE.format(name=name, raw=raw, above=above))
