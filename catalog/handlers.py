"""The `parse_sheet` job kind: read the stored sheet (checkpointed), extract
candidate items, validate them, and accept: clean output is published in
the accept's transaction, flagged output waits for a reviewer.

Reading, and for the built-in extractor extraction and validation too, run
in a limited child process (`catalog.sandbox`); the model extractor's calls
stay here, where the attempt records them."""

from django.conf import settings

from catalog.models import PriceSheet
from catalog.errors import SheetError
from catalog.services import revision_publish
from catalog.storage import sheet_read_bytes
from jobs.errors import PermanentError, TransientError
from jobs.registry import register

MSG_NO_ITEMS = "no item rows were found in the sheet: it is not an item list"


def _read_limits():
    from catalog.reading import ReadLimits

    return ReadLimits(max_sheets=settings.MAX_SHEETS, max_pages=settings.MAX_PAGES)


def _in_child(ctx, *, data: bytes | None, filename: str, table: dict | None, extract: bool,
              layouts: dict) -> dict:
    from catalog.errors import SheetError
    from catalog.sandbox import ParseLimits, run_parse

    limits = ParseLimits(max_memory_mb=settings.PARSE_MAX_MEMORY_MB,
                         max_seconds=settings.PARSE_MAX_SECONDS)
    request = {"data": data, "filename": filename, "table": table, "extract": extract,
               "read_limits": _read_limits(), "layouts": layouts}
    # A stopping worker releases the job before the child starts; once it
    # runs, only a lost lease (cancelled, expired, taken over) kills it, and
    # a stopping worker keeps the lease until the child answers.
    ctx.check()
    try:
        return run_parse(request, limits=limits, should_stop=ctx.check_lease)
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
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
    """Whether the table is read with a mapping (a reviewer's, or a
    remembered layout that fits): then the built-in reader takes the columns
    as given, whichever extractor is configured."""
    from catalog.mapping import choose_mapping
    from catalog.reading import Table

    if layouts["given"] is None and not layouts["remembered"]:
        return False
    try:
        return choose_mapping(Table.from_json(saved), **layouts).mapping is not None
    except SheetError:
        return True  # the child says why the reviewer's mapping no longer fits


@register("parse_sheet")
def parse_sheet(ctx) -> None:
    from catalog.reading import Table
    from catalog.selectors import supplier_current_items
    from catalog.validation import check_model_items, needs_review, review_flags, validate_items

    sheet = PriceSheet.objects.get(pk=ctx.payload["sheet_id"])
    layouts = _layouts(ctx)
    builtin = settings.EXTRACTOR == "builtin"
    saved = ctx.load_checkpoint("table")
    result = None
    if saved is None or builtin:
        # A retry reuses the checkpointed table and never reads the file again.
        # From the sheets storage: a local folder, or an object store.
        data = sheet_read_bytes(sheet.storage_path) if saved is None else None
        result = _in_child(ctx, data=data, filename=sheet.original_name, table=saved,
                           extract=builtin, layouts=layouts)
        del data
        if saved is None:
            saved = result["table"]
            ctx.checkpoint("table", saved)
    if not builtin and _mapped(layouts, saved):
        result = _in_child(ctx, data=None, filename=sheet.original_name, table=saved,
                           extract=True, layouts=layouts)
    ctx.heartbeat()
    if result is not None and "items" in result:
        report = result["report"]
        if result["refusal"]:
            # Keep what was seen of the columns, so a reviewer can map them.
            ctx.checkpoint("columns", {**report, "notes": result["notes"]})
            raise PermanentError(result["refusal"])
        checked, notes = result["items"], result["notes"]
        columns, layout = report["columns"], report["layout"]
        confirm = report["needs_confirmation"]
        extractor = "builtin"
        if not checked:
            raise PermanentError(MSG_NO_ITEMS)
    else:
        table = Table.from_json(saved)
        items, notes = _model_extract(ctx, table)
        if not items:
            raise PermanentError(MSG_NO_ITEMS)
        checked = validate_items(check_model_items(items, table), table)
        columns, confirm, extractor = [], False, settings.EXTRACTOR
        layout = {"source": "inferred", "approved_by": None, "approved_at": None}
    # Questions for a reviewer that need the supplier's current catalog.
    checked = review_flags(checked, previous=supplier_current_items(supplier_id=sheet.supplier_id),
                           ratio=settings.PRICE_CHANGE_REVIEW_RATIO)
    output = {"items": checked, "notes": notes, "extractor": extractor, "columns": columns,
              "layout": layout, "needs_confirmation": confirm}
    # A reviewer's own mapping always comes back to them; columns inferred
    # without confidence wait for a reviewer to confirm them.
    review = needs_review(checked) or confirm or layout["source"] == "reviewer"
    ctx.accept(output, needs_review=review, publish=lambda job: revision_publish(job=job))
