"""Reviewer decisions: save edits, approve, reject.

Each decision is guarded by the job version the reviewer's page showed: the
job must still be `awaiting_review` at that version when the guarded UPDATE
runs, or nothing is written and the reviewer is told what happened instead
(another reviewer, a cancel, a retry). Every decision is recorded as a
`ReviewDecision` in the transaction of the job's change.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from catalog.currencies import currency_error
from catalog.reading import Table
from catalog.services import revision_publish
from catalog.validation import unit_problem, validate_items
from jobs.models import Job, State
from jobs.services import (
    InvalidTransition,
    VersionConflict,
    job_approve,
    job_load_checkpoint,
    job_reject,
    job_review_edit,
)
from review.models import ReviewChunk, ReviewDecision, ReviewSnapshot
from review.selectors import (
    CHECKED_CODES,
    EDITABLE_FIELDS,
    SNAPSHOT_CHUNK,
    ItemFilter,
    items_matching,
    job_history_sentence,
    review_job_get,
    snapshot_item,
    snapshot_summary,
)

MSG_STALE = "Nothing was changed: {history} That happened after you opened this page."
MSG_CHANGED = ("Nothing was changed: the job changed since you opened this page. {history} "
              "Reload the page to see the current items.")
MSG_GONE = "Nothing was changed: this job no longer exists."
MSG_BLOCKED = "{count} problem(s) still block approval: {problems}"
MSG_REASON_REQUIRED = "Say why the extraction is rejected: the uploader reads the reason."
MSG_NO_TABLE = ("The source table of this job was not kept, so the edits cannot be checked "
                "against it; reject the job and run it again.")
MSG_BAD_CURRENCY = "Item {row}: {error}"
MSG_BAD_SHEET_CURRENCY = "The currency for the sheet: {error}"
MSG_BAD_SCOPE = "A value for the sheet applies to {scopes} items, not {value!r}."
MSG_BAD_PACK = "Item {row}: the pack size {value!r} is not a positive number."
MSG_BAD_PRICE = "Item {row}: the price {value!r} is not a positive decimal number (for example 1.10)."
MSG_BAD_ROW = "Item {row} does not exist in this job."
MSG_BAD_FIELD = "{field!r} is not a field a reviewer sets; fields are: {fields}."
MSG_BAD_VALUE = "Item {row}: {message}"
MSG_BAD_REPLACE = "Find and replace needs the text to find in {field}."
MSG_CHECK_PRICE = "{value!r} is not a price: type a positive decimal number (for example 1.10)."
MSG_CHECK_PACK = "{value!r} is not a pack size: type a positive number, or nothing."
MSG_CHECK_CURRENCY = "{value!r} is not a currency: pick an ISO 4217 code from the list (EUR, USD...)."

SCOPES = ("all", "missing", "flagged")
CURRENCY_SCOPES = SCOPES
BLOCKING_SHOWN = 10
_PRICE_RE = re.compile(r"^\d+(?:\.\d+)?$")
# A value a reviewer set is checked for what it is by these codes of validation:
# the same rules the extractors' output meets (a known unit, a positive price,
# an active currency), never against the source row.
VALUE_CODES = frozenset({"missing_currency", "ambiguous_unit", "invalid_price"})
# The fields a cell checks as it is committed (value_check), before saving.
CHECKED_FIELDS = ("unit", "pack_size", "unit_price", "currency")
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
class SheetSet:
    """One value for a field of many items: every item (`all`), the items
    where the field is empty or flagged (`missing`), or every flagged item."""

    field: str
    value: Any
    scope: str = "all"
    where: ItemFilter | None = None  # only the items this filter picks


@dataclass(frozen=True)
class Replace:
    """Find and replace within one column. `whole`: only cells whose whole
    value is `find` (case and surrounding space ignored), as when a unit word
    is mapped once for the sheet ("Stk" to "pc"); else every occurrence."""

    field: str
    find: str
    replace: str
    whole: bool = False


@dataclass(frozen=True)
class ReviewEdits:
    """What a reviewer changed.

    Applied in this order, a later step winning: `sets` (and the page's
    sheet-wide `currency` for `currency_scope`, `unit` for the items whose
    unit is missing or flagged), `replace`, then each row's own values in
    `rows` (item index -> {field: value}), then `remove` (omit) and
    `restore`. A row value equal to the current one is not a change."""

    rows: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    remove: frozenset[int] = frozenset()
    restore: frozenset[int] = frozenset()
    currency: str = ""
    currency_scope: str = "missing"
    unit: str = ""
    sets: tuple[SheetSet, ...] = ()
    replace: tuple[Replace, ...] = ()
    # Omit or restore every item a filter picks (by the flags it has now).
    remove_where: tuple[ItemFilter, ...] = ()
    restore_where: tuple[ItemFilter, ...] = ()

    def resolved(self, items: list[dict]) -> ReviewEdits:
        """These edits with the filters turned into item indexes (pure)."""
        if not (self.remove_where or self.restore_where):
            return self
        remove = set(self.remove)
        restore = set(self.restore)
        for where in self.remove_where:
            remove.update(items_matching(items, where))
        for where in self.restore_where:
            restore.update(items_matching(items, where))
        return dataclass_replace(self, remove=frozenset(remove), restore=frozenset(restore - remove),
                       remove_where=(), restore_where=())

    def all_sets(self) -> list[SheetSet]:
        out = list(self.sets)
        if (self.currency or "").strip():
            out.insert(0, SheetSet("currency", self.currency, self.currency_scope))
        if (self.unit or "").strip():
            out.insert(0, SheetSet("unit", self.unit, "missing"))
        return out


def _strip_flags(item: dict) -> dict:
    copy = {k: v for k, v in item.items() if k != "flags"}
    copy["source"] = dict(item.get("source") or {})
    return copy


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _parse(name: str, value: Any, row: int | None, errors: list[str]) -> Any:
    """A reviewer's value as the item stores it; what is not a value of its
    field's kind adds a sentence to `errors`."""
    text = _text(value)
    where = "for the sheet" if row is None else f"{row + 1}"
    if name in ("sku", "description"):
        return text
    if name == "unit":
        return text or None
    if name == "currency":
        code = text.upper()
        if not code:
            return None
        error = currency_error(code)
        if error:
            errors.append(MSG_BAD_SHEET_CURRENCY.format(error=error) if row is None
                          else MSG_BAD_CURRENCY.format(row=where, error=error))
            return None
        return code
    if name == "unit_price":
        # A decimal comma is read as a point; the digits typed are kept as typed.
        plain = text.replace(",", ".") if text.count(",") == 1 and "." not in text else text
        if not _PRICE_RE.match(plain) or Decimal(plain) <= 0:
            errors.append(MSG_BAD_PRICE.format(row=where, value=text))
            return text
        return plain
    if name == "pack_size":
        if not text:
            return None
        try:
            number = Decimal(text.replace(",", "."))
        except InvalidOperation:
            number = None
        if number is None or not number.is_finite() or number <= 0:
            errors.append(MSG_BAD_PACK.format(row=where, value=text))
            return None
        return int(number) if number == number.to_integral_value() else float(number)
    raise ValueError(name)


