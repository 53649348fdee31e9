"""A column mapping: which row is the header and which column holds each role.

Plain data, as a reviewer sends it or a remembered layout stores it::

    {"sheets": [{"sheet": "Sheet1", "header_row": 3 or None,
                 "columns": {"sku": "A", "description": "C", "unit": "D",
                             "pack_size": None, "unit_price": "F", "currency": None}}],
     "currency": "EUR" or None}

A price matrix is mapped by ``"matrix": {...}`` instead of ``columns``
(``catalog.extraction.matrix``). Columns are spreadsheet letters, rows 1-based. ``mapping_errors`` says, in
words, what makes a mapping impossible for a table (the API answers 422).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import re

from catalog.errors import SheetError
from catalog.items import VALUE_FIELDS
from catalog.extraction.matrix import matrix_parse
from catalog.extraction.text import col_index

if TYPE_CHECKING:  # the reader imports this package; only types flow back
    from catalog.reading import Sheet, Table

MAPPED_ROLES = VALUE_FIELDS  # a column is read as one of the item's values
_ISO = re.compile(r"[A-Z]{3}")


class MappingError(SheetError):
    """The mapping cannot be applied to this table; ``errors`` says why."""

    def __init__(self, errors: list[str]):
        super().__init__("the column mapping cannot be applied: " + "; ".join(errors))
        self.errors = errors


def _sheet_errors(entry, table: Table) -> list[str]:
    if not isinstance(entry, dict):
        return ["each sheet of the mapping must be an object"]
    name = entry.get("sheet")
    sheet = table.sheet(name) if isinstance(name, str) else None
    if sheet is None:
        return [f"the file has no sheet {name!r}"]
    if entry.get("matrix") is not None:
        return matrix_parse(entry["matrix"], sheet)[1]
    errors = []
    row = entry.get("header_row")
    if row is not None and (
        isinstance(row, bool) or not isinstance(row, int) or not 1 <= row <= len(sheet.rows)
    ):
        errors.append(f"sheet {name!r}: header row {row!r} is not a row of the sheet (1-{len(sheet.rows)})")
    columns = entry.get("columns")
    if not isinstance(columns, dict):
        return errors + [f"sheet {name!r}: 'columns' must be an object of role: column letter"]
    width = max((len(r) for r in sheet.rows), default=0)
    for role, letters in columns.items():
        if role not in MAPPED_ROLES:
            errors.append(f"sheet {name!r}: unknown role {role!r} (roles: {', '.join(MAPPED_ROLES)})")
        elif letters is not None:
            col = col_index(letters) if isinstance(letters, str) else None
            if col is None or col >= width:
                errors.append(f"sheet {name!r}: column {letters!r} for {role} does not exist")
    if not columns.get("unit_price"):
        errors.append(f"sheet {name!r}: the mapping names no price column")
    if not (columns.get("description") or columns.get("sku")):
        errors.append(f"sheet {name!r}: the mapping names no description or SKU column")
    return errors


def mapping_errors(mapping, table: Table) -> list[str]:
    """Everything that makes ``mapping`` impossible for ``table``; [] when it applies."""
    if not isinstance(mapping, dict) or not isinstance(mapping.get("sheets"), list) or not mapping["sheets"]:
        return ["the mapping must list at least one sheet"]
    currency = mapping.get("currency")
    errors = []
    if currency is not None and not (isinstance(currency, str) and _ISO.fullmatch(currency)):
        errors.append(f"currency {currency!r} is not an ISO 4217 code")
    for entry in mapping["sheets"]:
        errors += _sheet_errors(entry, table)
    names = [e.get("sheet") for e in mapping["sheets"] if isinstance(e, dict)]
    if len(names) != len(set(map(str, names))):
        errors.append("a sheet is listed twice")
    return errors


def sheet_mapping(mapping: dict, sheet: Sheet) -> dict | None:
    """{"header_row", "columns": role -> 0-based column or None} for ``sheet``; None if not listed."""
    for entry in mapping.get("sheets") or []:
        if isinstance(entry, dict) and entry.get("sheet") == sheet.name:
            if isinstance(entry.get("matrix"), dict):
                return {"header_row": entry.get("header_row"), "matrix": entry["matrix"]}
            columns = entry.get("columns") or {}
            out = {role: (col_index(columns[role]) if columns.get(role) else None) for role in MAPPED_ROLES}
            if out["unit_price"] is None or (out["description"] is None and out["sku"] is None):
                raise MappingError(
                    [f"sheet {sheet.name!r}: a mapping needs a price column and a description or SKU column"]
                )
            return {"header_row": entry.get("header_row"), "columns": out}
    return None
