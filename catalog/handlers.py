"""The `parse_sheet` job kind: read the stored sheet (checkpointed), extract
candidate items, validate them, and accept: clean output is published in
the accept's transaction, flagged output waits for a reviewer.

Reading, and for the built-in extractor extraction and validation too, run
in a limited child process (`catalog.sandbox`); the model extractor's calls
stay here, where the attempt records them."""

from django.conf import settings

from catalog.models import PriceSheet
from catalog.services import revision_publish
from catalog.storage import sheet_read_bytes
from jobs.errors import PermanentError, TransientError
from jobs.registry import register

MSG_NO_ITEMS = "no item rows were found in the sheet: it is not an item list"


def _read_limits():
    from catalog.reading import ReadLimits

    return ReadLimits(max_sheets=settings.MAX_SHEETS)


def _in_child(ctx, *, data: bytes | None, filename: str, table: dict | None, extract: bool,
              mapping: dict | None) -> dict:
    from catalog.errors import SheetError
    from catalog.sandbox import ParseLimits, run_parse

    limits = ParseLimits(max_memory_mb=settings.PARSE_MAX_MEMORY_MB,
                         max_seconds=settings.PARSE_MAX_SECONDS)
    request = {"data": data, "filename": filename, "table": table, "extract": extract,
               "mapping": mapping, "read_limits": _read_limits()}
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


@register("parse_sheet")
def parse_sheet(ctx) -> None:
    from catalog.reading import Table
    from catalog.validation import needs_review, validate_items

    sheet = PriceSheet.objects.get(pk=ctx.payload["sheet_id"])
    builtin = settings.EXTRACTOR == "builtin"
    saved = ctx.load_checkpoint("table")
    result = None
    if saved is None or builtin:
        # A retry reuses the checkpointed table and never reads the file again.
        # From the sheets storage: a local folder, or an object store.
        data = sheet_read_bytes(sheet.storage_path) if saved is None else None
        result = _in_child(ctx, data=data, filename=sheet.original_name, table=saved, extract=builtin,
                           mapping=ctx.payload.get("mapping"))
        del data
        if saved is None:
            saved = result["table"]
            ctx.checkpoint("table", saved)
    ctx.heartbeat()
    if builtin:
        checked, notes, report = result["items"], result["notes"], result["report"]
        if not checked:
            raise PermanentError(result["refusal"] or MSG_NO_ITEMS)
    else:
        table = Table.from_json(saved)
        items, notes = _model_extract(ctx, table)
        if not items:
            raise PermanentError(MSG_NO_ITEMS)
        checked, report = validate_items(items, table), {}
    output = {"items": checked, "notes": notes, "extractor": settings.EXTRACTOR, **report}
    # A column mapping the extractor is unsure of waits for a reviewer's
    # confirmation even when no item carries a flag.
    review = needs_review(checked) or bool(report.get("needs_confirmation"))
    ctx.accept(output, needs_review=review,
               publish=lambda job: revision_publish(job=job))