def value_check(*, name: str, value: Any, description: str = "") -> tuple[Any, str | None]:
    """One value a reviewer typed into a cell, checked as the cell is
    committed: (the value as it would be stored, None) or (None, why it is
    refused). The same rules as saving: a positive decimal price, an active
    ISO 4217 code, a known unit (for this item's description), a positive
    pack size (pure)."""
    if name not in EDITABLE_FIELDS:
        raise EditRejected([MSG_BAD_FIELD.format(field=name, fields=", ".join(EDITABLE_FIELDS))])
    errors: list[str] = []
    parsed = _parse(name, value, 0, errors)
    text = _text(value)
    if errors:
        return None, {"unit_price": MSG_CHECK_PRICE, "pack_size": MSG_CHECK_PACK}.get(
            name, MSG_CHECK_CURRENCY).format(value=text)
    if name == "unit":
        problem = unit_problem(text, description)
        if problem:
            return None, problem
    return parsed, None


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "pack_size" and a is not None and b is not None:
        try:
            return Decimal(str(a)) == Decimal(str(b))
        except InvalidOperation:
            return False
    if name in ("sku", "description"):
        return _text(a) == _text(b)
    return a == b


def _field_flagged(item: dict, name: str) -> bool:
    return any(f.get("field") == name for f in item.get("flags") or [])


