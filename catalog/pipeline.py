"""The parse pipeline, in one place: read -> extract -> validate.

It runs whole in the parse child (`catalog.sandbox`), whichever extractor
the EXTRACTOR setting names (`catalog.extractors`), so validation always
runs there too. The job handler (`catalog.handlers.parse_sheet`) starts one
child per attempt, then asks the questions that need the supplier's
catalog and accepts.

Pure: bytes and plain data in, plain data out, and what the child must tell
the job as it goes through ``link`` (the table as soon as it is read, so a
failure after reading keeps it as a checkpoint; each model call's billing
record; progress). Raises ``SheetError`` for bad input and
``ExtractionError`` when a model call fails.
"""

from __future__ import annotations

from typing import Any, Protocol

from catalog.errors import UnreadableSheet
from catalog.extractors import EXTRACTORS, Calls, ModelEndpoint
from catalog.reading import ReadLimits, Table, read_bytes

NO_LAYOUTS = {"given": None, "remembered": []}
MSG_OUTPUT = (
    "this sheet expands to more than {mb} MB of text once read (cells that repeat "
    "one value by reference, or very long values); split it into smaller files "
    "or remove the repeated text"
)


class Link(Calls, Protocol):
    def table(self, data: dict) -> None:
        """The table, read: the job checkpoints it at once."""


def read_extract_validate(
    *,
    data: bytes | None,
    filename: str,
    table: dict | None,
    read_limits: ReadLimits,
    extractor: str | None,
    link: Link,
    layouts: dict | None = None,
    endpoint: ModelEndpoint | None = None,
    max_output_mb: int | None = None,
) -> dict:
    """Read the sheet (unless ``table``, a checkpoint, is given; a fresh
    table goes to ``link.table``), then, unless ``extractor`` is None,
    extract with that extractor and validate.

    ``layouts`` (``{"given": reviewer's mapping | None, "remembered": [...]}``):
    when one decides the columns, the built-in extractor reads them as given
    whatever ``extractor`` says (`catalog.mapping.mapping_decides`).

    Returns ``{}`` for a read alone, else ``items`` (validated), ``notes``,
    ``refusal`` (why no sheet is an item list), ``report`` (the columns
    report, the layout, whether to confirm it) and ``extractor`` (the name
    of the one that ran). The table and the items, as written out, are each
    measured against ``max_output_mb``."""
    parsed = (
        Table.from_json(table)
        if table is not None
        else read_bytes(data, filename=filename, limits=read_limits)
    )
    del data
    if table is None:
        check_output_size(table_size(parsed), max_output_mb)
        link.table(parsed.to_json())
    if extractor is None:
        return {}
    chosen = _extractor_for(parsed, extractor, layouts or NO_LAYOUTS)
    result = chosen.extract(parsed, layouts=layouts or NO_LAYOUTS, endpoint=endpoint, calls=link)
    result["items"] = _validated(chosen.check(result["items"], parsed), parsed)
    _show_held_doubt(result)
    result["extractor"] = chosen.name
    check_output_size(value_size(result["items"]), max_output_mb)
    return result


def _extractor_for(table: Table, name: str, layouts: dict):
    from catalog.mapping import mapping_decides

    if mapping_decides(table, **layouts):
        # A mapping a person set or approved: its columns are read as given.
        return EXTRACTORS["builtin"]
    return EXTRACTORS[name]


def _show_held_doubt(result: dict) -> None:
    """The column doubt the built-in extractor held back, shown on a file that goes to a
    reviewer anyway: an item flagged by validation or repeated at another price
    (`catalog.extraction.show_held_doubt`)."""
    from catalog.extraction import show_held_doubt
    from catalog.validation import needs_review, review_flags

    held = result.pop("held", None)
    report = result.get("report") or {}
    if held and show_held_doubt(
        held, report.get("columns") or [], result["items"], review=needs_review(review_flags(result["items"]))
    ):
        report["needs_confirmation"] = True


def _validated(items: list[dict], table: Table) -> list[dict]:
    from catalog.validation import validate_items

    return validate_items(items, table) if items else []


# --- the output budget -----------------------------------------------------------
#
# Reading is bounded by what the child may use, but a cell repeated by
# reference (one shared string named by thousands of cells) costs the child
# a pointer per cell and everyone after it the whole text per cell: the
# checkpoint, the job output, the catalog rows, every page and export. So the
# child measures its result as it will be written out, and refuses it when
# it is over PARSE_MAX_OUTPUT_MB.

CELL_OVERHEAD = 3  # quotes and a comma per cell once written as JSON


def table_size(table: Table) -> int:
    """Characters the table takes once written out (cells and their quoting)."""
    total = 0
    for sheet in table.sheets:
        for row in sheet.rows:
            total += sum(map(len, row)) + CELL_OVERHEAD * len(row) + 2
        for key, raw in sheet.raw.items():
            total += len(key) + len(str(raw.get("value", ""))) + 24
    return total


def value_size(value: Any) -> int:
    """Characters a plain JSON-like value takes once written out (about)."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(len(str(k)) + 4 + value_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 2 + sum(value_size(v) + 1 for v in value)
    return len(str(value))


def check_output_size(size: int, max_output_mb: int | None) -> None:
    """Refuse a result past the budget, with the reason an uploader reads."""
    if max_output_mb and size > max_output_mb * 1024 * 1024:
        raise UnreadableSheet(MSG_OUTPUT.format(mb=max_output_mb))
