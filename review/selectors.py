"""Reads of the reviewer console: which jobs a user may review, the queue,
and everything the detail page shows. No writes here."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.template.loader import render_to_string
from django.utils import timezone

from accounts.models import Membership
from catalog.currencies import currency_choices
from catalog.export import item_price_text
from catalog.extraction import plain_decimal
from catalog.flags import UnknownFlag, flag_type, is_blocking
from catalog.items import REVIEW_KEYS, VALUE_FIELDS, Item
from catalog.models import CatalogRevision
from catalog.selectors import job_sheets
from catalog.units import unit_choices
from jobs.models import Job, JobCheckpoint, State
from review.models import ReviewChunk, ReviewDecision, ReviewSnapshot


class NotAReviewer(Exception):
    """The user is a member of the job's workspace without the reviewer or admin role."""


EDITABLE_FIELDS = VALUE_FIELDS
DECISIONS_SHOWN = 50
NOTES_SHOWN = 20

_ITEMS_SQL = (
    "CASE WHEN jsonb_typeof(\"jobs_job\".\"output\"->'items') = 'array' "
    "THEN \"jobs_job\".\"output\"->'items' ELSE '[]'::jsonb END"
)
_FLAGS_SQL = "CASE WHEN jsonb_typeof(e->'flags') = 'array' THEN e->'flags' ELSE '[]'::jsonb END"
FLAG_COUNT_SQL = (
    f"(SELECT COALESCE(SUM(jsonb_array_length({_FLAGS_SQL})), 0) FROM jsonb_array_elements({_ITEMS_SQL}) e)"
)
FLAGGED_ITEMS_SQL = (
    f"(SELECT COUNT(*) FROM jsonb_array_elements({_ITEMS_SQL}) e WHERE jsonb_array_length({_FLAGS_SQL}) > 0)"
)
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
    # The output (up to tens of MB for a big sheet) is read only where it is used.
    job = Job.objects.for_member(user).filter(pk=job_id).defer("output").first()
    if job is None:
        raise Job.DoesNotExist(f"job {job_id} does not exist")
    if not Membership.objects.reviewers().filter(user=user, workspace_id=job.workspace_id).exists():
        raise NotAReviewer(f"{user} may not review jobs of workspace {job.workspace_id}")
    return job


def job_sources(*, jobs: list[Job]) -> dict[uuid.UUID, dict[str, str]]:
    """Supplier and file name per job, read in one query for a whole page."""
    sheets = job_sheets(jobs=jobs)
    out = {}
    for job in jobs:
        sheet = sheets[job.pk]
        supplier = (
            (sheet.supplier.name if sheet.supplier else sheet.supplier_name)
            if sheet
            else (job.payload or {}).get("supplier_name", "")
        )
        out[job.pk] = {"supplier": supplier, "file": sheet.original_name if sheet else ""}
    return out


