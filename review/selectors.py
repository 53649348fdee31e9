"""Reads of the reviewer console: which jobs a user may review, the queue,
and everything the detail page shows. No writes here."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from catalog.models import CatalogRevision, Membership, PriceSheet, Supplier
from jobs.models import Job, State
from jobs.services import job_load_checkpoint
from review.models import ReviewDecision


class NotAReviewer(Exception):
    """The user is a member of the job's workspace without the reviewer or admin role."""


EDITABLE_FIELDS = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
# The codes validation checks again on every save and approve; any other
# code is a doubt only the extractor could see, which the reviewer answers.
CHECKED_CODES = frozenset({"missing_currency", "ambiguous_unit", "invalid_price",
                           "unsupported_source", "duplicate_sku", "empty_description"})
COMMON_CURRENCIES = ("EUR", "USD", "GBP", "CHF", "PLN", "CZK", "SEK", "NOK", "DKK", "HUF",
                     "RON", "TRY", "UAH", "RUB", "CNY", "JPY", "INR", "CAD", "AUD")
COMMON_UNITS = ("piece", "set", "pair", "pack", "box", "kg", "g", "l", "ml", "m", "m2", "m3")
# Sheets longer than this show only the cited rows and a little context, so
# the page stays light for sheets of many thousand rows.
SOURCE_FULL_ROWS = 2000
SOURCE_CONTEXT_ROWS = 2

_ITEMS_SQL = ("CASE WHEN jsonb_typeof(\"jobs_job\".\"output\"->'items') = 'array' "
              "THEN \"jobs_job\".\"output\"->'items' ELSE '[]'::jsonb END")
_FLAGS_SQL = "CASE WHEN jsonb_typeof(e->'flags') = 'array' THEN e->'flags' ELSE '[]'::jsonb END"
FLAG_COUNT_SQL = (f"(SELECT COALESCE(SUM(jsonb_array_length({_FLAGS_SQL})), 0) "
                  f"FROM jsonb_array_elements({_ITEMS_SQL}) e)")
FLAGGED_ITEMS_SQL = (f"(SELECT COUNT(*) FROM jsonb_array_elements({_ITEMS_SQL}) e "
                     f"WHERE jsonb_array_length({_FLAGS_SQL}) > 0)")
ITEM_COUNT_SQL = f"(SELECT COUNT(*) FROM jsonb_array_elements({_ITEMS_SQL}) e)"


