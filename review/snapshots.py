"""The review grid's snapshots: the staged items of one job version, stored
in chunks the grid reads a page at a time (review.selectors)."""

from __future__ import annotations

import json
import uuid

from django.db import IntegrityError, connection, transaction

from jobs.models import Job
from review.models import ReviewChunk, ReviewSnapshot
from review.selectors import SNAPSHOT_CHUNK, snapshot_item, snapshot_summary


def review_snapshot_store(*, job_id: uuid.UUID, version: int, items: list[dict]) -> ReviewSnapshot:
    rows = [snapshot_item(n, item) for n, item in enumerate(items)]
    try:
        with transaction.atomic():
            # Older versions' snapshots go; a newer one (a later save that won
            # the race) stays, and this one is not stored.
            ReviewSnapshot.objects.filter(job_id=job_id, version__lt=version).delete()
            snapshot = ReviewSnapshot.objects.create(
                job_id=job_id, version=version, total=len(rows), summary=snapshot_summary(items)
            )
            _chunks_copy(snapshot, rows)
    except IntegrityError:
        return ReviewSnapshot.objects.get(job_id=job_id)
    return snapshot


def _chunks_copy(snapshot: ReviewSnapshot, rows: list[dict]) -> None:
    """The snapshot's pages by COPY, in the caller's transaction: megabytes of
    JSON text stream in as they are, where INSERTs quoted them into the
    statement's text for the server to parse again (20,000 items: a fifth of
    a second, not one)."""
    table = ReviewChunk._meta.db_table
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} (snapshot_id, number, items_json) FROM STDIN") as copy,
    ):
        for n in range(0, len(rows), SNAPSHOT_CHUNK):
            copy.write_row(
                (
                    snapshot.pk,
                    n // SNAPSHOT_CHUNK,
                    json.dumps(rows[n : n + SNAPSHOT_CHUNK], separators=(",", ":")),
                )
            )


def review_snapshot_on_staged(sender, *, job_id: uuid.UUID, version: int, output, **kwargs) -> None:
    """Receiver of jobs.signals.job_staged_for_review: build the grid's
    snapshot from the output the worker holds as the job enters review, so
    the first reviewer to open a big sheet does not wait for it."""
    items = output.get("items") if isinstance(output, dict) else None
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    review_snapshot_store(job_id=job_id, version=version, items=items)


def review_snapshot_current(*, job: Job) -> ReviewSnapshot:
    """The grid's snapshot of the job's current version, built from the
    staged output the first time that version is read."""
    snapshot = ReviewSnapshot.objects.filter(job_id=job.pk, version=job.version).first()
    if snapshot is not None:
        return snapshot
    # The items and their version are read in one statement, so they agree.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (output->'items')::text, version FROM {Job._meta.db_table} WHERE id = %s", [job.pk]
        )
        row = cursor.fetchone()
    if row is None:
        raise Job.DoesNotExist(f"job {job.pk} does not exist")
    items = json.loads(row[0]) if row[0] else []
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    version = row[1]
    return review_snapshot_store(job_id=job.pk, version=version, items=items)
