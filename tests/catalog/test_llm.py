"""The model-backed extractor against a local fake OpenAI-compatible server."""

import pytest

from catalog.errors import ProviderRejectedError, ProviderTransientError
from catalog.llm import ITEM_SCHEMA, LLMConfig, check_answer, extract_items_with_model
from catalog.reading import Sheet, Table
from tests.fake_llm import FakeProvider, completion

ITEM = {
    "sku": "A1",
    "description": "Apple",
    "unit": "kg",
    "pack_size": None,
    "unit_price": "1.50",
    "currency": "EUR",
    "source": {"sheet": "Sheet1", "row": 2},
}
TABLE = Table(sheets=[Sheet(name="Sheet1", rows=[["SKU", "Name", "Price (EUR)"], ["A1", "Apple", "1,50"]])])


@pytest.fixture
def provider():
    p = FakeProvider(default=lambda body: {"items": []})
    yield p
    p.close()


def config(provider, **over):
    values = {
        "base_url": provider.url,
        "api_key": "test",
        "model": "fake",
        "timeout_seconds": 5,
        "chunk_rows": 200,
    }
    values.update(over)
    return LLMConfig(**values)


def test_answer_is_returned_with_request_id_and_usage(provider):
    provider.script.append((200, {"items": [ITEM]}, 0))
    result = extract_items_with_model(TABLE, config=config(provider))
    assert result.items == [ITEM]
    assert result.calls == [
        {"request_id": "req_1", "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
    ]


def test_request_uses_strict_json_schema_and_row_numbers(provider):
    extract_items_with_model(TABLE, config=config(provider))
    sent = provider.requests[0]
    assert sent["response_format"]["json_schema"] == {
        "name": "price_items",
        "strict": True,
        "schema": ITEM_SCHEMA,
    }
    assert (
        "Sheet: Sheet1" in sent["messages"][1]["content"]
        and "row 2: A1 | Apple | 1,50" in sent["messages"][1]["content"]
    )


def test_server_error_is_transient(provider):
    provider.script.append((500, {"error": {"message": "boom"}}, 0))
    with pytest.raises(ProviderTransientError) as info:
        extract_items_with_model(TABLE, config=config(provider))
    assert info.value.transient is True and "500" in info.value.reason


def test_rate_limit_is_transient(provider):
    provider.script.append((429, {"error": {"message": "slow down"}}, 0))
    with pytest.raises(ProviderTransientError, match="429"):
        extract_items_with_model(TABLE, config=config(provider))


def test_client_does_not_retry_by_itself(provider):
    provider.script.append((503, {"error": {"message": "busy"}}, 0))
    with pytest.raises(ProviderTransientError):
        extract_items_with_model(TABLE, config=config(provider))
    assert len(provider.requests) == 1


def test_timeout_is_transient(provider):
    provider.script.append((200, {"items": []}, 30))
    with pytest.raises(ProviderTransientError, match="did not answer within 0.5s"):
        extract_items_with_model(TABLE, config=config(provider, timeout_seconds=0.5))


def test_connection_refused_is_transient():
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", api_key="x", model="m", timeout_seconds=2)
    with pytest.raises(ProviderTransientError, match="cannot reach"):
        extract_items_with_model(TABLE, config=cfg)


def test_bad_request_is_permanent(provider):
    provider.script.append((400, {"error": {"message": "bad schema"}}, 0))
    with pytest.raises(ProviderRejectedError) as info:
        extract_items_with_model(TABLE, config=config(provider))
    assert info.value.transient is False and "400" in info.value.reason


def test_schema_breaking_answer_is_permanent(provider):
    provider.script.append((200, {"items": [{**ITEM, "unit_price": 1.5}]}, 0))
    with pytest.raises(ProviderRejectedError, match="unit_price is not a string"):
        extract_items_with_model(TABLE, config=config(provider))


def test_answer_that_is_not_json_is_permanent(provider):
    body = completion({})
    body["choices"][0]["message"]["content"] = "Sure! Here are the items"
    provider.script.append((200, body, 0))
    with pytest.raises(ProviderRejectedError, match="not JSON"):
        extract_items_with_model(TABLE, config=config(provider))


def test_refusal_is_permanent(provider):
    provider.script.append((200, completion(None, refusal="I can't help with that"), 0))
    with pytest.raises(ProviderRejectedError, match="refused"):
        extract_items_with_model(TABLE, config=config(provider))


def test_long_sheet_is_chunked_and_progress_is_reported(provider):
    rows = [["SKU", "Name", "Price"]] + [[f"S{i}", "x", "1"] for i in range(5)]
    done = []
    result = extract_items_with_model(
        Table(sheets=[Sheet(name="Sheet1", rows=rows)]),
        config=config(provider, chunk_rows=2),
        progress=lambda d, t: done.append((d, t)),
    )
    assert done == [(1, 3), (2, 3), (3, 3)] and len(result.calls) == 3
    assert (
        "CONTEXT" in provider.requests[1]["messages"][1]["content"]
        and "row 3: S1 | x | 1" in provider.requests[1]["messages"][1]["content"]
    )


def test_check_answer_rejects_extra_keys():
    with pytest.raises(ValueError, match="keys"):
        check_answer({"items": [{**ITEM, "extra": 1}]})


def test_check_answer_rejects_row_zero():
    with pytest.raises(ValueError, match="positive integer"):
        check_answer({"items": [{**ITEM, "source": {"sheet": "Sheet1", "row": 0}}]})
