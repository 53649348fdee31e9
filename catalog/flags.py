"""Every flag an item can carry, declared once.

A flag is a question about one value of an extracted item, put to a
reviewer: ``{"code", "field", "message"}`` (DESIGN.md, the item). Each code
is registered here with the fields it may name, whether it blocks approval,
who may clear it and its plain messages; validation, the review re-check,
the grid's hints, the API schemas and the model's JSON schema read this
table. Flags are built only through :func:`flag`, which refuses a code the
table does not know, so no module can emit a code a reviewer has never been
told about. Other modules name a code by its member of :class:`Code`, never
by its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# The item's fields a flag may name (catalog.items.Item); ``None`` is the row.
ITEM_FIELDS = ("sku", "description", "unit", "pack_size", "unit_price", "currency")


class Code(StrEnum):
    MISSING_CURRENCY = "missing_currency"
    CURRENCY_NOT_IN_SHEET = "currency_not_in_sheet"
    DESCRIPTION_NOT_IN_ROW = "description_not_in_row"
    AMBIGUOUS_UNIT = "ambiguous_unit"
    AMBIGUOUS_PACK = "ambiguous_pack"
    INVALID_PRICE = "invalid_price"
    TOO_LARGE = "too_large"
    UNSUPPORTED_SOURCE = "unsupported_source"
    DUPLICATE_SKU = "duplicate_sku"
    EMPTY_DESCRIPTION = "empty_description"
    DUPLICATE_ITEM = "duplicate_item"
    PRICE_WITHOUT_ITEM = "price_without_item"
    PRICE_CHANGED = "price_changed"
    SUSPICIOUS_INSTRUCTION = "suspicious_instruction"
    UNCERTAIN_COLUMN = "uncertain_column"
    DERIVED_PRICE = "derived_price"
    TOTAL_WORD = "total_word"
    SUM_OF_PRICES = "sum_of_prices"
    DECIMAL_SIGN = "decimal_sign"


class Clear(StrEnum):
    """Who may clear a flag."""

    # Checked again whenever a reviewer saves: an edit of its field is
    # re-checked (validation's own checks, and the model's values the sheet
    # does not back: a value the reviewer set is the reviewer's, not the model's).
    RECHECK = "recheck"
    # A doubt only the extractor could see: the reviewer answers it by
    # approving, or by setting the field it is about.
    ACKNOWLEDGE = "acknowledge"
    # Nothing a reviewer edits clears it; only reading the sheet again does.
    REREAD = "reread"


class UnknownFlag(ValueError):
    """A flag code (or a field for it) the registry does not know."""


@dataclass(frozen=True)
class FlagType:
    code: Code
    name: str  # readable, for the pages' lists of reasons
    fields: tuple[str | None, ...]  # the fields it may name; the first is the default
    blocks: bool  # approval is refused while an item to publish carries it
    clear: Clear
    messages: Mapping[str, str]  # plain messages, by variant ("" is the default)
    validated: bool = False  # catalog.validation.validate_items computes it from the item alone
    refuses_value: bool = False  # a value a reviewer sets that raises it is refused outright
    extra: tuple[str, ...] = ()  # members besides code, field and message

    @property
    def hint(self) -> str:
        """What a reviewer can do about it, as the grid says it."""
        if self.clear is Clear.ACKNOWLEDGE:
            return (
                "a doubt of the extractor: approving answers it"
                if not self.blocks
                else "blocks approval until the reviewer sets the value"
            )
        if self.clear is Clear.REREAD:
            return (
                "only reading the sheet again clears it; approving answers it"
                if not self.blocks
                else "blocks approval; only reading the sheet again clears it"
            )
        return (
            "blocks approval; an edit of the value is checked again when saved"
            if self.blocks
            else "an edit of the value is checked again when saved"
        )

    def describe(self) -> dict:
        """The JSON the pages and the API documentation read."""
        return {
            "code": str(self.code),
            "name": self.name,
            "blocks": self.blocks,
            "clear": str(self.clear),
            "hint": self.hint,
            "fields": list(self.fields),
        }


def _type(
    code: Code,
    name: str,
    fields: Iterable[str | None],
    *,
    blocks: bool,
    clear: Clear,
    messages: Mapping[str, str] | str = "",
    **more: Any,
) -> FlagType:
    if isinstance(messages, str):
        messages = {"": messages}
    return FlagType(
        code=code,
        name=name,
        fields=tuple(fields),
        blocks=blocks,
        clear=clear,
        messages=dict(messages),
        **more,
    )


_CHECKED = {"blocks": True, "clear": Clear.RECHECK, "validated": True}
_DOUBT = {"blocks": False, "clear": Clear.ACKNOWLEDGE}

REGISTRY: dict[Code, FlagType] = {
    t.code: t
    for t in (
        _type(
            Code.MISSING_CURRENCY,
            "Currency missing",
            ["currency"],
            refuses_value=True,
            **_CHECKED,
            messages={
                "": (
                    "No currency was found for this price (not in the cell, its number format, the price "
                    "header, the other headers or the sheet's title rows); set the currency."
                ),
                "inactive": "Currency {value!r} is not an active ISO 4217 code; set the currency.",
                "unclear": "Currency not stated clearly: {doubts}.",
            },
        ),
        _type(
            Code.CURRENCY_NOT_IN_SHEET,
            "Currency not in the sheet",
            ["currency"],
            blocks=True,
            clear=Clear.RECHECK,
            messages=(
                "The currency {currency} is not stated in sheet {sheet!r} (not in the row, a number "
                "format, a header, a title or a note); set the currency."
            ),
        ),
        # The model's description must be read in the row it cites; validation
        # checks a description only for an item without a SKU, so this doubt has
        # a code of its own that a save of another field keeps.
        _type(
            Code.DESCRIPTION_NOT_IN_ROW,
            "Description not in the cited row",
            ["description"],
            blocks=True,
            clear=Clear.RECHECK,
            messages=(
                "Row {row} of sheet {sheet!r} does not contain this description; check it against "
                "the row or set it."
            ),
        ),
        _type(
            Code.AMBIGUOUS_UNIT,
            "Unit unclear",
            ["unit"],
            refuses_value=True,
            **_CHECKED,
            messages={
                "": "Unit {unit!r} does not say what is counted (piece, kg, box...); check it.",
                "unknown": "Unit {unit!r} is not a known unit of sale; check what one price buys.",
                "nearest": " Nearest known units: {units}.",
                "in_context": "Unit {unit!r} {why}; check what one price buys.",
            },
        ),
        _type(Code.AMBIGUOUS_PACK, "Pack size unclear", ["pack_size"], **_DOUBT, messages="{doubt}"),
        _type(
            Code.DECIMAL_SIGN,
            "Decimal sign unclear",
            ["unit_price"],
            **_DOUBT,
            messages=(
                "Row {row}'s price {text!r} reads as {read} or as {other}: nothing in its column shows "
                "whether {sign!r} is the decimal sign or separates thousands; it was read as {read}."
            ),
        ),
        _type(
            Code.INVALID_PRICE,
            "Price not a number",
            ["unit_price"],
            refuses_value=True,
            **_CHECKED,
            messages="Price {price!r} is not a positive decimal number.",
        ),
        _type(
            Code.TOO_LARGE,
            "Value too large",
            ["pack_size", "description", "sku", "unit", "unit_price", "currency"],
            **_CHECKED,
            messages={
                "overlong": (
                    "The {name} was {length:,} characters long, more than any real one: "
                    "only its first {limit:,} are kept; check it."
                ),
                "pack": "Pack size {pack} is not a number below 1,000,000,000 that the catalog can store.",
                "long": "The {name} is {length} characters long; the catalog stores at most {limit}.",
                "cut": (
                    "The {name} is {length:,} characters long, the most a cell holds: it may have "
                    "been cut; check it."
                ),
            },
        ),
        _type(
            Code.UNSUPPORTED_SOURCE,
            "Not in the cited row",
            ["source", "sku", "description", "unit_price"],
            **_CHECKED,
            messages={
                "no_sheet": "The cited sheet {sheet!r} does not exist in the file.",
                "no_row": "The cited row {row} is outside sheet {sheet!r} (it has {count} rows).",
                "sku": "Row {row} of sheet {sheet!r} does not contain the SKU {sku!r}.",
                "description": "Row {row} of sheet {sheet!r} does not contain the description.",
                "price": "Row {row} of sheet {sheet!r} does not contain the price {price}.",
                "no_cell": "The cited cell {column}{row} is outside sheet {sheet!r}.",
                "cell_price": "Cell {column}{row} of sheet {sheet!r} does not hold the price {price}.",
            },
        ),
        _type(
            Code.DUPLICATE_SKU,
            "SKU repeated",
            ["sku"],
            **_CHECKED,
            messages="SKU {sku!r} appears {count} times with different prices ({prices}).",
        ),
        _type(
            Code.EMPTY_DESCRIPTION,
            "Description empty",
            ["description"],
            **_CHECKED,
            messages="The description is empty.",
        ),
        _type(
            Code.DUPLICATE_ITEM,
            "Item repeated",
            ["description"],
            **_DOUBT,
            messages=(
                "{description!r} appears {count} times with different prices ({prices}) and no SKU, unit or "
                "pack tells them apart; check which is right or tell them apart."
            ),
        ),
        _type(
            Code.PRICE_WITHOUT_ITEM,
            "Price without an item",
            [None, "description"],  # the description when another column's text was taken for it
            **_DOUBT,
            messages=(
                "Row {row} holds a price but no SKU or description{taken}; check it is an item, or leave it out."
            ),
        ),
        _type(
            Code.TOTAL_WORD,
            "Named like a total",
            ["description"],
            **_DOUBT,
            messages={
                "": "Row {row} begins with {word!r}, as total lines do, but its price is below a price "
                "above it, so it is no sum and was taken as an item; check it is one, or leave it out.",
                "first": "Row {row} begins with {word!r}, as total lines do, but no price of its section "
                "stands above it, so it sums nothing and was taken as an item; check it is one, or leave "
                "it out.",
            },
        ),
        _type(
            Code.SUM_OF_PRICES,
            "Price is a sum",
            [None],
            **_DOUBT,
            messages=(
                "Row {row}'s price is the sum of the {count} prices above it, as a total line's is, "
                "and was taken as an item; check it is one, or leave it out."
            ),
        ),
        _type(
            Code.PRICE_CHANGED,
            "Price moved",
            ["unit_price"],
            **_DOUBT,
            extra=("old", "new"),
            messages=(
                "The price moved from {old} to {new} {currency} ({change:+.0%}) against the supplier's "
                "current catalog; accept it if it is right."
            ),
        ),
        _type(
            Code.SUSPICIOUS_INSTRUCTION,
            "Text addressed to the model",
            [None],
            blocks=False,
            clear=Clear.REREAD,
            messages=(
                "Sheet {sheet!r} holds text addressed to the extracting model (row {row}: {text!r}); "
                "check every value of this item against the sheet."
            ),
        ),
        _type(
            Code.UNCERTAIN_COLUMN,
            "Column not confirmed",
            ITEM_FIELDS,
            **_DOUBT,
            messages={
                "": "The {role} comes from column {column}, whose role is not confirmed; check it.",
                "absent": "Column {column} may hold the {role}, which was not read from any column; check it.",
                "matrix": "The {role} was read from a price matrix whose rows, columns and body are not "
                "confirmed; check it.",
                "moved": "Row {row} names the price in column {new}; this price was read from column "
                "{column}, as above that row; check it.",
            },
        ),
        # A price column computed from others: which one is the unit price is a
        # choice the extractor made and a reviewer confirms.
        _type(
            Code.DERIVED_PRICE,
            "Price column computed from others",
            ["unit_price"],
            **_DOUBT,
            messages={
                "ratio": (
                    "The price comes from column {column}, which is column {other} × {factor} on most rows "
                    "(a price with or without tax, a discount or a markup); check which column holds the "
                    "unit price."
                ),
                "total": (
                    "The price comes from column {column}, which is column {first} × column {second} on most "
                    "rows (a total, not a unit price); check which column holds the unit price."
                ),
            },
        ),
    )
}

CODES: tuple[str, ...] = tuple(str(code) for code in REGISTRY)


# Looked up by the code's text (a Code member hashes and compares as its text).
_BY_CODE: dict[str, tuple[str, FlagType]] = {str(t.code): (str(t.code), t) for t in REGISTRY.values()}


def flag_type(code: str) -> FlagType:
    """The registered type of ``code``; raises UnknownFlag for any other."""
    found = _BY_CODE.get(code)
    if found is None:
        raise UnknownFlag(f"{code!r} is not a registered flag code")
    return found[1]


def flag_message(code: str, variant: str = "", **values: Any) -> str:
    """The registered message ``variant`` of ``code``, filled with ``values``."""
    template = flag_type(code).messages.get(variant)
    if template is None:
        raise UnknownFlag(f"{code} has no message {variant!r}")
    return template.format(**values)


_DEFAULT = object()


def flag(
    code: str,
    field: str | None | object = _DEFAULT,
    *,
    variant: str = "",
    message: str | None = None,
    extra: Mapping[str, Any] | None = None,
    **values: Any,
) -> dict:
    """A flag as items carry it: ``{"code", "field", "message"}`` (plus the
    type's ``extra`` members). The message is the registered one (``variant``
    filled with ``values``) unless ``message`` is given. Raises UnknownFlag
    for a code or field the registry does not know."""
    found = _BY_CODE.get(code)
    if found is None:
        raise UnknownFlag(f"{code!r} is not a registered flag code")
    text, kind = found
    if field is _DEFAULT:
        field = kind.fields[0]
    elif field not in kind.fields:
        raise UnknownFlag(f"{code} does not name the field {field!r}; it names {kind.fields}")
    out = {
        "code": text,
        "field": field,
        "message": message if message is not None else flag_message(code, variant, **values),
    }
    if extra:
        unknown = set(extra) - set(kind.extra)
        if unknown:
            raise UnknownFlag(f"{code} carries no {sorted(unknown)}")
        out.update(extra)
    return out


def codes_where(**attributes: Any) -> frozenset[str]:
    """The codes whose type has every one of ``attributes`` (``blocks=True``...)."""
    return frozenset(
        str(t.code) for t in REGISTRY.values() if all(getattr(t, k) == v for k, v in attributes.items())
    )


def is_blocking(flag_: Mapping[str, Any]) -> bool:
    """True for a flag that stops approval. A code the registry does not
    know (an output stored before it was registered) blocks: it was never
    shown to a reviewer as something approving answers."""
    try:
        return flag_type(flag_.get("code") or "").blocks
    except UnknownFlag:
        return True


def registry_json() -> dict[str, dict]:
    """Code -> {name, blocks, clear, hint, fields}: what the grid shows."""
    return {str(t.code): t.describe() for t in REGISTRY.values()}