def _in_scope(item: dict, baseline: dict, name: str, scope: str,
              where: ItemFilter | None = None) -> bool:
    if where is not None and not where.matches(item):
        return False
    if scope == "all":
        return True
    if scope == "flagged":
        return bool(item.get("flags"))
    return item.get(name) in (None, "") or _field_flagged(baseline, name)


def _replaced(value: Any, rule: Replace) -> Any:
    text = _text(value)
    if rule.field == "unit_price" and _same_decimal(text, rule.find):
        return rule.replace  # "12.50" finds the price shown as 12.50 and stored as 12.5
    if rule.whole or rule.field not in ("sku", "description"):
        return rule.replace if text.casefold() == rule.find.strip().casefold() else value
    return text.replace(rule.find, rule.replace) if rule.find in text else value


def _same_decimal(a: str, b: str) -> bool:
    try:
        return Decimal(a.strip()) == Decimal(b.strip())
    except ArithmeticError:
        return False


def _validate_fresh(items: list[dict], table: Table) -> list[dict]:
    """Validation's own verdict on the items (flags from earlier checks
    dropped). A value the reviewer set is the reviewer's, not the source
    row's: its `unsupported_source` flag is dropped, while it is still checked
    for what it is (currency, unit, price) like any value. Omitted items are
    not checked: they come back unchanged."""
    active = [n for n, item in enumerate(items) if not item.get("omitted")]
    checked = validate_items([_strip_flags(items[n]) for n in active], table)
    out = [dict(item) for item in items]
    for n, new in zip(active, checked):
        own = set(items[n].get("provenance") or {})
        new["flags"] = [f for f in new["flags"]
                        if not (f.get("code") == "unsupported_source" and f.get("field") in own)]
        out[n] = new
    return out


def items_recheck(*, items: list[dict], before: list[dict], table: Table) -> list[dict]:
    """Validate edited items afresh (so a fixed field loses its flag), then
    keep the extractor's doubts that validation cannot check, unless the
    reviewer set the field they are about."""
    checked = _validate_fresh(items, table)
    for item, old, new in zip(items, before, checked):
        if item.get("omitted"):
            continue
        own = set(item.get("provenance") or {})
        for flag in old.get("flags") or []:
            if flag.get("code") in CHECKED_CODES:
                continue
            name = flag.get("field")
            if name in EDITABLE_FIELDS and (name in own or item.get(name) != old.get(name)):
                continue
            new["flags"].append(dict(flag))
    return checked


def blocking_problems(fresh: list[dict]) -> list[dict]:
    """What stops publication: every flag validation raises on an item to
    publish (`fresh`: from `_validate_fresh`). An extractor's doubt that
    validation cannot check is answered by approving."""
    return [{"index": n, "sku": item.get("sku") or "", **flag}
            for n, item in enumerate(fresh) if not item.get("omitted")
            for flag in item.get("flags") or []]


