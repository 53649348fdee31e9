"""Reviewer decisions: save edits, approve, reject.

Each decision is guarded by the job version the reviewer's page showed: the
job must still be `awaiting_review` at that version when the guarded UPDATE
runs, or nothing is written and the reviewer is told what happened instead
(another reviewer, a cancel, a retry). Every decision is recorded as a
`ReviewDecision` in the transaction of the job's change.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from catalog.reading import Table
from catalog.services import revision_publish
from catalog.validation import validate_items
from jobs.models import Job, State
from jobs.services import (
    InvalidTransition,
    VersionConflict,
    job_approve,
    job_load_checkpoint,
    job_reject,
    job_review_edit,
)
from review.models import ReviewDecision
from review.selectors import (
    CHECKED_CODES,
    EDITABLE_FIELDS,
    field_text,
    job_history_sentence,
    review_job_get,
)

MSG_STALE = "Nothing was changed: {history} That happened after you opened this page."
MSG_CHANGED = ("Nothing was changed: the job changed since you opened this page. {history} "
              "Reload the page to see the current items.")
MSG_GONE = "Nothing was changed: this job no longer exists."
MSG_BLOCKED = "{count} problem(s) still block approval: {problems}"
MSG_REASON_REQUIRED = "Say why the extraction is rejected: the uploader reads the reason."
MSG_NO_TABLE = ("The source table of this job was not kept, so the edits cannot be checked "
                "against it; reject the job and run it again.")
MSG_BAD_CURRENCY = "The sheet-wide currency {value!r} is not an ISO 4217 code (three letters)."
MSG_BAD_SCOPE = "The currency can be applied to items without one or to all items, not {value!r}."
MSG_BAD_PACK = "Item {row}: the pack size {value!r} is not a positive number."
MSG_BAD_ROW = "Item {row} does not exist in this job."

_ISO_RE = re.compile(r"^[A-Z]{3}$")
CURRENCY_SCOPES = ("missing", "all")
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


class EditRejected(Exception):
    """An edit cannot be stored at all (not a value of its field's type)."""

    def __init__(self, errors: list[str]):
        self.message = " ".join(errors)
        super().__init__(self.message)
        self.errors = errors


class ReasonRequired(Exception):
    def __init__(self):
        self.message = MSG_REASON_REQUIRED
        super().__init__(self.message)


class SourceTableMissing(Exception):
    def __init__(self):
        self.message = MSG_NO_TABLE
        super().__init__(self.message)


@dataclass(frozen=True)
class ReviewEdits:
    """What a reviewer changed on the page.

    `rows`: item index -> {field: text as typed}; fields whose text equals
    the current value are not changes. `currency` is applied to the items
    without a valid currency (`currency_scope="missing"`) or to every item
    ("all"); `unit` to the items whose unit is missing or ambiguous. A row's
    own edit wins over a sheet-wide override."""

    rows: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    remove: frozenset[int] = frozenset()
    currency: str = ""
    currency_scope: str = "missing"
    unit: str = ""


def _strip_flags(item: dict) -> dict:
    copy = {k: v for k, v in item.items() if k != "flags"}
    copy["source"] = dict(item.get("source") or {})
    return copy


def _has_currency(item: dict) -> bool:
    return bool(item.get("currency")) and bool(_ISO_RE.match(str(item["currency"])))


def _parse(name: str, text: str, row: int, errors: list[str]) -> Any:
    text = (text or "").strip()
    if name in ("sku", "description", "unit_price"):
        return text
    if name == "unit":
        return text or None
    if name == "currency":
        return text.upper() or None
    if name == "pack_size":
        if not text:
            return None
        try:
            value = Decimal(text.replace(",", "."))
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value <= 0:
            errors.append(MSG_BAD_PACK.format(row=row + 1, value=text))
            return None
        return int(value) if value == value.to_integral_value() else float(value)
    raise ValueError(name)


def items_recheck(*, items: list[dict], before: list[dict], table: Table) -> list[dict]:
    """Validate edited items afresh (their old flags dropped, so a fixed field
    loses its flag), then keep the extractor's doubts that validation cannot
    check, unless the reviewer changed the field they are about."""
    checked = validate_items([_strip_flags(i) for i in items], table)
    for item, old, new in zip(items, before, checked):
        for flag in old.get("flags") or []:
            if flag.get("code") in CHECKED_CODES:
                continue
            name = flag.get("field")
            if name in EDITABLE_FIELDS and item.get(name) != old.get(name):
                continue
            new["flags"].append(dict(flag))
    return checked


def edits_apply(*, items: list[dict], edits: ReviewEdits,
                table: Table) -> tuple[list[dict], list[dict], dict]:
    """Apply `edits` to `items` (pure).

    Returns (edited items, the originals they came from, changes): changes
    hold field-level before/after per row, removed rows and the overrides."""
    errors: list[str] = []
    currency = (edits.currency or "").strip().upper()
    unit = (edits.unit or "").strip()
    if currency and not _ISO_RE.match(currency):
        errors.append(MSG_BAD_CURRENCY.format(value=edits.currency))
    if edits.currency_scope not in CURRENCY_SCOPES:
        errors.append(MSG_BAD_SCOPE.format(value=edits.currency_scope))
    for index in set(edits.rows) | set(edits.remove):
        if not 0 <= index < len(items):
            errors.append(MSG_BAD_ROW.format(row=index + 1))
    ambiguous = set()
    if unit:
        baseline = validate_items([_strip_flags(i) for i in items], table)
        ambiguous = {n for n, item in enumerate(baseline)
                     if any(f["code"] == "ambiguous_unit" for f in item["flags"])}

    edited, before, rows, removed = [], [], [], []
    currency_rows, unit_rows = [], []
    for index, item in enumerate(items):
        if index in edits.remove:
            removed.append({"index": index, "sku": item.get("sku"), "source": item.get("source")})
            continue
        new = dict(item)
        new["source"] = dict(item.get("source") or {})
        if currency and (edits.currency_scope == "all" or not _has_currency(item)):
            new["currency"] = currency
            currency_rows.append(index)
        if unit and (not item.get("unit") or index in ambiguous):
            new["unit"] = unit
            unit_rows.append(index)
        for name, text in (edits.rows.get(index) or {}).items():
            # An input posted back unchanged is not an edit (it would undo an override).
            if name not in EDITABLE_FIELDS or (text or "").strip() == field_text(item.get(name)):
                continue
            new[name] = _parse(name, text, index, errors)
        changed = {name: {"before": item.get(name), "after": new.get(name)}
                   for name in EDITABLE_FIELDS if new.get(name) != item.get(name)}
        if changed:
            rows.append({"index": index, "sku": item.get("sku"), "source": item.get("source"),
                         "fields": changed})
        edited.append(new)
        before.append(item)
    if errors:
        raise EditRejected(errors)
    changes: dict[str, Any] = {"rows": rows, "removed": removed, "overrides": {}}
    if currency:
        changes["overrides"]["currency"] = {"value": currency, "scope": edits.currency_scope,
                                            "rows": currency_rows}
    if unit:
        changes["overrides"]["unit"] = {"value": unit, "rows": unit_rows}
    return edited, before, changes


def _has_changes(changes: dict) -> bool:
    return bool(changes["rows"] or changes["removed"])


def _stale(job_id: uuid.UUID, seen_version: int) -> ReviewStale:
    """Explain why a decision made at `seen_version` changed nothing."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return ReviewStale(MSG_GONE, state=None)
    history = job_history_sentence(job=job, since_version=seen_version)
    if job.state == State.AWAITING_REVIEW:
        return ReviewStale(MSG_CHANGED.format(history=history), state=job.state)
    return ReviewStale(MSG_STALE.format(history=history), state=job.state)


def _open_for_review(*, user: AbstractBaseUser, job_id: uuid.UUID,
                     expected_version: int) -> tuple[Job, Table]:
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


def _record(*, job_id: uuid.UUID, user: AbstractBaseUser, decision: str, version_seen: int,
            changes: dict | None = None, reason: str = "") -> ReviewDecision:
    return ReviewDecision.objects.create(
        job_id=job_id, reviewer=user, reviewer_name=user.get_username(), decision=decision,
        version_seen=version_seen, changes=changes or {}, reason=reason,
    )


def review_save_edits(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                      edits: ReviewEdits) -> int:
    """Store the reviewer's edits on the staged output (re-validated, so the
    page shows what still blocks approval); returns the job's new version.
    Saving nothing changes nothing and returns the version unchanged."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = edits_apply(items=_items(job), edits=edits, table=table)
    if not _has_changes(changes):
        return expected_version
    output = {**job.output, "items": items_recheck(items=edited, before=before, table=table)}
    try:
        with transaction.atomic():
            # Guarded on (awaiting_review, version): a concurrent decision wins.
            version = job_review_edit(job_id=job_id, expected_version=expected_version, output=output)
            _record(job_id=job_id, user=user, decision=ReviewDecision.Decision.EDIT,
                    version_seen=expected_version, changes=changes)
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
    return version


