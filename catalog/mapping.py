"""Column mappings: which column of which sheet holds which field (pure).

A mapping is plain data, the same over HTTP, in a job's payload and in a
remembered supplier layout::

    {"sheets": [{"sheet": "Sheet1", "header_row": 3 | None,
                 "columns": {"sku": "A", "description": "C", "unit": "D",
                             "pack_size": None, "unit_price": "F", "currency": None}}],
     "currency": "EUR" | None}

A price matrix is mapped with ``"matrix": {"row_labels": ["A"],
"column_header_rows": [3], "body": "B4:Z40", "dimension_unit": "cm"}``
instead of ``columns`` (catalog.extraction.matrix says what each field
means); its first column header row is its ``header_row``.

Column letters are a spreadsheet's, rows are 1-based. Only the sheets
listed are read. `currency` is the sheet's currency: it applies to every
price whose own cell, currency column or number format names none.

Here: checking a mapping against a table (the reviewer's words for what is
wrong), the header signature a remembered layout is matched by, and the
choice of how a job's table is read (`read_items`): a reviewer's mapping, a
remembered layout that fits, or columns inferred by the built-in extractor
(`catalog.extraction.extract`), which reads with whichever mapping it is given.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from catalog.currencies import is_active_currency
from catalog.errors import SheetError
from catalog.items import VALUE_FIELDS
from catalog.extraction import col_index, col_letter, extract, fold, parse_decimal
from catalog.extraction.matrix import matrix_parse
from catalog.reading import Sheet, Table

ROLES = VALUE_FIELDS  # a column is read as one of the item's values
OTHER = "other"
ROLE_LABELS = {
    "sku": "SKU",
    "description": "Description",
    "unit": "Unit",
    "pack_size": "Pack size",
    "unit_price": "Unit price",
    "currency": "Currency",
    OTHER: "not read",
}

MSG_NOT_OBJECT = "The mapping must be a JSON object with `sheets` (a list) and `currency`."
MSG_NO_SHEETS = "Name at least one sheet to read in `sheets`."
MSG_SHEET_NOT_OBJECT = (
    "Sheet {n}: each entry of `sheets` is an object with `sheet`, `header_row` and `columns`."
)
MSG_UNKNOWN_SHEET = "Sheet {name!r} does not exist in this file (its sheets: {names})."
MSG_SHEET_TWICE = "Sheet {name!r} is listed twice."
MSG_BAD_HEADER_ROW = (
    "Sheet {name!r}: `header_row` must be a row number from 1 to {rows}, "
    "or null when the sheet has no header row."
)
MSG_COLUMNS_NOT_OBJECT = "Sheet {name!r}: `columns` must be an object of role -> column letter."
MSG_UNKNOWN_ROLE = "Sheet {name!r}: unknown role {role!r}; the roles are {roles}."
MSG_BAD_LETTER = "Sheet {name!r}: {role} column {value!r} is not a column letter (A, B, ..., AA)."
MSG_NO_COLUMN = "Sheet {name!r}: {role} column {letter} does not exist (the sheet's last column is {last})."
MSG_COLUMN_TWICE = "Sheet {name!r}: column {letter} is given two roles ({roles})."
MSG_NO_PRICE = "Sheet {name!r}: name the unit price column (`unit_price`)."
MSG_NO_ITEM = "Sheet {name!r}: name a description column or a SKU column (or both)."
MSG_COLUMNS_AND_MATRIX = (
    "Sheet {name!r}: give either `columns` (an item list) or `matrix` (a price matrix), not both."
)
MSG_BAD_CURRENCY = "`currency` {value!r} is not an active ISO 4217 code (EUR, USD, ...), or null."

_LETTERS_RE = re.compile(r"^[A-Z]{1,3}$")
# How many data rows describe a headerless sheet's columns in its signature.
SIGNATURE_SAMPLE_ROWS = 20


class MappingInvalid(Exception):
    """The mapping cannot be applied to this table; `errors` says why, each in plain words."""

    def __init__(self, errors: list[str]):
        super().__init__(" ".join(errors))
        self.errors = errors


# ---------------------------------------------------------------- columns


def column_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA"."""
    return col_letter(index)