def edits_apply(*, items: list[dict], edits: ReviewEdits, table: Table, by: str = "",
                at: str = "") -> tuple[list[dict], list[dict], dict]:
    """Apply `edits` to `items` (pure).

    Returns (edited items, the originals they came from, changes): changes
    hold field-level before/after per row, omitted and restored rows and the
    values set for the sheet. Each field the reviewer set records who set it
    and when, and the value the extractor gave (`provenance`)."""
    errors: list[str] = []
    edits = edits.resolved(items)
    sets = _checked_sets(edits, len(items), errors)
    needs_baseline = any(rule.scope == "missing" for rule, _ in sets)
    baseline = (validate_items([_strip_flags(i) for i in items], table) if needs_baseline else items)

    edited, rows = [], []
    marks: dict[str, list[dict]] = {"removed": [], "restored": []}
    applied: dict[tuple[str, str], list[int]] = {}
    for index, item in enumerate(items):
        new = _edited_item(index, item, baseline[index], sets, edits, applied, errors)
        _mark_omission(index, item, new, edits, marks)
        changed = _record_provenance(item, new, by=by, at=at)
        if changed:
            rows.append({"index": index, "sku": item.get("sku"), "source": item.get("source"),
                         "fields": changed})
        edited.append(new)
    if errors:
        raise EditRejected(sorted(set(errors), key=errors.index))
    changes: dict[str, Any] = {"rows": rows, **marks, "overrides": {}}
    for rule, value in sets:
        changes["overrides"][rule.field] = {"value": value, "scope": rule.scope,
                                            "rows": applied.get(("set", rule.field), [])}
    if edits.replace:
        changes["replaced"] = [{"field": r.field, "find": r.find, "replace": r.replace,
                                "whole": r.whole, "rows": applied.get(("replace", r.field), [])}
                               for r in edits.replace]
    return edited, list(items), changes


def _checked_sets(edits: ReviewEdits, count: int, errors: list[str]) -> list[tuple[Any, Any]]:
    """The sheet-wide values to set, parsed; raises EditRejected naming every
    field, scope or row the edits name that does not exist."""
    sets = []
    for rule in edits.all_sets():
        if rule.field not in EDITABLE_FIELDS:
            errors.append(MSG_BAD_FIELD.format(field=rule.field, fields=", ".join(EDITABLE_FIELDS)))
        elif rule.scope not in SCOPES:
            errors.append(MSG_BAD_SCOPE.format(value=rule.scope, scopes=", ".join(SCOPES)))
        else:
            sets.append((rule, _parse(rule.field, rule.value, None, errors)))
    for rule in edits.replace:
        if rule.field not in EDITABLE_FIELDS:
            errors.append(MSG_BAD_FIELD.format(field=rule.field, fields=", ".join(EDITABLE_FIELDS)))
        elif not rule.find.strip():
            errors.append(MSG_BAD_REPLACE.format(field=rule.field))
    for index in set(edits.rows) | set(edits.remove) | set(edits.restore):
        if not 0 <= index < count:
            errors.append(MSG_BAD_ROW.format(row=index + 1))
    for values in edits.rows.values():
        errors.extend(MSG_BAD_FIELD.format(field=name, fields=", ".join(EDITABLE_FIELDS))
                      for name in values if name not in EDITABLE_FIELDS)
    if errors:
        raise EditRejected(sorted(set(errors), key=errors.index))
    return sets


def _edited_item(index: int, item: dict, baseline: dict, sets, edits: ReviewEdits,
                 applied: dict[tuple[str, str], list[int]], errors: list[str]) -> dict:
    """One item with the sheet-wide values, the replacements and its own row's values."""
    new = dict(item)
    new["source"] = dict(item.get("source") or {})
    for rule, value in sets:
        if _in_scope(item, baseline, rule.field, rule.scope, rule.where):
            if not _same(rule.field, new.get(rule.field), value):
                applied.setdefault(("set", rule.field), []).append(index)
            new[rule.field] = value
    for rule in edits.replace:
        value = _replaced(new.get(rule.field), rule)
        if value is not new.get(rule.field) and not _same(rule.field, value, new.get(rule.field)):
            new[rule.field] = _parse(rule.field, value, index, errors)
            applied.setdefault(("replace", rule.field), []).append(index)
    for name, value in (edits.rows.get(index) or {}).items():
        parsed = _parse(name, value, index, errors)
        if not _same(name, parsed, new.get(name)):
            new[name] = parsed  # a row's own value wins over the sheet's
    return new