def reviewer_workspace_ids(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet:
    if not user.is_authenticated:
        return Membership.objects.none().values("workspace_id")
    return Membership.objects.reviewers().filter(user=user).values("workspace_id")


def user_is_reviewer_anywhere(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    return user.is_authenticated and Membership.objects.reviewers().filter(user=user).exists()


def review_job_get(*, user: AbstractBaseUser | AnonymousUser, job_id: uuid.UUID) -> Job:
    """The job, if `user` may review it.

    Not a member of its workspace: Job.DoesNotExist, exactly like an unknown
    id, so ids of other workspaces cannot be probed. A member without the
    reviewer or admin role: NotAReviewer."""
    job = Job.objects.for_member(user).filter(pk=job_id).first()
    if job is None:
        raise Job.DoesNotExist(f"job {job_id} does not exist")
    if not Membership.objects.reviewers().filter(user=user, workspace_id=job.workspace_id).exists():
        raise NotAReviewer(f"{user} may not review jobs of workspace {job.workspace_id}")
    return job


def job_sources(*, jobs: list[Job]) -> dict[uuid.UUID, dict[str, str]]:
    """Supplier and file name per job, read in two queries for a whole page."""
    sheet_ids, supplier_ids = set(), set()
    for job in jobs:
        payload = job.payload or {}
        if payload.get("sheet_id"):
            try:
                sheet_ids.add(uuid.UUID(str(payload["sheet_id"])))
            except ValueError:
                pass
        if payload.get("supplier_id"):
            supplier_ids.add(payload["supplier_id"])
    sheets = {s.pk: s for s in PriceSheet.objects.filter(pk__in=sheet_ids).select_related("supplier")}
    suppliers = {s.pk: s.name for s in Supplier.objects.filter(pk__in=supplier_ids)}
    out = {}
    for job in jobs:
        payload = job.payload or {}
        try:
            sheet = sheets.get(uuid.UUID(str(payload.get("sheet_id"))))
        except ValueError:
            sheet = None
        supplier = suppliers.get(payload.get("supplier_id")) or (
            sheet.supplier.name if sheet is not None and sheet.supplier else "")
        out[job.pk] = {"supplier": supplier, "file": sheet.original_name if sheet else ""}
    return out


def review_queue(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet:
    """Jobs awaiting review in the user's reviewer workspaces, oldest first,
    with their flag counts computed in the database (the outputs stay there)."""
    return (
        Job.objects.filter(state=State.AWAITING_REVIEW,
                           workspace_id__in=reviewer_workspace_ids(user=user))
        .select_related("workspace")
        .defer("output")
        .annotate(flag_count=RawSQL(FLAG_COUNT_SQL, []),
                  flagged_items=RawSQL(FLAGGED_ITEMS_SQL, []),
                  item_count=RawSQL(ITEM_COUNT_SQL, []))
        .order_by("created_at", "id")
    )


def flag_counts(*, job: Job) -> tuple[int, int]:
    """(flags, flagged items) of the job's staged output."""
    output = job.output if isinstance(job.output, dict) else {}
    items = [i for i in output.get("items") or [] if isinstance(i, dict)]
    flags = [len(i.get("flags") or []) for i in items]
    return sum(flags), sum(1 for n in flags if n)


def field_text(value: Any) -> str:
    """A value as the grid shows it and as an unchanged input posts it back."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _when(at) -> str:
    return f"{timezone.localtime(at):%Y-%m-%d %H:%M:%S %Z}"


def job_history_sentence(*, job: Job, since_version: int | None = None) -> str:
    """One sentence saying what last happened to the job (and who did it);
    with `since_version`, only what happened after the reviewer saw that version."""
    decisions = ReviewDecision.objects.filter(job_id=job.pk).order_by("-pk")
    if since_version is not None:
        decisions = decisions.filter(version_seen__gte=since_version)
    last = decisions.first()
    when = _when(job.state_changed_at)
    if job.state == State.COMPLETED:
        if last is not None and last.decision == ReviewDecision.Decision.APPROVE:
            return f"This job was approved by {last.reviewer_name} at {_when(last.at)}."
        return f"This job was completed at {when}."
    if job.state == State.NEEDS_ATTENTION:
        if last is not None and last.decision == ReviewDecision.Decision.REJECT:
            return (f"This job was rejected by {last.reviewer_name} at {_when(last.at)}: "
                    f"{last.reason}")
        return f"This job needs attention since {when}: {job.reason}"
    if job.state == State.CANCELLED:
        return f"This job was {job.reason or 'cancelled'} at {when}."
    if job.state in (State.QUEUED, State.RUNNING, State.RETRYING):
        why = f" ({job.reason})" if job.reason else ""
        return f"This job was sent back for another extraction{why} at {when}; it is {job.state}."
    if last is not None and last.decision == ReviewDecision.Decision.EDIT:
        return f"{last.reviewer_name} saved edits at {_when(last.at)}."
    return f"This job was extracted again (attempt {job.attempt}) at {when}."


FIELD_LABELS = {"sku": "SKU", "description": "Description", "unit": "Unit", "pack_size": "Pack",
                "unit_price": "Unit price", "currency": "Currency"}


@dataclass
class Cell:
    name: str
    text: str
    flags: list[dict] = field(default_factory=list)

    @property
    def label(self) -> str:
        return FIELD_LABELS[self.name]

    @property
    def blocking(self) -> bool:
        return any(f.get("code") in CHECKED_CODES for f in self.flags)

    @property
    def reason(self) -> str:
        return " ".join(f.get("message", "") for f in self.flags)


@dataclass
class GridRow:
    index: int
    cells: list[Cell]
    row_flags: list[dict]
    sheet: str
    row: int | None
    anchor: str
    flagged: bool


@dataclass
class SourceRow:
    number: int
    cells: list[str]
    cited: bool = False
    cited_flagged: bool = False
    anchor: str = ""
    gap_before: bool = False


@dataclass
class SourceSheet:
    index: int
    name: str
    rows: list[SourceRow]
    width: int
    total_rows: int
    abridged: bool


@dataclass
class ReviewPage:
    job: Job
    grid: list[GridRow]
    sheets: list[SourceSheet]
    currencies: list[str]
    units: tuple[str, ...]
    decisions: list[ReviewDecision]
    source: dict[str, str]
    flag_count: int
    flagged_items: int
    notes: list[str]
    has_table: bool
    revision: CatalogRevision | None
    history: str


def _anchor(sheet_index: int | None, row: int | None) -> str:
    return f"src-{sheet_index}-{row}" if sheet_index is not None and row else ""


def review_page(*, job: Job) -> ReviewPage:
    """Everything the detail page shows: the grid with flags per cell, the
    source table with the cited rows marked, choices for the overrides."""
    output = job.output if isinstance(job.output, dict) else {}
    items = [i for i in output.get("items") or [] if isinstance(i, dict)]
    table = job_load_checkpoint(job_id=job.pk, name="table") or {}
    raw_sheets = [s for s in table.get("sheets") or [] if isinstance(s, dict)]
    sheet_index = {s.get("name"): n for n, s in enumerate(raw_sheets)}

    grid: list[GridRow] = []
    cited: dict[tuple[int, int], bool] = {}
    for index, item in enumerate(items):
        flags = [f for f in item.get("flags") or [] if isinstance(f, dict)]
        by_field: dict[str, list[dict]] = {}
        row_flags = []
        for flag in flags:
            if flag.get("field") in EDITABLE_FIELDS:
                by_field.setdefault(flag["field"], []).append(flag)
            else:
                row_flags.append(flag)
        source = item.get("source") if isinstance(item.get("source"), dict) else {}
        sheet_name, row = source.get("sheet"), source.get("row")
        row = row if isinstance(row, int) else None
        n = sheet_index.get(sheet_name)
        if n is not None and row:
            cited[(n, row)] = cited.get((n, row), False) or bool(flags)
        grid.append(GridRow(
            index=index,
            cells=[Cell(name, field_text(item.get(name)), by_field.get(name, []))
                   for name in EDITABLE_FIELDS],
            row_flags=row_flags, sheet=str(sheet_name or ""), row=row,
            anchor=_anchor(n, row), flagged=bool(flags),
        ))

    sheets = []
    for n, raw in enumerate(raw_sheets):
        rows = [list(r) for r in raw.get("rows") or []]
        numbers = range(1, len(rows) + 1)
        abridged = len(rows) > SOURCE_FULL_ROWS
        if abridged:
            keep = set()
            for (sn, row) in cited:
                if sn == n:
                    keep.update(range(max(1, row - SOURCE_CONTEXT_ROWS),
                                      min(len(rows), row + SOURCE_CONTEXT_ROWS) + 1))
            numbers = sorted(keep)
        shown, previous = [], 0
        for number in numbers:
            shown.append(SourceRow(
                number=number, cells=[str(c) for c in rows[number - 1]],
                cited=(n, number) in cited, cited_flagged=cited.get((n, number), False),
                anchor=_anchor(n, number), gap_before=number != previous + 1,
            ))
            previous = number
        width = max((len(r.cells) for r in shown), default=0)
        for r in shown:
            r.cells += [""] * (width - len(r.cells))
        sheets.append(SourceSheet(index=n, name=str(raw.get("name", "")), rows=shown, width=width,
                                  total_rows=len(rows), abridged=abridged))

    seen = sorted({str(i["currency"]).upper() for i in items if i.get("currency")})
    currencies = seen + [c for c in COMMON_CURRENCIES if c not in seen]
    revision = CatalogRevision.objects.filter(job_id=job.pk).select_related("supplier").first()
    return ReviewPage(
        job=job, grid=grid, sheets=sheets, currencies=currencies, units=COMMON_UNITS,
        decisions=list(ReviewDecision.objects.filter(job_id=job.pk).order_by("-pk")),
        source=job_sources(jobs=[job])[job.pk],
        flag_count=sum(len(r.row_flags) + sum(len(c.flags) for c in r.cells) for r in grid),
        flagged_items=sum(1 for r in grid if r.flagged),
        notes=[str(n) for n in output.get("notes") or []],
        has_table=bool(raw_sheets), revision=revision,
        history=job_history_sentence(job=job),
    )