def column_index(letter: str) -> int:
    """ "A" -> 0, "AA" -> 26."""
    return col_index(letter)


def sheet_width(sheet: Sheet) -> int:
    return max((len(row) for row in sheet.rows), default=0)


# ---------------------------------------------------------------- parsing


def mapping_parse(data: Any, table: Table) -> dict:
    """The mapping, checked against the table and normalised (letters upper
    case, every role present). Raises MappingInvalid with every problem found."""
    if not isinstance(data, dict) or not isinstance(data.get("sheets"), list):
        raise MappingInvalid([MSG_NOT_OBJECT])
    errors: list[str] = []
    names = [s.name for s in table.sheets]
    currency = data.get("currency")
    if isinstance(currency, str):
        currency = currency.strip().upper() or None
    if currency is not None and not is_active_currency(currency):
        errors.append(MSG_BAD_CURRENCY.format(value=data.get("currency")))
    if not data["sheets"]:
        errors.append(MSG_NO_SHEETS)
    sheets, seen = [], set()
    for n, entry in enumerate(data["sheets"], start=1):
        if not isinstance(entry, dict):
            errors.append(MSG_SHEET_NOT_OBJECT.format(n=n))
            continue
        name = entry.get("sheet")
        sheet = table.sheet(name) if isinstance(name, str) else None
        if sheet is None:
            errors.append(MSG_UNKNOWN_SHEET.format(name=name, names=", ".join(map(repr, names))))
            continue
        if name in seen:
            errors.append(MSG_SHEET_TWICE.format(name=name))
            continue
        seen.add(name)
        parse = _matrix_sheet_parse if entry.get("matrix") is not None else _sheet_parse
        got = parse(entry, sheet, errors)
        if got is not None:
            sheets.append(got)
    if errors:
        raise MappingInvalid(errors)
    return {"sheets": sheets, "currency": currency}


def _matrix_sheet_parse(entry: dict, sheet: Sheet, errors: list[str]) -> dict | None:
    """A sheet mapped as a price matrix (catalog.extraction.matrix): its
    first column header row stands as the header row a layout is known by."""
    columns = entry.get("columns")
    if columns and (not isinstance(columns, dict) or any(columns.values())):
        errors.append(MSG_COLUMNS_AND_MATRIX.format(name=sheet.name))
        return None
    matrix, problems = matrix_parse(entry["matrix"], sheet)
    errors.extend(problems)
    if matrix is None:
        return None
    return {"sheet": sheet.name, "header_row": matrix["column_header_rows"][0], "matrix": matrix}


def _sheet_parse(entry: dict, sheet: Sheet, errors: list[str]) -> dict | None:
    name = sheet.name
    before = len(errors)
    header_row = entry.get("header_row")
    if header_row is not None and (
        isinstance(header_row, bool)
        or not isinstance(header_row, int)
        or not 1 <= header_row <= len(sheet.rows)
    ):
        errors.append(MSG_BAD_HEADER_ROW.format(name=name, rows=len(sheet.rows)))
    raw = entry.get("columns")
    if not isinstance(raw, dict):
        errors.append(MSG_COLUMNS_NOT_OBJECT.format(name=name))
        return None
    width = sheet_width(sheet)
    columns: dict[str, str | None] = {role: None for role in ROLES}
    for role, value in raw.items():
        if role not in ROLES:
            errors.append(MSG_UNKNOWN_ROLE.format(name=name, role=role, roles=", ".join(ROLES)))
            continue
        if value is None or value == "":
            continue
        letter = value.strip().upper() if isinstance(value, str) else value
        if not isinstance(letter, str) or not _LETTERS_RE.match(letter):
            errors.append(MSG_BAD_LETTER.format(name=name, role=role, value=value))
            continue
        if column_index(letter) >= width:
            errors.append(
                MSG_NO_COLUMN.format(
                    name=name, role=role, letter=letter, last=column_letter(width - 1) if width else "none"
                )
            )
            continue
        columns[role] = letter
    by_letter: dict[str, list[str]] = {}
    for role, letter in columns.items():
        if letter:
            by_letter.setdefault(letter, []).append(role)
    for letter, roles in by_letter.items():
        if len(roles) > 1:
            errors.append(MSG_COLUMN_TWICE.format(name=name, letter=letter, roles=", ".join(roles)))
    if not columns["unit_price"] and not any("unit_price" in e for e in errors[before:]):
        errors.append(MSG_NO_PRICE.format(name=name))
    if not columns["sku"] and not columns["description"]:
        errors.append(MSG_NO_ITEM.format(name=name))
    if len(errors) > before:
        return None
    return {"sheet": name, "header_row": header_row, "columns": columns}