def _mark_omission(index: int, item: dict, new: dict, edits: ReviewEdits,
                   marks: dict[str, list[dict]]) -> None:
    row = {"index": index, "sku": item.get("sku"), "source": item.get("source")}
    if index in edits.remove and not item.get("omitted"):
        new["omitted"] = True
        marks["removed"].append(row)
    elif index in edits.restore and item.get("omitted"):
        new.pop("omitted", None)
        marks["restored"].append(row)


def _record_provenance(item: dict, new: dict, *, by: str, at: str) -> dict:
    """The fields `new` changes from `item` (before/after); each set by the
    reviewer is recorded on `new` with who, when and what was extracted."""
    changed = {name: {"before": item.get(name), "after": new.get(name)}
               for name in EDITABLE_FIELDS if not _same(name, new.get(name), item.get(name))}
    if not changed:
        return changed
    provenance = {k: dict(v) for k, v in (item.get("provenance") or {}).items()}
    for name, values in changed.items():
        extracted = provenance.get(name, {}).get("extracted", values["before"])
        if _same(name, values["after"], extracted):
            provenance.pop(name, None)  # back to what the extractor read
        else:
            provenance[name] = {"by": by, "at": at, "extracted": extracted}
    if provenance:
        new["provenance"] = provenance
    else:
        new.pop("provenance", None)
    return changed


def values_refused(*, checked: list[dict], changes: dict) -> list[str]:
    """Sentences for the values the reviewer set in this edit that are not
    values of their kind (an unknown unit, a price that is no price...)."""
    errors = []
    for row in changes["rows"]:
        item = checked[row["index"]]
        if item.get("omitted"):
            continue
        for flag in item.get("flags") or []:
            if (flag.get("code") in VALUE_CODES and flag.get("field") in row["fields"]
                    and row["fields"][flag["field"]]["after"] not in (None, "")):
                errors.append(MSG_BAD_VALUE.format(row=row["index"] + 1, message=flag["message"]))
    return errors


def _recheck_or_refuse(*, edited: list[dict], before: list[dict], changes: dict,
                       table: Table) -> list[dict]:
    checked = items_recheck(items=edited, before=before, table=table)
    refused = values_refused(checked=checked, changes=changes)
    if refused:
        raise EditRejected(refused)
    return checked


def _has_changes(changes: dict) -> bool:
    return bool(changes["rows"] or changes["removed"] or changes["restored"])


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


def _apply(*, user: AbstractBaseUser, job: Job, table: Table,
           edits: ReviewEdits) -> tuple[list[dict], list[dict], dict]:
    return edits_apply(items=_items(job), edits=edits, table=table, by=user.get_username(),
                       at=timezone.now().isoformat(timespec="seconds"))


def _snapshot_store(*, job_id: uuid.UUID, version: int, items: list[dict]) -> ReviewSnapshot:
    rows = [snapshot_item(n, item) for n, item in enumerate(items)]
    try:
        with transaction.atomic():
            # Older versions' snapshots go; a newer one (a later save that won
            # the race) stays, and this one is not stored.
            ReviewSnapshot.objects.filter(job_id=job_id, version__lt=version).delete()
            snapshot = ReviewSnapshot.objects.create(job_id=job_id, version=version, total=len(rows),
                                                     summary=snapshot_summary(items))
            ReviewChunk.objects.bulk_create(
                (ReviewChunk(snapshot=snapshot, number=n // SNAPSHOT_CHUNK,
                             items_json=json.dumps(rows[n:n + SNAPSHOT_CHUNK], separators=(",", ":")))
                 for n in range(0, len(rows), SNAPSHOT_CHUNK)),
                batch_size=20,
            )
    except IntegrityError:
        return ReviewSnapshot.objects.get(job_id=job_id)
    return snapshot


