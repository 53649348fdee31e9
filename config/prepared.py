"""A cursor whose statements are prepared on their connection.

The few statements every request runs (the token lookup, the upload's
target, the admission's insert, the wake-up) are planned once per
connection instead of on every run: planning was most of PostgreSQL's time
for them (bench/RESULTS.md, section 17). Everything else keeps Django's
client-side binding, where nothing is prepared.

The cursor is Django's own wrapper around a server-binding psycopg
cursor, so query logging, `execute_wrapper` and database error
translation see these statements like any other. With
`DATABASE_PREPARED_STATEMENTS=false` (a transaction-mode connection pooler
that cannot keep a session's prepared statements) they are run unprepared,
still with server-side binding.
"""

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import ServerBindingCursor

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