# -------------------------------------------------------------- signatures


def _content_kind(text: str) -> str:
    if not text:
        return ""
    if parse_decimal(text) is not None:
        return "number"
    return "text"


def header_signature(sheet: Sheet, header_row: int | None) -> str:
    """A fingerprint of a sheet's layout: its name, its column count and its
    header cells (folded: case, accents and spacing do not count). A sheet
    without a header row is described by the kind of content of each column
    (number, text, empty) in its first rows instead."""
    width = sheet_width(sheet)
    if header_row is not None:
        cells = sheet.rows[header_row - 1] if header_row <= len(sheet.rows) else []
        header = [fold(c) for c in cells] + [""] * (width - len(cells))
        shape: list[str] = []
    else:
        header = []
        rows = [r for r in sheet.rows if any(r)][:SIGNATURE_SAMPLE_ROWS]
        shape = []
        for col in range(width):
            kinds = [_content_kind(r[col]) for r in rows if col < len(r) and r[col]]
            shape.append(max(sorted(set(kinds)), key=kinds.count) if kinds else "")
    data = {
        "sheet": fold(sheet.name),
        "width": width,
        "header_row": header_row,
        "header": header,
        "shape": shape,
    }
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()


def table_signature(mapping: dict, table: Table) -> str | None:
    """The signature of every sheet the mapping reads, in one value; None
    when a sheet it reads is missing from the table."""
    parts = []
    for entry in mapping["sheets"]:
        sheet = table.sheet(entry["sheet"])
        if sheet is None or (entry["header_row"] or 0) > len(sheet.rows):
            return None
        parts.append(header_signature(sheet, entry["header_row"]))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def layout_fits(mapping: dict, sheet_signatures: dict[str, str], table: Table) -> bool:
    """True when every sheet a remembered mapping reads is in the table with
    the same signature (name, column count, header cells) it had."""
    for entry in mapping.get("sheets") or []:
        sheet = table.sheet(entry["sheet"])
        header_row = entry.get("header_row")
        if sheet is None or (header_row or 0) > len(sheet.rows):
            return False
        if header_signature(sheet, header_row) != sheet_signatures.get(entry["sheet"]):
            return False
    return bool(mapping.get("sheets"))


# ------------------------------------------------- choosing how to read a sheet

MSG_MAPPING_GONE = "the column mapping set by {by} no longer fits the sheet: {errors}"
NOTE_REVIEWER = "columns mapped by {by} at {at}"
NOTE_REMEMBERED = (
    "read with the layout remembered for this supplier (sheets {sheets}), approved by {by} at {at}"
)
NOTE_CHANGED = (
    "the layout differs from the {count} remembered for this supplier (sheet names, "
    "column count or header cells changed): columns inferred"
)


