"""Reviewer decisions: save edits, approve, reject.

Each decision is guarded by the job version the reviewer's page showed: the
job must still be `awaiting_review` at that version when the guarded UPDATE
runs, or nothing is written and the reviewer is told what happened instead
(another reviewer, a cancel, a retry). Every decision is recorded as a
`ReviewDecision` in the transaction of the job's change. The edits
themselves are applied and checked by review.edits; the grid's snapshot of
each new version is stored by review.snapshots.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from catalog.reading import Table
from catalog.services import revision_publish
from jobs.models import Job, State
from jobs.services import (
    InvalidTransition,
    VersionConflict,
    job_approve,
    job_load_checkpoint,
    job_reject,
    job_review_edit,
)
from review.edits import ReviewEdits, blocking_problems, edits_apply, has_changes, items_recheck_or_refuse
from review.models import ReviewDecision
from review.selectors import job_history_sentence, review_job_get
from review.snapshots import review_snapshot_store

MSG_STALE = "Nothing was changed: {history} That happened after you opened this page."
MSG_CHANGED = (
    "Nothing was changed: the job changed since you opened this page. {history} "
    "Reload the page to see the current items."
)
MSG_GONE = "Nothing was changed: this job no longer exists."
MSG_BLOCKED = "{count} problem(s) still block approval: {problems}"
MSG_REASON_REQUIRED = "Say why the extraction is rejected: the uploader reads the reason."
MSG_NO_TABLE = (
    "The source table of this job was not kept, so the edits cannot be checked "
    "against it; reject the job and run it again."
)
BLOCKING_SHOWN = 10


class ReviewStale(Exception):
    """The decision was made on a version of the job that is gone."""

    def __init__(self, message: str, *, state: str | None):
        super().__init__(message)
        self.message = message
        self.state = state


class ApprovalBlocked(Exception):
    """Validation still flags the (edited) items: they cannot be published."""

    def __init__(self, problems: list[dict]):
        shown = "; ".join(
            f"item {p['index'] + 1}{' (SKU ' + p['sku'] + ')' if p['sku'] else ''}"
            f" {p['field'] or 'row'}: {p['message']}"
            for p in problems[:BLOCKING_SHOWN]
        )
        if len(problems) > BLOCKING_SHOWN:
            shown += f"; and {len(problems) - BLOCKING_SHOWN} more"
        self.message = MSG_BLOCKED.format(count=len(problems), problems=shown)
        super().__init__(self.message)
        self.problems = problems


class ReasonRequired(Exception):
    def __init__(self):
        self.message = MSG_REASON_REQUIRED
        super().__init__(self.message)


class SourceTableMissing(Exception):
    def __init__(self):
        self.message = MSG_NO_TABLE
        super().__init__(self.message)


def _stale(job_id: uuid.UUID, seen_version: int) -> ReviewStale:
    """Explain why a decision made at `seen_version` changed nothing."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return ReviewStale(MSG_GONE, state=None)
    history = job_history_sentence(job=job, since_version=seen_version)
    if job.state == State.AWAITING_REVIEW:
        return ReviewStale(MSG_CHANGED.format(history=history), state=job.state)
    return ReviewStale(MSG_STALE.format(history=history), state=job.state)


def _open_for_review(
    *, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int
) -> tuple[Job, Table]:
    """The job as the reviewer saw it, and its source table.

    This early check only gives a clear answer sooner; the guarded UPDATE
    in the decision's transaction is what actually refuses a stale decision."""
    job = review_job_get(user=user, job_id=job_id)
    if job.state != State.AWAITING_REVIEW or job.version != expected_version:
        raise _stale(job_id, expected_version)
    table = job_load_checkpoint(job_id=job_id, name="table")
    if not table:
        raise SourceTableMissing()
    return job, Table.from_json(table)


def _items(job: Job) -> list[dict]:
    output = job.output if isinstance(job.output, dict) else {}
    return [i for i in output.get("items") or [] if isinstance(i, dict)]


def _record(
    *,
    job_id: uuid.UUID,
    user: AbstractBaseUser,
    decision: str,
    version_seen: int,
    changes: dict | None = None,
    reason: str = "",
) -> ReviewDecision:
    return ReviewDecision.objects.create(
        job_id=job_id,
        reviewer=user,
        reviewer_name=user.get_username(),
        decision=decision,
        version_seen=version_seen,
        changes=changes or {},
        reason=reason,
    )


