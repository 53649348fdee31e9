"""The model-backed extractor: any OpenAI-compatible endpoint, strict JSON schema.

No hidden retries (``max_retries=0``): the job's retry policy decides, using
the error's ``transient``. Each call's provider request id and token usage
are handed to ``on_call`` the moment the call returns (and returned too), so
the job keeps them on its ``Attempt`` even if a later chunk fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Callable

import openai
from pydantic import ValidationError

from catalog.errors import ProviderRejectedError, ProviderTransientError
from catalog.extraction import plain_decimal
from catalog.items import MODEL_FIELDS, MODEL_SOURCE_FIELDS, ModelItem, model_answer_schema
from catalog.reading import Table

MSG_TIMEOUT = "the model endpoint did not answer within {timeout}s"
MSG_CONNECTION = "cannot reach the model endpoint: {detail}"
MSG_STATUS = "the model endpoint answered HTTP {status}: {detail}"
MSG_REFUSAL = "the model refused: {detail}"
MSG_TRUNCATED = "the model's answer was cut off (finish_reason={reason}); use smaller chunks"
MSG_NOT_JSON = "the model's answer is not JSON: {detail}"
MSG_SCHEMA = "the model's answer does not match the item schema: {detail}"

# The model's answer {"items": [item, ...]}: the item's values and its cited
# {sheet, row}, strict (catalog.items).
ITEM_SCHEMA: dict = model_answer_schema()

SYSTEM_PROMPT = """You extract the items of a supplier price sheet.
The user sends rows as 'row N: cell | cell | ...' under 'Sheet: NAME'.
Return every item row (a product or service with a price) as JSON matching the schema:
- source.sheet is the sheet name and source.row the row number N exactly as given;
- unit_price is the unit price as a plain decimal string ('1234.50'), copied from that row;
- currency is an ISO 4217 code only if the sheet states it (symbol, code, header or note); otherwise null, never guess;
- unit is the unit of sale as written, or null; pack_size is the count per pack, or null;
- skip headers, titles, section headings, blank and total rows.
Only return items from the rows marked 'EXTRACT'; rows marked 'CONTEXT' are there to show headers and notes."""

HEADER_CONTEXT_ROWS = 15


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout_seconds: float = 60.0
    chunk_rows: int = 200


@dataclass(frozen=True)
class ModelExtraction:
    items: list[dict]
    calls: list[dict]


def _render(rows: list[list[str]], first_row: int) -> str:
    return "\n".join(
        f"row {first_row + i}: " + " | ".join(cell.replace("\n", " ") for cell in row)
        for i, row in enumerate(rows)
        if row
    )


def _chunks(table: Table, chunk_rows: int):
    """(sheet name, prompt) per chunk; later chunks repeat the sheet's first rows as context."""
    for sheet in table.sheets:
        n = len(sheet.rows)
        for start in range(0, n, chunk_rows):
            parts = [f"Sheet: {sheet.name}"]
            if start > 0:
                context = sheet.rows[: min(HEADER_CONTEXT_ROWS, start)]
                parts += ["CONTEXT (do not extract):", _render(context, 1)]
            parts += ["EXTRACT:", _render(sheet.rows[start : start + chunk_rows], start + 1)]
            yield sheet.name, "\n".join(parts)


_KINDS = {
    "string_type": "a string",
    "float_type": "a number",
    "int_type": "an integer",
    "greater_than_equal": "positive",
}


def _check_item(i: int, item) -> None:
    def fail(msg: str):
        raise ValueError(f"items[{i}]: {msg}")

    if not isinstance(item, dict):
        fail("not an object")
    expected = set(MODEL_FIELDS)
    if set(item) != expected:
        fail(f"keys {sorted(item)} != {sorted(expected)}")
    src = item["source"]
    if not isinstance(src, dict) or set(src) != set(MODEL_SOURCE_FIELDS):
        fail("source is not {sheet, row}")
    if isinstance(src["row"], bool) or not isinstance(src["row"], int) or src["row"] < 1:
        fail("source.row is not a positive integer")
    try:
        ModelItem.model_validate(item)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(
            str(part) for part in error["loc"] if part in MODEL_FIELDS or part in MODEL_SOURCE_FIELDS
        )
        kind = _KINDS.get(error["type"], "valid")
        fail(f"{name} is not {kind}{' or null' if len(exc.errors()) > 1 else ''}")
    if plain_decimal(item["unit_price"]) is None:
        fail(f"unit_price {item['unit_price']!r} is not a decimal")


