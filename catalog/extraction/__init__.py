"""Extraction: turning a read table into candidate items.

Modules by concern: ``text`` (bounded text, folding), ``money`` (currencies
and decimals), ``packs`` (units and pack sizes), ``headers`` (header words),
``rules_columns`` and ``columns`` (column roles from content, by the
hand-weighted rules and by the fitted column model, both as one
``assignment``), ``layout`` (header row, item list or
not), ``rows`` (row classes), ``mapping`` (a reviewer's column mapping) and
``extractor`` (the built-in extractor itself).
"""

from catalog.extraction.extractor import Extraction, extract, extract_items, show_held_doubt
from catalog.extraction.headers import classify_header
from catalog.extraction.mapping import MappingError, mapping_errors
from catalog.extraction.money import (
    MAX_PRICE,
    ambiguous_currency_symbol,
    canonical_decimal,
    detect_currency,
    find_currencies,
    parse_decimal,
    plain_decimal,
    price_value,
    typed_price,
)
from catalog.extraction.packs import (
    normalize_unit,
    pack_in_description,
    split_pack,
    unit_ambiguity,
)
from catalog.extraction.text import MAX_CELL_CHARS, cap, col_index, col_letter, fold

__all__ = [
    "Extraction",
    "MAX_CELL_CHARS",
    "MAX_PRICE",
    "MappingError",
    "ambiguous_currency_symbol",
    "canonical_decimal",
    "cap",
    "classify_header",
    "col_index",
    "col_letter",
    "detect_currency",
    "extract",
    "extract_items",
    "show_held_doubt",
    "find_currencies",
    "fold",
    "mapping_errors",
    "normalize_unit",
    "pack_in_description",
    "parse_decimal",
    "plain_decimal",
    "price_value",
    "split_pack",
    "typed_price",
    "unit_ambiguity",
]