def _apply(
    *, user: AbstractBaseUser, job: Job, table: Table, edits: ReviewEdits
) -> tuple[list[dict], list[dict], dict]:
    return edits_apply(
        items=_items(job),
        edits=edits,
        table=table,
        by=user.get_username(),
        at=timezone.now().isoformat(timespec="seconds"),
    )


def review_save_edits(
    *, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int, edits: ReviewEdits
) -> int:
    """Store the reviewer's edits on the staged output (re-validated, so the
    page shows what still blocks approval); returns the job's new version.
    Saving nothing changes nothing and returns the version unchanged."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits)
    if not has_changes(changes):
        return expected_version
    checked = items_recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    output = {**job.output, "items": checked}
    try:
        with transaction.atomic():
            # Guarded on (awaiting_review, version): a concurrent decision wins.
            version = job_review_edit(job_id=job_id, expected_version=expected_version, output=output)
            _record(
                job_id=job_id,
                user=user,
                decision=ReviewDecision.Decision.EDIT,
                version_seen=expected_version,
                changes=changes,
            )
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
    # The grid's pages of the new version, from the items already in hand.
    review_snapshot_store(job_id=job_id, version=version, items=checked)
    return version


def review_preview(
    *, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int, edits: ReviewEdits
) -> dict:
    """What approving with `edits` would publish, without writing anything:
    items to publish, omitted, changed by hand, and what still blocks."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits)
    checked = items_recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    problems = blocking_problems(checked)
    return {
        "publish": sum(1 for i in edited if not i.get("omitted")),
        "omitted": sum(1 for i in edited if i.get("omitted")),
        "changed_by_hand": sum(1 for i in edited if i.get("provenance") and not i.get("omitted")),
        "blocking": len(problems),
        "problems": problems[:BLOCKING_SHOWN],
    }


def review_approve(
    *, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int, edits: ReviewEdits | None = None
) -> dict | None:
    """Apply the edits, validate again, and publish: the guarded approve, the
    catalog revision and the decision share one transaction.

    Raises ApprovalBlocked (nothing written) while validation still flags
    anything, ReviewStale when the job moved on since `expected_version`."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits or ReviewEdits())
    checked = items_recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    # Validation decides afresh what still blocks, with the flags it cannot
    # check that block (catalog.flags); the doubts that do not block are
    # answered by this approval.
    problems = blocking_problems(checked)
    if problems:
        raise ApprovalBlocked(problems)
    changes["answered_doubts"] = [
        {"index": n, **flag}
        for n, item in enumerate(checked)
        if not item.get("omitted")
        for flag in item.get("flags") or []
    ]
    # The omitted items stay in the decision's history, not in the publication.
    output = {**job.output, "items": [{**i, "flags": []} for i in checked if not i.get("omitted")]}
    try:
        with transaction.atomic():
            # One transaction: the guarded UPDATE takes the job's row lock, so
            # a concurrent cancel, retry or second approval either commits
            # first (and this UPDATE matches zero rows) or waits for this
            # commit and then finds the job completed.
            result = job_approve(
                job_id=job_id,
                expected_version=expected_version,
                output=output,
                publish=lambda locked: revision_publish(job=locked, approved_by=user),
            )
            _record(
                job_id=job_id,
                user=user,
                decision=ReviewDecision.Decision.APPROVE,
                version_seen=expected_version,
                changes=changes,
            )
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
    return result


def review_reject(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int, reason: str) -> None:
    """Reject the extraction: nothing is published, the job needs attention."""
    reason = (reason or "").strip()
    if not reason:
        raise ReasonRequired()
    review_job_get(user=user, job_id=job_id)
    try:
        with transaction.atomic():
            # Guarded on (awaiting_review, version), like approve.
            job_reject(job_id=job_id, expected_version=expected_version, reason=reason)
            _record(
                job_id=job_id,
                user=user,
                decision=ReviewDecision.Decision.REJECT,
                version_seen=expected_version,
                reason=reason,
            )
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