def review_queue(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet:
    """Jobs awaiting review in the user's reviewer workspaces, oldest first,
    with their flag counts computed in the database (the outputs stay there)."""
    return (
        Job.objects.filter(state=State.AWAITING_REVIEW, workspace_id__in=reviewer_workspace_ids(user=user))
        .select_related("workspace")
        .defer("output")
        .annotate(
            flag_count=RawSQL(FLAG_COUNT_SQL, []),
            flagged_items=RawSQL(FLAGGED_ITEMS_SQL, []),
            item_count=RawSQL(ITEM_COUNT_SQL, []),
        )
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
            return f"This job was rejected by {last.reviewer_name} at {_when(last.at)}: {last.reason}"
        return f"This job needs attention since {when}: {job.reason}"
    if job.state == State.CANCELLED:
        return f"This job was {job.reason or 'cancelled'} at {when}."
    if job.state in (State.QUEUED, State.RUNNING, State.RETRYING):
        why = f" ({job.reason})" if job.reason else ""
        return f"This job was sent back for another extraction{why} at {when}; it is {job.state}."
    if last is not None and last.decision == ReviewDecision.Decision.EDIT:
        return f"{last.reviewer_name} saved edits at {_when(last.at)}."
    return f"This job was extracted again (attempt {job.attempt}) at {when}."


FIELD_LABELS = {
    "sku": "SKU",
    "description": "Description",
    "unit": "Unit",
    "pack_size": "Pack",
    "unit_price": "Unit price",
    "currency": "Currency",
}
ITEM_KEYS = (*Item.model_fields, *REVIEW_KEYS)  # what the grid reads of an item

_JOB_TABLE = Job._meta.db_table
_CHECKPOINT_TABLE = JobCheckpoint._meta.db_table
# Slices are cut in the database: a page of a 50,000-item output moves a few
# hundred items, never the whole document, to Python and the browser.
_SOURCE_SQL = (
    f"SELECT (t.n - 1)::int, jsonb_array_length(t.s->'rows'), "
    f"jsonb_path_query_array(t.s->'rows', '$[$a to $b]', jsonb_build_object('a', %s, 'b', %s)) "
    f"FROM {_CHECKPOINT_TABLE} c, jsonb_array_elements(c.data->'sheets') WITH ORDINALITY t(s, n) "
    f"WHERE c.job_id = %s AND c.name = 'table' AND t.s->>'name' = %s"
)
_SHEET_NAMES_SQL = (
    f"SELECT coalesce(jsonb_agg(s->>'name'), '[]'::jsonb) FROM {_CHECKPOINT_TABLE} c, "
    f"jsonb_array_elements(c.data->'sheets') s WHERE c.job_id = %s AND c.name = 'table'"
)


def _loaded(value):
    return json.loads(value) if isinstance(value, str) else value


SNAPSHOT_CHUNK = 200


def snapshot_item(index: int, item: dict) -> dict:
    """An item as the grid reads it: its index and the keys the grid shows."""
    shown = {"index": index, **{k: item.get(k) for k in ITEM_KEYS if k in item}}
    if _is_decimal(item.get("unit_price")):
        shown["unit_price"] = item_price_text(item)  # "12.50" as the sheet showed it
    return shown


def _is_decimal(value: Any) -> bool:
    number = plain_decimal(value)
    return number is not None and number.is_finite()


def flag_name(code: str) -> str:
    """The registry's readable name (the code itself for one it does not know)."""
    try:
        return flag_type(code).name
    except UnknownFlag:
        return code


def flag_blocks(code: str) -> bool:
    """Whether a flag of `code` stops approval (the registry says; an
    unknown code blocks); any other is advisory, answered by approving."""
    return is_blocking({"code": code})


@dataclass(frozen=True)
class ItemFilter:
    """Which items a filter picks: those with a flag of `flag` (any code when
    empty), on `field` (any when empty; "row" for flags about no one field),
    and only blocking flags with `blocking`. A filter naming nothing picks
    every flagged item."""

    flag: str = ""
    field: str = ""
    blocking: bool = False

    def matches(self, item: dict) -> bool:
        for flag in item.get("flags") or []:
            if not isinstance(flag, dict):
                continue
            code = flag.get("code") or ""
            if self.flag and code != self.flag:
                continue
            if self.field and (flag.get("field") or "row") != self.field:
                continue
            if self.blocking and not flag_blocks(code):
                continue
            return True
        return False


def items_matching(items: list[dict], where: ItemFilter) -> list[int]:
    """The indexes of the items `where` picks, omitted ones included (so a
    filter can restore what it omitted) (pure)."""
    return [n for n, item in enumerate(items) if isinstance(item, dict) and where.matches(item)]


def index_ranges(indexes: list[int]) -> list[list[int]]:
    """Sorted indexes as inclusive runs: [0..49999] all flagged is one pair,
    so what a page or an answer carries for a huge sheet stays small."""
    runs: list[list[int]] = []
    for index in indexes:
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return runs


def snapshot_summary(items: list[dict]) -> dict:
    """Flagged item indexes, flag counts per reason (with the first item that
    has each), blocking and advisory flags counted apart, omitted and
    hand-changed counts (pure)."""
    flagged, reasons, flags, blocking, omitted, changed = [], {}, 0, 0, 0, 0
    for index, item in enumerate(items):
        if item.get("omitted"):
            omitted += 1
            continue
        changed += bool(item.get("provenance"))
        codes = [f.get("code") or "?" for f in item.get("flags") or [] if isinstance(f, dict)]
        if codes:
            flagged.append(index)
            flags += len(codes)
            for code in codes:
                reason = reasons.setdefault(code, {"code": code, "count": 0, "first_index": index})
                reason["count"] += 1
                blocking += flag_blocks(code)
    return {
        "flagged": flagged,
        "flag_count": flags,
        "blocking_count": blocking,
        "advisory_count": flags - blocking,
        "omitted": omitted,
        "changed_by_hand": changed,
        "reasons": sorted(reasons.values(), key=lambda r: (-r["count"], r["code"])),
    }


def review_item_page_json(*, snapshot: ReviewSnapshot, start: int, count: int) -> str:
    """Items `start` to `start + count - 1` of a snapshot as a JSON document
    {start, total, version, items}, read from the few chunks that hold them.
    A request for exactly one chunk (what the grid asks for) is answered
    with the stored text, not decoded and encoded again."""
    end = min(start + count, snapshot.total)
    head = json.dumps({"start": start, "total": snapshot.total, "version": snapshot.version})[:-1]
    if start >= end:
        return head + ', "items": []}'
    numbers = range(start // SNAPSHOT_CHUNK, (end - 1) // SNAPSHOT_CHUNK + 1)
    chunks = list(
        ReviewChunk.objects.filter(snapshot=snapshot, number__in=numbers)
        .order_by("number")
        .values_list("items_json", flat=True)
    )
    first = numbers[0] * SNAPSHOT_CHUNK
    if len(chunks) == 1 and start == first and end == min(first + SNAPSHOT_CHUNK, snapshot.total):
        return head + ', "items": ' + chunks[0] + "}"
    items = [item for text in chunks for item in json.loads(text)][start - first : end - first]
    return head + ', "items": ' + json.dumps(items) + "}"


def review_source_rows(*, job: Job, sheet: str, row: int, around: int) -> dict:
    """The rows of `sheet` from `row - around` to `row + around` (1-based)."""
    first = max(1, row - around)
    with connection.cursor() as cursor:
        cursor.execute(_SOURCE_SQL, [first - 1, row + around - 1, job.pk, sheet])
        found = cursor.fetchone()
    if found is None:
        return {"sheet": sheet, "found": False, "first": first, "total": 0, "rows": []}
    _, total, rows = found
    return {
        "sheet": sheet,
        "found": True,
        "first": first,
        "total": total or 0,
        "rows": [[str(c) for c in r] if isinstance(r, list) else [] for r in _loaded(rows) or []],
    }


@dataclass
class FlagReason:
    code: str
    count: int
    first_index: int

    @property
    def name(self) -> str:
        """The registry's readable name (the code itself for one it does not know)."""
        return flag_name(self.code)

    @property
    def blocking(self) -> bool:
        return flag_blocks(self.code)

    @property
    def hint(self) -> str:
        try:
            return flag_type(self.code).hint
        except UnknownFlag:
            return ""


@dataclass
class ReviewPage:
    job: Job
    total: int
    flagged: list[int]
    reasons: list[FlagReason]
    flag_count: int
    blocking_count: int
    advisory_count: int
    omitted: int
    changed_by_hand: int
    sheets: list[str]
    currencies: list[tuple[str, str]]
    units: list[tuple[str, str]]  # (value, label) of every unit of catalog.units
    decisions: list[ReviewDecision]
    source: dict[str, str]
    notes: list[str]
    revision: CatalogRevision | None
    history: str


def review_flag_summary(*, snapshot: ReviewSnapshot) -> dict:
    """The snapshot's summary, reasons as objects the templates read."""
    summary = dict(snapshot.summary)
    summary["reasons"] = [FlagReason(**r) for r in summary.get("reasons") or []]
    return summary


def _blocking_counts(summary: dict) -> dict:
    """Blocking and advisory flags of a summary (older snapshots did not
    count them apart: counted from the reasons)."""
    if "blocking_count" in summary:
        return {"blocking_count": summary["blocking_count"], "advisory_count": summary["advisory_count"]}
    blocking = sum(r.count for r in summary["reasons"] if r.blocking)
    return {"blocking_count": blocking, "advisory_count": summary["flag_count"] - blocking}


def review_matching_indexes(*, snapshot: ReviewSnapshot, where: ItemFilter) -> list[int]:
    """The indexes of the snapshot's items `where` picks, read chunk by chunk."""
    out: list[int] = []
    for text in (
        ReviewChunk.objects.filter(snapshot=snapshot)
        .order_by("number")
        .values_list("items_json", flat=True)
        .iterator()
    ):
        out.extend(item["index"] for item in json.loads(text) if where.matches(item))
    return out


def review_page(*, job: Job, snapshot: ReviewSnapshot) -> ReviewPage:
    """What the detail page renders itself: the facts, the flag summary and
    the choices. The items and source rows are fetched by the grid in pages."""
    summary = review_flag_summary(snapshot=snapshot)
    total = snapshot.total
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT jobs_job.output->'notes' FROM {_JOB_TABLE} jobs_job WHERE id = %s", [job.pk])
        notes = cursor.fetchone()[0]
        cursor.execute(_SHEET_NAMES_SQL, [job.pk])
        names = _loaded(cursor.fetchone()[0]) or []
    revision = CatalogRevision.objects.filter(job_id=job.pk).select_related("supplier").first()
    return ReviewPage(
        job=job,
        total=total,
        flagged=summary["flagged"],
        reasons=summary["reasons"],
        flag_count=summary["flag_count"],
        omitted=summary["omitted"],
        **_blocking_counts(summary),
        changed_by_hand=summary["changed_by_hand"],
        sheets=[str(n) for n in names],
        currencies=currency_choices(),
        units=unit_choices(),
        decisions=list(ReviewDecision.objects.filter(job_id=job.pk).order_by("-pk")[:DECISIONS_SHOWN]),
        source=job_sources(jobs=[job])[job.pk],
        notes=[str(n) for n in (_loaded(notes) if isinstance(_loaded(notes), list) else [])][:NOTES_SHOWN],
        revision=revision,
        history=job_history_sentence(job=job),
    )


def review_grid_state(*, snapshot: ReviewSnapshot) -> dict:
    """What the grid redraws after a save without reloading the page: the
    version, the flagged runs and the flag summary (as the page renders it)."""
    summary = review_flag_summary(snapshot=snapshot)
    shown = {**summary, **_blocking_counts(summary), "total": snapshot.total}
    return {
        "version": snapshot.version,
        "total": snapshot.total,
        "flagged": index_ranges(summary["flagged"]),
        "summary_html": render_to_string("review/_summary.html", {"s": shown}),
    }
