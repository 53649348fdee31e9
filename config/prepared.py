"""A cursor whose statements are prepared on their connection.

The few statements every request runs (the token lookup, the upload's
target, the admission's insert, the wake-up, a job's status) are planned
once per connection instead of on every run: planning was most of
PostgreSQL's time for them (bench/RESULTS.md, sections 17 and 21).
Everything else keeps Django's client-side binding, where nothing is
prepared. `PreparedQuery` runs a queryset this way, compiled once.

The cursor is Django's own wrapper around a server-binding psycopg
cursor, so query logging, `execute_wrapper` and database error
translation see these statements like any other. With
`DATABASE_PREPARED_STATEMENTS=false` (a transaction-mode connection pooler
that cannot keep a session's prepared statements) they are run unprepared,
still with server-side binding.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable

# psycopg prepares only on a connection with a threshold, and Django sets
# none. It is set only while one of these statements runs: with a threshold
# in place, psycopg would also count every other statement by its text,
# keeping up to a hundred of them (a checkpoint's or an accept's megabytes
# among them) in the worker's memory.
_THRESHOLD = 2**31 - 1


class _PreparingCursor(ServerBindingCursor):
    def execute(self, query, params=None, *, prepare=None, binary=None):
        if not settings.DATABASE_PREPARED_STATEMENTS:
            return super().execute(query, params, prepare=False, binary=binary)
        # psycopg keeps the statement prepared per connection, keyed by its
        # text and its parameters' types, and forgets them all at a rollback.
        self.connection.prepare_threshold = _THRESHOLD
        try:
            return super().execute(query, params, prepare=True, binary=binary)
        finally:
            self.connection.prepare_threshold = None

    def _send_query_prepared(self, name, pgq, *, binary=None):
        # psycopg keeps the statement it ran only when it sends its text; Django's
        # query log (last_executed_query) reads it, so keep it here too.
        self._query = pgq
        return super()._send_query_prepared(name, pgq, binary=binary)


def prepared_cursor(using: str = DEFAULT_DB_ALIAS):
    """A cursor (a context manager, as `connection.cursor()`) whose
    statements use server-side binding and are prepared at their first run.
    Write its statements for server-side binding: `%s` parameters only where
    a value may stand (not in `OFFSET` arithmetic or identifiers)."""
    wrapper = connections[using]
    wrapper.close_if_health_check_failed()
    wrapper.ensure_connection()
    with wrapper.wrap_database_errors:
        cursor = _PreparingCursor(wrapper.connection)
    wrapper.validate_thread_sharing()
    return wrapper.make_debug_cursor(cursor) if wrapper.queries_logged else wrapper.make_cursor(cursor)


@dataclass(frozen=True)
class _Plan:
    sql: str
    slots: tuple[tuple[str | None, Any], ...]  # per parameter: a probe's name, or the constant
    model: type[Model]
    start: int
    end: int
    attnames: list[str]
    annotations: dict[str, int]
    converters: list
    using: str


class PreparedQuery:
    """A queryset compiled once into a statement prepared on each connection.

    `build(**probes)` makes the queryset; each probe is a value that stands
    for one parameter (a user's id, a job's id), found again among the
    compiled statement's parameters. `first(**values)` runs the statement
    with the values in the probes' places and makes the instance of the
    first row it returns (so order the queryset, or let it match one row),
    with its annotations, as the queryset would: compiling the queryset
    cost more CPU than running it, on reads every client polls.

    Only querysets of one model's instances (no `select_related`, no
    `values()`); a probe must be a value no constant of the query equals."""

    def __init__(self, build: Callable[..., QuerySet], **probes: Any):
        self._build = build
        self._probes = probes

    @functools.cached_property
    def _plan(self) -> _Plan:
        queryset = self._build(**self._probes)
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        klass_info = compiler.klass_info
        if (
            queryset._iterable_class is not ModelIterable
            or klass_info is None
            or klass_info.get("related_klass_infos")
        ):
            raise ImproperlyConfigured("PreparedQuery runs querysets of one model's instances only")
        slots = []
        for value in params:
            names = [name for name, probe in self._probes.items() if _same(value, probe)]
            slots.append((names[0], None) if names else (None, value))
        unused = set(self._probes) - {name for name, _ in slots}
        if unused:
            raise ImproperlyConfigured(f"the query has no parameter for {', '.join(sorted(unused))}")
        fields = klass_info["select_fields"]
        columns = [column for column, _, _ in compiler.select[: compiler.col_count]]
        return _Plan(
            sql=sql,
            slots=tuple(slots),
            model=klass_info["model"],
            start=fields[0],
            end=fields[-1] + 1,
            attnames=[column.target.attname for column, _, _ in compiler.select[fields[0] : fields[-1] + 1]],
            annotations=dict(compiler.annotation_col_map or {}),
            converters=list(compiler.get_converters(columns).items()),
            using=queryset.db,
        )

    def first(self, **values: Any) -> Model | None:
        plan = self._plan
        params = [values[name] if name else constant for name, constant in plan.slots]
        with prepared_cursor(plan.using) as cursor:
            cursor.execute(plan.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        row = list(row)
        connection = connections[plan.using]
        for position, (converters, expression) in plan.converters:
            for converter in converters:
                row[position] = converter(row[position], expression, connection)
        instance = plan.model.from_db(plan.using, plan.attnames, row[plan.start : plan.end])
        for name, position in plan.annotations.items():
            setattr(instance, name, row[position])
        return instance


def _same(parameter: Any, probe: Any) -> bool:
    return type(parameter) is type(probe) and parameter == probe
