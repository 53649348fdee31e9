"""The column mapping page, `/review/<job id>/mapping/`.

A reviewer sees each sheet's first rows with the detected header row and the
role of every column above its cells, and can change the header row, any
column's role, which sheets are read and the sheet's currency. A sheet that
is a price matrix is read "as a matrix" instead: the columns of its row
labels, its column header row(s), its body and the unit of its dimensions
(catalog.extraction.matrix), proposed by the extractor when it saw one. Applying the
mapping sends the job back to the queue; it is read again with it and comes
back to review. Access is the review console's: reviewers and admins of the
job's workspace; other members get 403, anyone else a 404.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from catalog.extraction.matrix import counts_sentence
from catalog.mapping import OTHER, ROLE_LABELS, ROLES, MappingInvalid, column_letter, sheet_width
from catalog.selectors import job_reading_report
from catalog.services import SheetNotRead, job_table, pricesheet_mapping_apply
from jobs.models import REQUEUEABLE_STATES, Job
from jobs.services import InvalidTransition, VersionConflict
from catalog.currencies import currency_choices
from review.selectors import NotAReviewer, job_history_sentence, review_job_get

MSG_NOT_A_REVIEWER = "Only reviewers and admins of a workspace map the columns of its sheets."
MSG_APPLIED = (
    "Column mapping applied (version {version}): the sheet is being read again with it "
    "and comes back to review."
)
MSG_STALE = "Nothing was changed: the job changed since you opened the mapping page. {history}"
MSG_NOT_MAPPABLE = "Nothing was changed: the job is {state}, so its columns cannot be mapped now."
MSG_BAD_VERSION = "The form did not say which version of the job it was made from; reload the page."
MSG_ROLE_TWICE = "Sheet {name!r}: columns {first} and {second} are both marked {role}; choose one."
MSG_BAD_ROW = "Sheet {name!r}: the header row {value!r} is not a row number."
MSG_BAD_MATRIX_ROWS = (
    'Sheet {name!r}: the column header rows {value!r} are not row numbers (for example "3" or "2, 3").'
)
_LIST_SPLIT = re.compile(r"[\s,;+]+")

# Rows shown under the header row (and at least this many from the top).
PREVIEW_ROWS = 15


@dataclass
class MappedColumn:
    letter: str
    header: str
    role: str
    evidence: str
    confidence: float | None

    @property
    def confidence_text(self) -> str:
        return "" if self.confidence is None else f"{round(self.confidence * 100)}%"


@dataclass
class PreviewRow:
    number: int
    cells: list[str]
    is_header: bool


@dataclass
class MappedSheet:
    index: int
    name: str
    read: bool
    header_row: int | None
    columns: list[MappedColumn]
    rows: list[PreviewRow]
    total_rows: int
    skipped: str = ""
    mode: str = "columns"  # or "matrix"
    matrix: dict = field(default_factory=dict)  # the matrix form's fields, as the inputs show them
    matrix_summary: str = ""


@dataclass
class MappingPage:
    job: Job
    mappable: bool
    sheets: list[MappedSheet]
    currency: str
    currencies: list[tuple[str, str]]
    layout: dict | None
    notes: list[str]
    history: str
    has_table: bool
    errors: list[str] = field(default_factory=list)

    @property
    def roles(self) -> list[tuple[str, str]]:
        return [(OTHER, ROLE_LABELS[OTHER])] + [(r, ROLE_LABELS[r]) for r in ROLES]


def _job_or_deny(request: HttpRequest, job_id: uuid.UUID) -> Job:
    try:
        return review_job_get(user=request.user, job_id=job_id)
    except Job.DoesNotExist:
        raise Http404("No such job.") from None
    except NotAReviewer:
        raise PermissionDenied(MSG_NOT_A_REVIEWER) from None


def _current(job: Job) -> tuple[dict[str, dict], str, dict | None, list[str]]:
    """Per sheet: header row and roles by column letter, as the job was last
    read (or as the reviewer last set them); the sheet currency; the layout."""
    report = job_reading_report(job)
    by_sheet: dict[str, dict] = {}
    for entry in report["columns"] or []:
        if not isinstance(entry, dict):
            continue
        status = entry.get("status", "read")
        by_sheet[entry.get("sheet")] = {
            "read": status == "read",
            "header_row": entry.get("header_row"),
            "skipped": "" if status == "read" else (entry.get("reason") or status),
            "columns": {c.get("column"): c for c in entry.get("columns") or [] if isinstance(c, dict)},
            "matrix": entry.get("matrix") if isinstance(entry.get("matrix"), dict) else None,
            "as_matrix": status == "read" and entry.get("kind") == "matrix",
            "cells": entry.get("cells") if isinstance(entry.get("cells"), dict) else None,
        }
    given = (job.payload or {}).get("mapping")
    currency = ""
    if isinstance(given, dict):
        currency = given.get("currency") or ""
        chosen = {e["sheet"]: e for e in given.get("sheets") or [] if isinstance(e, dict)}
        for name, entry in by_sheet.items():
            entry["read"] = name in chosen
            if isinstance(chosen.get(name, {}).get("matrix"), dict):
                entry.update(matrix=chosen[name]["matrix"], as_matrix=True)
    output = job.output if isinstance(job.output, dict) else {}
    return by_sheet, currency, report["layout"], [str(n) for n in output.get("notes") or []]


def _matrix_inputs(matrix: dict | None) -> dict:
    """A matrix form as the page's inputs show it: lists written "A, B"."""
    matrix = matrix or {}

    def joined(value) -> str:
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")

    return {
        "row_labels": joined(matrix.get("row_labels")),
        "column_header_rows": joined(matrix.get("column_header_rows")),
        "body": str(matrix.get("body") or ""),
        "dimension_unit": str(matrix.get("dimension_unit") or ""),
        "product": str(matrix.get("product") or ""),
    }


