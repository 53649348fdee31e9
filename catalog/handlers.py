"""The `parse_sheet` job kind, one straight pipeline: read the stored sheet,
extract candidate items, validate them (all three in one limited parse
child, `catalog.pipeline`, whichever extractor the EXTRACTOR setting names:
`catalog.extractors`), ask what needs the supplier's current catalog, and
accept: clean output is published in the accept's transaction, flagged
output waits for a reviewer.

The child tells this process as it goes: the table as soon as it is read
(checkpointed, so a retry never reads the file again), and a model
extractor's calls (each call's request id and usage kept on the attempt as
it returns; a stopping worker releases the job only before a call)."""

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
# Beyond the model client's own timeout, what one call may take before the
# parent gives up on the child.
CALL_MARGIN_SECONDS = 5.0


def _layouts(ctx) -> dict:
    """What decides the columns: the reviewer's mapping in the payload, and
    the layouts remembered for the supplier (plain data for the child)."""
    from catalog.selectors import supplier_layouts_data

    given = ctx.payload.get("mapping")
    return {
        "given": given if isinstance(given, dict) else None,
        "remembered": supplier_layouts_data(supplier_id=ctx.payload.get("supplier_id")),
    }


def _endpoint():
    """The model endpoint, for an extractor that calls one (None otherwise:
    the child then has no network at all)."""
    from catalog.extractors import EXTRACTORS, ModelEndpoint

    if not EXTRACTORS[settings.EXTRACTOR].remote:
        return None
    return ModelEndpoint(
        base_url=settings.LLM_BASE_URL,
        api_key=settings.LLM_API_KEY,
        model=settings.LLM_MODEL,
        timeout_seconds=settings.LLM_TIMEOUT_SECONDS,
    )


def _read_extract_validate(ctx, sheet: PriceSheet) -> dict:
    """One parse child: the table (from the checkpoint, or read from the
    file and checkpointed as soon as it is), the extractor's items, validated."""
    from catalog.errors import ExtractionError, SheetError
    from catalog.reading import ReadLimits
    from catalog.sandbox import ParseLimits, ParserKilled, run_parse

    saved = ctx.load_checkpoint("table")
    endpoint = _endpoint()
    limits = ParseLimits(
        max_memory_mb=settings.PARSE_MAX_MEMORY_MB,
        max_seconds=settings.PARSE_MAX_SECONDS,
        call_seconds=settings.LLM_TIMEOUT_SECONDS + CALL_MARGIN_SECONDS if endpoint else 0.0,
    )
    # A retry never reads the file again. From the sheets storage: a local
    # folder, or an object store.
    request = {
        "data": sheet_read_bytes(sheet.storage_path) if saved is None else None,
        "filename": sheet.original_name,
        "table": saved,
        "extractor": settings.EXTRACTOR,
        "layouts": _layouts(ctx),
        "endpoint": endpoint,
        "max_output_mb": settings.PARSE_MAX_OUTPUT_MB,
        "read_limits": ReadLimits(max_sheets=settings.MAX_SHEETS, max_pages=settings.MAX_PAGES),
    }
    events = {
        "table": lambda table: ctx.checkpoint("table", table),
        "before_call": ctx.check,
        "on_call": ctx.record_provider_call,
        "progress": lambda done, total: ctx.heartbeat(done, total),
    }
    # A stopping worker releases the job before the child starts; once it
    # runs, only a lost lease (cancelled, expired, taken over) kills it, a
    # stopping worker keeps the lease until the child answers, and releases
    # the job only before a model call.
    ctx.check()
    try:
        return run_parse(request, limits=limits, should_stop=ctx.check_lease, on_event=events)
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
    except ExtractionError as exc:
        raise (TransientError if exc.transient else PermanentError)(exc.reason) from exc
    except ParserKilled as exc:
        raise TransientError(str(exc)) from exc
    # A child that crashed for no reason the input explains (ParserCrashed)
    # is unexpected: it propagates, and the job's retry policy decides.


def _usable(ctx, result: dict) -> None:
    """Refuse a result that holds no items, with the reason."""
    if result["refusal"]:
        # Keep what was seen of the columns, so a reviewer can map them.
        ctx.checkpoint("columns", {**result["report"], "notes": result["notes"]})
        raise PermanentError(result["refusal"])
    if not result["items"]:
        raise PermanentError(MSG_NO_ITEMS)


def _supplier_made(ctx) -> None:
    """Make the supplier named at upload before the publishing transaction,
    in a short one of its own: the publication then holds no shared row
    while it writes its items (catalog.services.revision_publish)."""
    name = ctx.payload.get("supplier_name")
    if ctx.payload.get("supplier_id") is None and name and name.strip():
        supplier_for_publication(workspace_id=ctx.workspace_id, name=name)


def _warm_up() -> None:
    from catalog.sandbox import warm_up

    warm_up(remote=_endpoint() is not None)


def parse_sheet(ctx) -> None:
    from catalog.selectors import supplier_current_items
    from catalog.validation import needs_review, review_flags

    sheet = PriceSheet.objects.get(pk=ctx.payload["sheet_id"])
    # Read -> extract -> validate.
    result = _read_extract_validate(ctx, sheet)
    ctx.heartbeat()
    _usable(ctx, result)
    # Questions for a reviewer that need the supplier's current catalog.
    checked = review_flags(
        result["items"],
        previous=supplier_current_items(supplier_id=sheet.supplier_id),
        ratio=settings.PRICE_CHANGE_REVIEW_RATIO,
    )
    report = result["report"]
    confirm, layout = report["needs_confirmation"], report["layout"]
    output = {
        "items": checked,
        "notes": result["notes"],
        "extractor": result["extractor"],
        "columns": report["columns"],
        "layout": layout,
        "needs_confirmation": confirm,
    }
    # A reviewer's own mapping always comes back to them; columns inferred
    # without confidence wait for a reviewer to confirm them.
    review = needs_review(checked) or confirm or layout["source"] == "reviewer"
    # Accept.
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
    warm_up=_warm_up,
)(parse_sheet)