def review_snapshot_on_staged(sender, *, job_id: uuid.UUID, version: int, output, **kwargs) -> None:
    """Receiver of jobs.signals.job_staged_for_review: build the grid's
    snapshot from the output the worker holds as the job enters review, so
    the first reviewer to open a big sheet does not wait for it."""
    items = output.get("items") if isinstance(output, dict) else None
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    _snapshot_store(job_id=job_id, version=version, items=items)


def review_snapshot_current(*, job: Job) -> ReviewSnapshot:
    """The grid's snapshot of the job's current version, built from the
    staged output the first time that version is read."""
    snapshot = ReviewSnapshot.objects.filter(job_id=job.pk, version=job.version).first()
    if snapshot is not None:
        return snapshot
    # The items and their version are read in one statement, so they agree.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT (output->'items')::text, version FROM {Job._meta.db_table} WHERE id = %s",
                       [job.pk])
        row = cursor.fetchone()
    if row is None:
        raise Job.DoesNotExist(f"job {job.pk} does not exist")
    items = json.loads(row[0]) if row[0] else []
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    version = row[1]
    return _snapshot_store(job_id=job.pk, version=version, items=items)


def review_save_edits(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                      edits: ReviewEdits) -> int:
    """Store the reviewer's edits on the staged output (re-validated, so the
    page shows what still blocks approval); returns the job's new version.
    Saving nothing changes nothing and returns the version unchanged."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits)
    if not _has_changes(changes):
        return expected_version
    checked = _recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    output = {**job.output, "items": checked}
    try:
        with transaction.atomic():
            # Guarded on (awaiting_review, version): a concurrent decision wins.
            version = job_review_edit(job_id=job_id, expected_version=expected_version, output=output)
            _record(job_id=job_id, user=user, decision=ReviewDecision.Decision.EDIT,
                    version_seen=expected_version, changes=changes)
    except (VersionConflict, InvalidTransition, Job.DoesNotExist):
        raise _stale(job_id, expected_version) from None
    # The grid's pages of the new version, from the items already in hand.
    _snapshot_store(job_id=job_id, version=version, items=checked)
    return version


def review_preview(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                   edits: ReviewEdits) -> dict:
    """What approving with `edits` would publish, without writing anything:
    items to publish, omitted, changed by hand, and what still blocks."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits)
    _recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    problems = blocking_problems(_validate_fresh(edited, table))
    return {
        "publish": sum(1 for i in edited if not i.get("omitted")),
        "omitted": sum(1 for i in edited if i.get("omitted")),
        "changed_by_hand": sum(1 for i in edited if i.get("provenance") and not i.get("omitted")),
        "blocking": len(problems),
        "problems": problems[:BLOCKING_SHOWN],
    }


def review_approve(*, user: AbstractBaseUser, job_id: uuid.UUID, expected_version: int,
                   edits: ReviewEdits | None = None) -> dict | None:
    """Apply the edits, validate again, and publish: the guarded approve, the
    catalog revision and the decision share one transaction.

    Raises ApprovalBlocked (nothing written) while validation still flags
    anything, ReviewStale when the job moved on since `expected_version`."""
    job, table = _open_for_review(user=user, job_id=job_id, expected_version=expected_version)
    edited, before, changes = _apply(user=user, job=job, table=table, edits=edits or ReviewEdits())
    _recheck_or_refuse(edited=edited, before=before, changes=changes, table=table)
    # Old flags are dropped: validation decides afresh what still blocks;
    # the extractor's doubts it cannot check are answered by this approval.
    fresh = _validate_fresh(edited, table)
    problems = blocking_problems(fresh)
    if problems:
        raise ApprovalBlocked(problems)
    changes["answered_doubts"] = [
        {"index": n, **flag} for n, item in enumerate(edited) if not item.get("omitted")
        for flag in item.get("flags") or [] if flag.get("code") not in CHECKED_CODES
    ]
    # The omitted items stay in the decision's history, not in the publication.
    output = {**job.output, "items": [i for i in fresh if not i.get("omitted")]}
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