def review_approve(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                   edits: ReviewEdits | None = None) -> dict | None:
    """Apply the edits, validate again, and publish: the guarded approve, the
    catalog revision and the decision share one transaction.

    Raises ApprovalBlocked (nothing written) while validation still flags
    anything, ReviewStale when the job moved on since `expected_version`."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, _, changes = edits_apply(items=_items(job), edits=edits or ReviewEdits(), table=table)
    # Old flags are dropped: validation decides afresh what still blocks;
    # the extractor's doubts it cannot check are answered by this approval.
    checked = validate_items([_strip_flags(i) for i in edited], table)
    problems = [
        {"index": n, "sku": item.get("sku") or "", **flag}
        for n, item in enumerate(checked) for flag in item["flags"]
    ]
    if problems:
        raise ApprovalBlocked(problems)
    changes["answered_doubts"] = [
        {"index": n, **flag} for n, item in enumerate(edited)
        for flag in item.get("flags") or [] if flag.get("code") not in CHECKED_CODES
    ]
    output = {**job.output, "items": checked}
    try:
        with transaction.atomic():
            # One transaction: the guarded UPDATE takes the job's row lock, so
            # a concurrent cancel, retry or second approval either commits
            # first (and this UPDATE matches zero rows) or waits for this
            # commit and then finds the job completed.
            result = job_approve(
                job_id=job_id, expected_version=expected_version, output=output,
                publish=lambda locked: revision_publish(job=locked, approved_by=user),
            )
            _record(job_id=job_id, user=user, decision=ReviewDecision.Decision.APPROVE,
                    version_seen=expected_version, changes=changes)
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
    return result


def review_reject(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                  reason: str) -> None:
    """Reject the extraction: nothing is published, the job needs attention."""
    reason = (reason or "").strip()
    if not reason:
        raise ReasonRequired()
    review_job_get(user=user, job_id=job_id)
    try:
        with transaction.atomic():
            # Guarded on (awaiting_review, version), like approve.
            job_reject(job_id=job_id, expected_version=expected_version, reason=reason)
            _record(job_id=job_id, user=user, decision=ReviewDecision.Decision.REJECT,
                    version_seen=expected_version, reason=reason)
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