def check_answer(answer) -> list[dict]:
    """Validate the fixed shape {"items": [item, ...]}; raise ValueError saying what is wrong."""
    if not isinstance(answer, dict) or set(answer) != {"items"}:
        raise ValueError("the answer is not an object with exactly the key 'items'")
    if not isinstance(answer["items"], list):
        raise ValueError("'items' is not an array")
    for i, item in enumerate(answer["items"]):
        _check_item(i, item)
    return answer["items"]


def _classify(exc: Exception, timeout: float):
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTransientError(MSG_TIMEOUT.format(timeout=timeout))
    if isinstance(exc, openai.APIConnectionError):
        return ProviderTransientError(MSG_CONNECTION.format(detail=exc))
    if isinstance(exc, openai.APIStatusError):
        request_id = getattr(exc, "request_id", None)
        detail = str(exc)[:300]
        status = exc.status_code
        if status in (408, 409, 429) or status >= 500:
            return ProviderTransientError(
                MSG_STATUS.format(status=status, detail=detail), request_id=request_id
            )
        return ProviderRejectedError(MSG_STATUS.format(status=status, detail=detail), request_id=request_id)
    return None


def _usage(response) -> dict | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def extract_items_with_model(
    table: Table,
    *,
    config: LLMConfig,
    progress: Callable[[int, int], None] | None = None,
    before_call: Callable[[], None] | None = None,
    on_call: Callable[[str | None, dict | None], None] | None = None,
) -> ModelExtraction:
    """Extract items chunk by chunk. ``before_call()`` runs before each
    model call (a check-in that may raise to stop before paid work);
    ``on_call(request_id, usage)`` as soon as a call returns, failed or
    not; ``progress(done, total)`` after each chunk."""

    def record(request_id: str | None, usage: dict | None) -> None:
        calls.append({"request_id": request_id, "usage": usage})
        if on_call is not None:
            on_call(request_id, usage)

    client = openai.OpenAI(
        base_url=config.base_url,
        api_key=config.api_key,
        timeout=config.timeout_seconds,
        max_retries=0,  # the job's retry policy decides, not the client
    )
    chunks = list(_chunks(table, max(1, config.chunk_rows)))
    items: list[dict] = []
    calls: list[dict] = []
    try:
        for done, (_sheet, prompt) in enumerate(chunks, start=1):
            if before_call is not None:
                before_call()
            try:
                response = client.chat.completions.create(
                    model=config.model,
                    messages=[
                        {"role": "system", "content": SYSTEM_PROMPT},
                        {"role": "user", "content": prompt},
                    ],
                    response_format={
                        "type": "json_schema",
                        "json_schema": {"name": "price_items", "strict": True, "schema": ITEM_SCHEMA},
                    },
                    temperature=0,
                )
            except openai.OpenAIError as exc:
                classified = _classify(exc, config.timeout_seconds)
                if classified is None:
                    raise ProviderRejectedError(f"the model call failed: {exc}") from exc
                if classified.request_id:
                    # The provider answered (and may bill) even though it failed.
                    record(classified.request_id, None)
                raise classified from exc
            request_id = getattr(response, "_request_id", None)
            record(request_id, _usage(response))
            if not response.choices:
                raise ProviderRejectedError(MSG_SCHEMA.format(detail="no choices"), request_id=request_id)
            choice = response.choices[0]
            message = choice.message
            refusal = getattr(message, "refusal", None)
            if refusal:
                raise ProviderRejectedError(MSG_REFUSAL.format(detail=refusal[:300]), request_id=request_id)
            if choice.finish_reason == "length":
                raise ProviderRejectedError(
                    MSG_TRUNCATED.format(reason=choice.finish_reason), request_id=request_id
                )
            try:
                answer = json.loads(message.content or "")
            except json.JSONDecodeError as exc:
                raise ProviderRejectedError(MSG_NOT_JSON.format(detail=exc), request_id=request_id) from exc
            try:
                items.extend(check_answer(answer))
            except ValueError as exc:
                raise ProviderRejectedError(MSG_SCHEMA.format(detail=exc), request_id=request_id) from exc
            if progress is not None:
                progress(done, len(chunks))
    finally:
        client.close()
    return ModelExtraction(items=items, calls=calls)