def _posted_matrix(request: HttpRequest, prefix: str, name: str, errors: list[str]) -> dict:
    """The matrix form of one sheet, as typed (checked later against the table)."""
    field = prefix + "matrix-"
    labels = [t.upper() for t in _LIST_SPLIT.split(request.POST.get(field + "row_labels", "")) if t]
    raw_rows = request.POST.get(field + "column_header_rows", "")
    header_rows = []
    for text in (t for t in _LIST_SPLIT.split(raw_rows) if t):
        if not text.isdigit():
            errors.append(MSG_BAD_MATRIX_ROWS.format(name=name, value=raw_rows))
            break
        header_rows.append(int(text))
    return {
        "row_labels": labels,
        "column_header_rows": header_rows,
        "body": request.POST.get(field + "body", "").strip(),
        "dimension_unit": request.POST.get(field + "dimension_unit", "").strip() or None,
        "product": request.POST.get(field + "product", "").strip() or None,
    }


def mapping_page(*, job: Job, posted: dict | None = None, errors: list[str] | None = None) -> MappingPage:
    """Everything the page shows; `posted` (a mapping as the form sent it)
    replaces the stored choices when the form comes back with errors."""
    table = job_table(job_id=job.pk)
    by_sheet, currency, layout, notes = _current(job)
    if posted is not None:
        currency = posted.get("currency") or ""
    sheets: list[MappedSheet] = []
    for index, sheet in enumerate(table.sheets if table else []):
        known = by_sheet.get(sheet.name, {"read": False, "header_row": None, "columns": {}, "skipped": ""})
        read, header_row = known["read"], known["header_row"]
        roles = {letter: c.get("role", OTHER) for letter, c in known["columns"].items()}
        mode, matrix = ("matrix" if known.get("as_matrix") else "columns"), known.get("matrix")
        if posted is not None:
            mine = next((e for e in posted["sheets"] if e["sheet"] == sheet.name), None)
            read = mine is not None
            if mine is not None:
                header_row = mine["header_row"]
                roles = {letter: role for role, letter in (mine.get("columns") or {}).items() if letter}
                mode = "matrix" if "matrix" in mine else "columns"
                matrix = mine.get("matrix") or matrix
        width = sheet_width(sheet)
        header_cells = sheet.rows[header_row - 1] if header_row and header_row <= len(sheet.rows) else []
        columns = []
        for col in range(width):
            letter = column_letter(col)
            seen = known["columns"].get(letter, {})
            columns.append(
                MappedColumn(
                    letter=letter,
                    header=header_cells[col] if col < len(header_cells) else "",
                    role=roles.get(letter, OTHER) if roles.get(letter) in ROLES else OTHER,
                    evidence=str(seen.get("evidence") or ""),
                    confidence=seen.get("confidence")
                    if isinstance(seen.get("confidence"), (int, float))
                    else None,
                )
            )
        last = min(len(sheet.rows), max(PREVIEW_ROWS, (header_row or 0) + PREVIEW_ROWS))
        rows = [
            PreviewRow(
                number=n,
                cells=list(sheet.rows[n - 1]) + [""] * (width - len(sheet.rows[n - 1])),
                is_header=n == header_row,
            )
            for n in range(1, last + 1)
        ]
        cells = known.get("cells")
        sheets.append(
            MappedSheet(
                index=index,
                name=sheet.name,
                read=read,
                header_row=header_row,
                columns=columns,
                rows=rows,
                total_rows=len(sheet.rows),
                skipped=known.get("skipped", ""),
                mode=mode,
                matrix=_matrix_inputs(matrix),
                matrix_summary=counts_sentence(cells) if cells else "",
            )
        )
    if sheets and not any(s.read for s in sheets):
        sheets[0].read = True  # a refused sheet: start from the first one
    return MappingPage(
        job=job,
        mappable=job.state in REQUEUEABLE_STATES,
        sheets=sheets,
        currency=currency,
        currencies=currency_choices(),
        layout=layout,
        notes=notes,
        history=job_history_sentence(job=job),
        has_table=table is not None,
        errors=errors or [],
    )