@dataclass(frozen=True)
class Choice:
    """How a table is read: with `mapping` (None: inferred), the `layout` of
    the job status, and notes that say why."""

    mapping: dict | None
    layout: dict
    notes: list[str]


def choose_mapping(table: Table, *, given: dict | None, remembered: list[dict]) -> Choice:
    """A reviewer's mapping (`given`, from the job's payload) first; then the
    first remembered layout (newest first) whose signature fits the table;
    else inferred columns, saying so when remembered layouts no longer fit.

    `remembered` holds plain dicts: id, mapping, sheet_signatures, sheet_names,
    approved_by, approved_at. Raises SheetError when a reviewer's mapping no
    longer fits (the table is fixed, so only a changed table can cause it)."""
    if isinstance(given, dict):
        by, at = given.get("set_by"), given.get("set_at")
        try:
            mapping = mapping_parse(given, table)
        except MappingInvalid as exc:
            raise SheetError(MSG_MAPPING_GONE.format(by=by, errors=" ".join(exc.errors))) from exc
        return Choice(
            mapping,
            {"source": "reviewer", "approved_by": by, "approved_at": at},
            [NOTE_REVIEWER.format(by=by, at=at)],
        )
    for layout in remembered:
        if not layout_fits(layout["mapping"], layout["sheet_signatures"], table):
            continue
        try:
            mapping = mapping_parse(layout["mapping"], table)
        except MappingInvalid:
            continue
        by, at = layout["approved_by"], layout["approved_at"]
        return Choice(
            mapping,
            {"source": "remembered", "approved_by": by, "approved_at": at, "layout_id": layout["id"]},
            [NOTE_REMEMBERED.format(sheets=layout["sheet_names"], by=by, at=at)],
        )
    notes = [NOTE_CHANGED.format(count=len(remembered))] if remembered else []
    return Choice(None, {"source": "inferred", "approved_by": None, "approved_at": None}, notes)


def mapping_decides(table: Table, *, given: dict | None, remembered: list[dict]) -> bool:
    """Whether the columns are taken as mapped (a reviewer's mapping, or a
    remembered layout that fits) rather than left to an extractor: then the
    built-in reader reads them as given, whichever extractor is configured."""
    if given is None and not remembered:
        return False
    try:
        return choose_mapping(table, given=given, remembered=remembered).mapping is not None
    except SheetError:
        return True  # reading with it says why the reviewer's mapping no longer fits


def read_items(table: Table, *, given: dict | None = None, remembered: list[dict] | None = None) -> dict:
    """Choose how to read the table and extract its items, not yet
    validated (`catalog.pipeline` validates them; pure, plain data out, so
    it crosses the parse child's process boundary): `items`, `notes`,
    `refusal` (why no sheet is an item list, or None), `report`: the
    status's `columns` (with each read sheet's header signature),
    `needs_confirmation` and `layout`; and `held`, the column doubt the
    extractor held back until validation says whether the file goes to a
    reviewer (`catalog.pipeline` shows it, `show_held_doubt`)."""
    choice = choose_mapping(table, given=given, remembered=remembered or [])
    extracted = extract(table, mapping=choice.mapping)
    for report in extracted.sheets:
        sheet = table.sheet(report.get("sheet"))
        header_row = report.get("header_row")
        if sheet is not None and report.get("status") == "read" and (header_row or 0) <= len(sheet.rows):
            report["signature"] = header_signature(sheet, header_row)
    refusal = extracted.refusal
    if refusal and choice.notes:
        refusal = " ".join([refusal.rstrip(".") + ".", *(n[0].upper() + n[1:] + "." for n in choice.notes)])
    return {
        "items": extracted.items,
        "notes": [*choice.notes, *extracted.notes],
        "refusal": refusal,
        "report": {
            "columns": extracted.sheets,
            "layout": choice.layout,
            # A mapping a person set or approved needs no confirmation.
            "needs_confirmation": extracted.needs_confirmation and choice.mapping is None,
        },
        "held": extracted.held,
    }
