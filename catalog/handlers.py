"""The `parse_sheet` job kind: read the stored sheet (checkpointed), extract
candidate items, validate them, and accept: clean output is published in
the accept's transaction, flagged output waits for a reviewer.

Reading, and for the built-in extractor extraction and validation too, run
in a limited child process (`catalog.sandbox`); the model extractor's calls
stay here, where the attempt records them."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from catalog.job_admin import sheet_file_html, sheet_output_html, sheet_supplier_text
from catalog.models import PriceSheet
from catalog.selectors import (
    sheet_items,
    sheet_job_page,
    sheet_job_review,
    sheet_status_fields,
)
from catalog.services import revision_publish, supplier_for_publication
from catalog.storage import sheet_read_bytes
from jobs.errors import PermanentError, TransientError
from jobs.registry import register

MSG_NO_ITEMS = "no item rows were found in the sheet: it is not an item list"


def _read_limits():
    from catalog.reading import ReadLimits

    return ReadLimits(max_sheets=settings.MAX_SHEETS, max_pages=settings.MAX_PAGES)


def _in_child(ctx, *, data: bytes | None, filename: str, table: dict | None, extract: bool,
              layouts: dict, extract_if_mapped: bool = False) -> dict:
    from catalog.errors import SheetError
    from catalog.sandbox import ParseLimits, ParserKilled, run_parse

    limits = ParseLimits(max_memory_mb=settings.PARSE_MAX_MEMORY_MB,
                         max_seconds=settings.PARSE_MAX_SECONDS)
    request = {"data": data, "filename": filename, "table": table, "extract": extract,
               "extract_if_mapped": extract_if_mapped, "read_limits": _read_limits(),
               "layouts": layouts, "max_output_mb": settings.PARSE_MAX_OUTPUT_MB}
    # A stopping worker releases the job before the child starts; once it
    # runs, only a lost lease (cancelled, expired, taken over) kills it, and
    # a stopping worker keeps the lease until the child answers.
    ctx.check()
    try:
        return run_parse(request, limits=limits, should_stop=ctx.check_lease)
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
    except ParserKilled as exc:
        raise TransientError(str(exc)) from exc
    # A child that crashed for no reason the input explains (ParserCrashed)
    # is unexpected: it propagates, and the job's retry policy decides.


def _model_extract(ctx, table) -> tuple[list[dict], list[str]]:
    from catalog.errors import ExtractionError, SheetError
    from catalog.llm import LLMConfig, extract_items_with_model

    config = LLMConfig(base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY,
                       model=settings.LLM_MODEL, timeout_seconds=settings.LLM_TIMEOUT_SECONDS)
    try:
        # Each call's request id and usage reach the attempt as the call
        # returns; a stopping worker releases the job only before a call.
        result = extract_items_with_model(
            table, config=config, before_call=ctx.check, on_call=ctx.record_provider_call,
            progress=lambda done, total: ctx.heartbeat(done, total),
        )
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
    except ExtractionError as exc:
        raise (TransientError if exc.transient else PermanentError)(exc.reason) from exc
    return result.items, [f"extracted by model {settings.LLM_MODEL}"]


def _layouts(ctx) -> dict:
    """What decides the columns: the reviewer's mapping in the payload, and
    the layouts remembered for the supplier (plain data for the child)."""
    from catalog.selectors import supplier_layouts_data

    given = ctx.payload.get("mapping")
    return {"given": given if isinstance(given, dict) else None,
            "remembered": supplier_layouts_data(supplier_id=ctx.payload.get("supplier_id"))}


def _mapped(layouts: dict, saved: dict) -> bool:
    from catalog.mapping import mapping_decides
    from catalog.reading import Table

    return mapping_decides(Table.from_json(saved), **layouts)


@dataclass(frozen=True)
class Extractor:
    """Where an extractor runs. One that runs `in_child` is pure and offline:
    the parse child reads, extracts and validates in one run. Any other
    extracts here, in the worker (its remote calls are recorded on the
    attempt), from the table the child read; a mapping that decides the
    columns still has the child read them as given."""

    in_child: bool
    extract: Callable[[Any, Any], tuple[list[dict], list[str]]] | None = None


# The extractors by the name the EXTRACTOR setting gives.
EXTRACTORS: dict[str, Extractor] = {
    "builtin": Extractor(in_child=True),
    "openai": Extractor(in_child=False, extract=_model_extract),
}


def _read(ctx, sheet: PriceSheet, extractor: Extractor, layouts: dict) -> tuple[dict, dict | None]:
    """The table (checkpointed) and, when the child extracted, its result.
    The parse child is started at most once per attempt: a first read
    extracts in the same run when the extractor or a mapping says so; a
    retry reuses the checkpointed table and starts a child only to extract."""
    saved = ctx.load_checkpoint("table")
    if saved is not None and not extractor.in_child and not _mapped(layouts, saved):
        return saved, None
    # A retry never reads the file again. From the sheets storage: a local
    # folder, or an object store.
    data = sheet_read_bytes(sheet.storage_path) if saved is None else None
    result = _in_child(ctx, data=data, filename=sheet.original_name, table=saved,
                       extract=extractor.in_child or saved is not None, layouts=layouts,
                       extract_if_mapped=True)
    del data
    if saved is None:
        saved = result["table"]
        ctx.checkpoint("table", saved)
    return saved, (result if "items" in result else None)


def _from_child(ctx, result: dict) -> tuple[list[dict], list[str], dict]:
    """Items, notes and the reading report the child extracted."""
    report = result["report"]
    if result["refusal"]:
        # Keep what was seen of the columns, so a reviewer can map them.
        ctx.checkpoint("columns", {**report, "notes": result["notes"]})
        raise PermanentError(result["refusal"])
    if not result["items"]:
        raise PermanentError(MSG_NO_ITEMS)
    return result["items"], result["notes"], report


def _from_extractor(ctx, extractor: Extractor, saved: dict) -> tuple[list[dict], list[str], dict]:
    from catalog.reading import Table
    from catalog.validation import check_model_items, validate_items

    table = Table.from_json(saved)
    items, notes = extractor.extract(ctx, table)
    if not items:
        raise PermanentError(MSG_NO_ITEMS)
    report = {"columns": [], "needs_confirmation": False,
              "layout": {"source": "inferred", "approved_by": None, "approved_at": None}}
    return validate_items(check_model_items(items, table), table), notes, report


def _supplier_made(ctx) -> None:
    """Make the supplier named at upload before the publishing transaction,
    in a short one of its own: the publication then holds no shared row
    while it writes its items (catalog.services.revision_publish)."""
    name = ctx.payload.get("supplier_name")
    if ctx.payload.get("supplier_id") is None and name and name.strip():
        supplier_for_publication(workspace_id=ctx.workspace_id, name=name)


def parse_sheet(ctx) -> None:
    from catalog.selectors import supplier_current_items
    from catalog.validation import needs_review, review_flags

    sheet = PriceSheet.objects.get(pk=ctx.payload["sheet_id"])
    layouts = _layouts(ctx)
    name = settings.EXTRACTOR
    extractor = EXTRACTORS[name]
    saved, result = _read(ctx, sheet, extractor, layouts)
    ctx.heartbeat()
    if result is not None:
        checked, notes, report = _from_child(ctx, result)
        name = "builtin"  # the built-in reader took the columns as given
    else:
        checked, notes, report = _from_extractor(ctx, extractor, saved)
    # Questions for a reviewer that need the supplier's current catalog.
    checked = review_flags(checked, previous=supplier_current_items(supplier_id=sheet.supplier_id),
                           ratio=settings.PRICE_CHANGE_REVIEW_RATIO)
    confirm, layout = report["needs_confirmation"], report["layout"]
    output = {"items": checked, "notes": notes, "extractor": name, "columns": report["columns"],
              "layout": layout, "needs_confirmation": confirm}
    # A reviewer's own mapping always comes back to them; columns inferred
    # without confidence wait for a reviewer to confirm them.
    review = needs_review(checked) or confirm or layout["source"] == "reviewer"
    if not review:
        _supplier_made(ctx)
    ctx.accept(output, needs_review=review, publish=lambda job: revision_publish(job=job))


register(
    "parse_sheet",
    status_fields=sheet_status_fields,
    items=sheet_items,
    admin_fields={"file": sheet_file_html, "supplier": sheet_supplier_text},
    admin_output=sheet_output_html,
    page_link=sheet_job_page,
    review_link=sheet_job_review,
)(parse_sheet)