def _posted_mapping(request: HttpRequest) -> tuple[dict, list[str]]:
    """The mapping as the form sent it (plain data, checked later against the table)."""
    errors: list[str] = []
    sheets = []
    n = 0
    while f"sheet-{n}-name" in request.POST:
        prefix = f"sheet-{n}-"
        n += 1
        if not request.POST.get(prefix + "read"):
            continue
        name = request.POST[prefix + "name"]
        if request.POST.get(prefix + "mode") == "matrix":
            sheets.append(
                {"sheet": name, "header_row": None, "matrix": _posted_matrix(request, prefix, name, errors)}
            )
            continue
        raw_row = request.POST.get(prefix + "header_row", "").strip()
        header_row = None
        if raw_row:
            try:
                header_row = int(raw_row)
            except ValueError:
                errors.append(MSG_BAD_ROW.format(name=name, value=raw_row))
        columns = {role: None for role in ROLES}
        for key, role in request.POST.items():
            if key.startswith(prefix + "col-") and role in ROLES:
                letter = key[len(prefix + "col-") :]
                if columns[role] is None:
                    columns[role] = letter
                else:
                    errors.append(
                        MSG_ROLE_TWICE.format(
                            name=name, first=columns[role], second=letter, role=ROLE_LABELS[role]
                        )
                    )
        sheets.append({"sheet": name, "header_row": header_row, "columns": columns})
    return {"sheets": sheets, "currency": request.POST.get("currency") or None}, errors


@login_required
@require_http_methods(["GET", "POST"])
def mapping(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = _job_or_deny(request, job_id)
    if request.method == "GET":
        return render(request, "review/mapping.html", {"page": mapping_page(job=job)})
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        messages.error(request, MSG_BAD_VERSION)
        return redirect("review:mapping", job_id=job_id)
    posted, errors = _posted_mapping(request)
    if not errors:
        try:
            new_version = pricesheet_mapping_apply(
                job_id=job_id, expected_version=version, data=posted, user=request.user
            )
        except MappingInvalid as exc:
            errors = exc.errors
        except SheetNotRead as exc:
            errors = [str(exc)]
        except VersionConflict:
            job.refresh_from_db()
            messages.error(
                request, MSG_STALE.format(history=job_history_sentence(job=job, since_version=version))
            )
            return redirect("review:mapping", job_id=job_id)
        except InvalidTransition as exc:
            messages.error(request, MSG_NOT_MAPPABLE.format(state=exc.state.replace("_", " ")))
            return redirect("review:mapping", job_id=job_id)
        else:
            messages.success(request, MSG_APPLIED.format(version=new_version))
            return redirect("jobs:detail", id=job_id)
    page = mapping_page(job=job, posted=posted, errors=errors)
    return render(request, "review/mapping.html", {"page": page}, status=422)
