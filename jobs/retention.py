"""Retention: remove finished jobs, and their history, once they are old.

Finished means `completed`, `needs_attention` or `cancelled`, with a
`finished_at` older than the cut-off (database time). Work happens in short
batches that lock their rows with SKIP LOCKED, so pruning never waits on a
worker, the recovery scanner or staff, and nobody waits long on it.

A job that another app still points at with a PROTECT (or RESTRICT) foreign
key is kept (an app's record of what the job published keeps its job), and
with it the job's attempts. Rows that cascade from a job (attempts, checkpoints, review
decisions, ...) go with it. Outbox messages name their job only inside their
payload; once delivered (or given up on), those of removed jobs are removed
too, in their own batches.
"""

import logging
import uuid
from datetime import datetime, timedelta

from django.db import connection, models, transaction
from django.db.models import Exists, OuterRef, Q

from jobs.models import FINISHED_STATES, Job, OutboxMessage

log = logging.getLogger("jobs.retention")

_KEEPING = (models.PROTECT, models.RESTRICT)
# Only a well-formed id is cast to uuid, so a malformed payload cannot fail a batch.
_UUID_PATTERN = r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"


def _referenced_elsewhere() -> Q:
    """Jobs that a PROTECT/RESTRICT foreign key of any app points at."""
    condition = Q()
    for relation in Job._meta.related_objects:
        if relation.on_delete in _KEEPING:
            rows = relation.related_model._base_manager.filter(**{relation.field.name: OuterRef("pk")})
            condition |= Q(Exists(rows))
    return condition


def _delete_rows(model: type[models.Model], pks: list) -> int:
    """Delete these rows and the rows that CASCADE from them: one statement
    per table, children first, without loading any row into Python (the
    ORM's collector fetches every row it deletes). SET_NULL references are
    cleared; PROTECT and RESTRICT ones were excluded by the caller, and the
    database's foreign keys still refuse a delete that would break one."""
    if not pks:
        return 0
    quote = connection.ops.quote_name
    for relation in model._meta.related_objects:
        if not (relation.one_to_many or relation.one_to_one):
            continue
        child, column = relation.related_model, relation.field.column
        if relation.on_delete is models.CASCADE:
            if any(r.one_to_many or r.one_to_one for r in child._meta.related_objects):
                child_pks = list(
                    child._base_manager.filter(**{f"{relation.field.name}__in": pks}).values_list(
                        "pk", flat=True
                    )
                )
                _delete_rows(child, child_pks)
            else:
                with connection.cursor() as cursor:
                    cursor.execute(
                        f"DELETE FROM {quote(child._meta.db_table)} WHERE {quote(column)} = ANY(%s)", [pks]
                    )
        elif relation.on_delete is models.SET_NULL:
            child._base_manager.filter(**{f"{relation.field.name}__in": pks}).update(
                **{relation.field.name: None}
            )
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.pk.column)} = ANY(%s)", [pks]
        )
        return cursor.rowcount


def _database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def _prune_batch(
    *, state: str, cutoff: datetime, after: tuple[datetime, uuid.UUID] | None, batch_size: int, keep: Q
) -> tuple[int, tuple[datetime, uuid.UUID] | None]:
    """Remove up to `batch_size` old jobs in `state`, past the keyset `after`.

    Returns (jobs removed, the keyset to continue from, or None when done).
    """
    candidates = Job.objects.filter(state=state, finished_at__lt=cutoff)
    if after is not None:
        # Keyset on (finished_at, id): every batch starts where the last one
        # stopped, so kept and skipped rows are read once per run, not once
        # per batch.
        candidates = candidates.filter(Q(finished_at__gt=after[0]) | Q(finished_at=after[0], pk__gt=after[1]))
    if keep:
        candidates = candidates.exclude(keep)
    with transaction.atomic():
        # SKIP LOCKED: a job that someone holds (a staff retry, a stale
        # worker's late write) is passed over, never waited for. The lock we
        # take keeps the row finished until the delete, and blocks a new
        # PROTECT reference (its insert needs FOR KEY SHARE on this row).
        rows = list(
            candidates.select_for_update(skip_locked=True, of=("self",))
            .order_by("finished_at", "pk")
            .values_list("pk", "finished_at")[:batch_size]
        )
        if not rows:
            return 0, None
        removed = _delete_rows(Job, [pk for pk, _ in rows])
    last_pk, last_finished = rows[-1]
    return removed, (last_finished, last_pk)


def _outbox_prune_orphans(*, batch_size: int) -> int:
    """Remove delivered or failed outbox messages whose job no longer exists.

    Walks the outbox once in primary-key order (a keyset, so each batch is an
    index range scan). Pending messages stay: the relay still owes them.
    """
    table, jobs = OutboxMessage._meta.db_table, Job._meta.db_table
    removed = 0
    after = uuid.UUID(int=0)
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                # SKIP LOCKED: a message the relay is reserving or marking is
                # passed over; it is still there for the next run.
                cursor.execute(
                    f"""
                    SELECT o.id FROM {table} AS o
                    WHERE o.id > %s
                      AND (o.delivered_at IS NOT NULL OR o.failed_at IS NOT NULL)
                      AND o.payload ? 'job_id'
                      AND NOT EXISTS (
                          SELECT 1 FROM {jobs} AS j
                          WHERE j.id = CASE WHEN o.payload->>'job_id' ~* %s
                                            THEN (o.payload->>'job_id')::uuid END)
                    ORDER BY o.id
                    LIMIT %s
                    FOR UPDATE OF o SKIP LOCKED
                    """,
                    [after, _UUID_PATTERN, batch_size],
                )
                ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return removed
            removed += _delete_rows(OutboxMessage, ids)
        after = ids[-1]


def jobs_prune_finished(*, older_than: timedelta, batch_size: int) -> int:
    """Remove finished jobs whose `finished_at` is older than `older_than`,
    with everything that cascades from them and their delivered outbox
    messages; keep jobs that a PROTECT foreign key points at (what an app
    published from them). Returns the number of jobs removed."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than}")
    cutoff = _database_now() - older_than
    keep = _referenced_elsewhere()
    removed = 0
    for state in FINISHED_STATES:
        after: tuple[datetime, uuid.UUID] | None = None
        while True:
            count, after = _prune_batch(
                state=state, cutoff=cutoff, after=after, batch_size=batch_size, keep=keep
            )
            removed += count
            if after is None:
                break
    messages = _outbox_prune_orphans(batch_size=batch_size)
    log.info(
        "pruned %s finished job(s) and %s outbox message(s) older than %s",
        removed,
        messages,
        cutoff.isoformat(),
    )
    return removed
