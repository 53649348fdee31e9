"""The `parse_sheet` job kind: read the stored sheet (checkpointed), extract
candidate items, validate them, and accept: clean output is published in
the accept's transaction, flagged output waits for a reviewer."""

from django.conf import settings

from catalog.models import PriceSheet
from catalog.services import revision_publish, sheet_path
from jobs.errors import PermanentError, TransientError
from jobs.registry import register


def _read(ctx, sheet: PriceSheet):
    from catalog.errors import SheetError
    from catalog.reading import Table, read_table

    saved = ctx.load_checkpoint("table")
    if saved is not None:
        return Table.from_json(saved)
    try:
        table = read_table(sheet_path(sheet), filename=sheet.original_name)
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
    ctx.checkpoint("table", table.to_json())
    return table


def _extract(ctx, table) -> tuple[list[dict], list[str]]:
    from catalog.errors import ExtractionError, SheetError

    try:
        if settings.EXTRACTOR == "openai":
            from catalog.llm import LLMConfig, extract_items_with_model

            config = LLMConfig(base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY,
                               model=settings.LLM_MODEL, timeout_seconds=settings.LLM_TIMEOUT_SECONDS)
            # Each call's request id and usage reach the attempt as the call
            # returns; a stopping worker releases the job only before a call.
            result = extract_items_with_model(
                table, config=config, before_call=ctx.check, on_call=ctx.record_provider_call,
                progress=lambda done, total: ctx.heartbeat(done, total),
            )
            return result.items, [f"extracted by model {settings.LLM_MODEL}"]
        from catalog.extraction import extract_items

        result = extract_items(table)
        return result.items, list(result.notes)
    except SheetError as exc:
        raise PermanentError(exc.reason) from exc
    except ExtractionError as exc:
        raise (TransientError if exc.transient else PermanentError)(exc.reason) from exc


@register("parse_sheet")
def parse_sheet(ctx) -> None:
    from catalog.validation import needs_review, validate_items

    sheet = PriceSheet.objects.get(pk=ctx.payload["sheet_id"])
    table = _read(ctx, sheet)
    ctx.heartbeat()
    items, notes = _extract(ctx, table)
    if not items:
        raise PermanentError("no item rows were found in the sheet: it is not an item list")
    checked = validate_items(items, table)
    output = {"items": checked, "notes": notes, "extractor": settings.EXTRACTOR}
    ctx.accept(output, needs_review=needs_review(checked),
               publish=lambda job: revision_publish(job=job))
