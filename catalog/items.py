"""The extracted item, declared once (DESIGN.md, "Extracted item").

``Item`` is the type; the names of its fields, the strict JSON schema the
model is asked to answer, and the item shapes of the API are derived from
it here, so a field is added or renamed in one place. Items travel as plain
dicts (job output, snapshots); this module says what those dicts hold.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from catalog.flags import CODES


class Source(BaseModel):
    """Where an item was read: the sheet and 1-based row (and, for a matrix,
    the column); for a price shown rounded or computed, what the cell held."""

    model_config = ConfigDict(extra="allow")

    sheet: str = Field(description="The sheet's name (a PDF row cites 'page N').")
    row: int = Field(ge=1, description="1-based.")
    column: str | None = Field(None, description="The cited cell's column letter, for a matrix item.")
    price_places: int | None = Field(None, description="The decimals the sheet showed the price with.")
    raw_price: str | float | None = Field(
        None, description="The value stored behind a rounded or computed price."
    )
    formula: bool | None = Field(None, description="True when a formula computed the price.")


class Flag(BaseModel):
    """A question about one value, put to a reviewer (catalog.flags)."""

    model_config = ConfigDict(extra="allow")

    code: Literal[CODES] = Field(description="A code of the flag registry.")  # type: ignore[valid-type]
    field: str | None = Field(description="The item's field it is about; null for the whole row.")
    message: str


class Item(BaseModel):
    """An extracted item, as the model is asked to return it and as the API
    and review pages show it (with its flags)."""

    model_config = ConfigDict(extra="allow")

    sku: str
    description: str
    unit: str | None = Field(description="The unit of sale as written, or null.")
    pack_size: float | None = Field(description="The count per pack, or null.")
    unit_price: str = Field(description="decimal number, '.' as separator")
    currency: str | None = Field(description="ISO 4217 code, null if not stated")
    source: Source
    flags: list[Flag] = Field(default_factory=list)


# The values of an item, in the order pages show them: what a reviewer sets,
# what a mapping assigns a column to, what validation checks.
VALUE_FIELDS: tuple[str, ...] = tuple(n for n in Item.model_fields if n not in ("source", "flags"))
# What a model returns for each item, and the part of the source it cites.
MODEL_FIELDS: tuple[str, ...] = (*VALUE_FIELDS, "source")
MODEL_SOURCE_FIELDS: tuple[str, ...] = ("sheet", "row")
# What review adds to an item: who set which value (provenance), and whether it is left out.
REVIEW_KEYS: tuple[str, ...] = ("provenance", "omitted")


def _strict(schema: dict, defs: dict) -> dict:
    """A pydantic JSON schema node in the form strict structured outputs
    accept: references inlined, every property required, nothing else
    allowed, ``anyOf [X, null]`` as ``type: [X, "null"]``, no titles."""
    if "$ref" in schema:
        return _strict(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    out = {k: v for k, v in schema.items() if k not in ("title", "default", "anyOf", "minimum", "$defs")}
    options = schema.get("anyOf")
    if options:
        types = [o.get("type") for o in options]
        out["type"] = [t for t in types if t != "null"] + ["null"] if "null" in types else types
        if len(out["type"]) == 1:
            out["type"] = out["type"][0]
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        out["properties"] = {k: _strict(v, defs) for k, v in props.items()}
        out["required"] = list(props)
        out["additionalProperties"] = False
    if schema.get("type") == "array":
        out["items"] = _strict(schema["items"], defs)
    return out


def _model_item() -> type[BaseModel]:
    strict = ConfigDict(extra="forbid", strict=True)
    source = create_model(
        "CitedSource",
        __config__=strict,
        **{n: (Source.model_fields[n].annotation, Source.model_fields[n]) for n in MODEL_SOURCE_FIELDS},
    )
    fields: dict[str, Any] = {
        n: (Item.model_fields[n].annotation, Item.model_fields[n]) for n in VALUE_FIELDS
    }
    fields["source"] = (source, ...)
    return create_model("ModelItem", __config__=strict, **fields)


# One item of a model's answer: the item's values and its cited {sheet, row},
# nothing else, each of its type (no coercion: "1" is not a number).
ModelItem = _model_item()


def _answer_model() -> type[BaseModel]:
    return create_model("ModelAnswer", items=(list[ModelItem], ...))


def model_answer_schema() -> dict:
    """The strict JSON schema of a model's answer ``{"items": [item, ...]}``:
    the item's values and its cited ``{sheet, row}``, no flags."""
    generated = _answer_model().model_json_schema()
    return _strict(generated, generated.get("$defs", {}))


def _loose(annotation: Any) -> Any:
    """A staged value as an extractor may have written it: of its type, its text, or null."""
    return annotation | str | None


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


ApiFlag = create_model("Flag", __base__=Open, **{n: (f.annotation, f) for n, f in Flag.model_fields.items()})
ApiItem = create_model(
    "Item",
    __base__=Open,
    __doc__="An extracted or published item (DESIGN.md, the item schema).",
    **{
        n: (_loose(Item.model_fields[n].annotation), Field(description=Item.model_fields[n].description))
        for n in VALUE_FIELDS
    },
    source=(Source | None, ...),
)
JobItem = create_model("JobItem", __base__=ApiItem, flags=(list[ApiFlag], ...))
