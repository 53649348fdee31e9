"""The Item type (catalog.items) describes the items the extractors write,
and the schemas derived from it say the same."""

from catalog.extraction import extract
from catalog.items import MODEL_FIELDS, VALUE_FIELDS, Item, JobItem, model_answer_schema
from catalog.llm import ITEM_SCHEMA
from catalog.reading import Sheet, Table
from catalog.validation import validate_items


def _objects(schema):
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


def test_the_models_schema_is_strict_and_holds_the_items_values_and_cited_row():
    schema = model_answer_schema()
    assert schema == ITEM_SCHEMA
    for node in _objects(schema):
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    item = schema["properties"]["items"]["items"]
    assert tuple(item["properties"]) == MODEL_FIELDS
    assert list(item["properties"]["source"]["properties"]) == ["sheet", "row"]
    assert "$ref" not in str(schema) and "$defs" not in schema


def test_the_value_fields_are_the_contracts():
    assert VALUE_FIELDS == ("sku", "description", "unit", "pack_size", "unit_price", "currency")


def test_the_items_an_extractor_writes_are_items():
    rows = [
        ["SKU", "Description", "Unit", "Price EUR"],
        ["A-1", "Bolt", "pcs", "1,50"],
        ["A-2", "Nut", "u", "0.90"],
        ["", "", "", "3.00"],
    ]
    table = Table(sheets=[Sheet(name="Prices", rows=rows)])
    items = validate_items(extract(table).items, table)
    assert len(items) == 3 and any(i["flags"] for i in items)
    for item in items:
        Item.model_validate(item)
        JobItem.model_validate(item)
