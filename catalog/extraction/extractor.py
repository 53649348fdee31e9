"""The built-in extractor: a table in, candidate items and a report out.

For each sheet: find the header (or none), refuse only a sheet whose shape
says it is not an item list, assign column roles from the values with the
header as evidence (or take a reviewer's mapping as given), classify every
row, and build items following the contract's item schema. Currencies are
read, never guessed. What the extractor is unsure of is reported: a flag on
the item, or ``needs_confirmation`` on the sheet's column mapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import catalog.extraction.rules_columns as rules_columns
from catalog.errors import NotAnItemList
from catalog.extraction.column_model import sheet_features
from catalog.extraction.columns import ROLES, assign_roles, column_probabilities, second_opinion
from catalog.extraction.formulas import midpoint, per_measure, price_relations
from catalog.extraction.headers import classify_header
from catalog.extraction.layout import (
    Header,
    band_bounds,
    find_header,
    header_at,
    header_offset,
    is_band,
    keyed_by_periods,
    not_an_item_list,
    realigned,
    table_start,
)
from catalog.extraction.mapping import MappingError, sheet_mapping
from catalog.extraction.matrix import (
    MAX_MATRIX_ITEMS,
    Matrix,
    counts_sentence,
    matrix_read,
    propose_matrix,
)
from catalog.extraction.money import (
    ISO_CODES,
    PLAIN_NUMBER_RE,
    ambiguous_currency_symbol,
    canonical_decimal,
    decimal_style,
    detect_currency,
    find_currencies,
    other_reading,
    parse_decimal,
)
from catalog.extraction.packs import normalize_unit, pack_in_description, split_pack
from catalog.extraction.rows import (
    MOVED_HEADER,
    PRICE_WITHOUT_ITEM,
    Columns,
    RowClassifier,
    TOTAL_WORD,
    header_price_columns,
    repeats_header,
)
from catalog.extraction.sheet_model import header_names_items, load_sheet_model
from catalog.extraction.sheet_model import sheet_features as sheet_kind_features
from catalog.extraction.text import cap, cell, col_letter
from catalog.flags import Code, flag

if TYPE_CHECKING:  # the reader imports this package; only types flow back
    from catalog.reading import Sheet, Table

MSG_EMPTY_TABLE = "the file holds no cells at all: there is no item list to read"
MSG_NOT_LIST = "sheet {sheet!r} looks like a {kind}, not an item list; a reviewer can still map its columns"
MSG_NO_PRICE = (
    "sheet {sheet!r}: no column holds prices, so this is not an item list; "
    "a reviewer can still map its columns"
)
MSG_NO_NAME = (
    "sheet {sheet!r}: no column names the items (no SKU or description); a reviewer can still map its columns"
)
MSG_NO_ITEMS = "sheet {sheet!r}: no row below the header has a price; a reviewer can still map its columns"
MSG_MATRIX_PROPOSED = (
    "a price matrix was recognized: confirm its row labels, column labels, body and unit "
    "(one item per priced cell)"
)
MSG_MATRIX_TOO_LARGE = (
    "sheet {sheet!r}: the price matrix has more than {limit:,} priced cells, more items "
    "than a sheet may hold; split it into several sheets"
)
MSG_REFUSED = "no sheet holds an item list: {details}"
MSG_HEADER_SHIFTED = (
    "the header's words stand one column {side} of the values they name: they were read one "
    "column to the {back}; confirm every column"
)
_ROLE_WORDS = {
    "unit_price": "price",
    "sku": "SKU",
    "description": "description",
    "unit": "unit",
    "pack_size": "pack size",
    "currency": "currency",
    "quantity": "quantity",
}
MAX_LISTED_ROWS = 1000  # rows other than items listed per sheet in the report


@dataclass(frozen=True)
class Extraction:
    items: list[dict]
    notes: list[str]
    sheets: list[dict] = field(default_factory=list)  # the ``columns`` report, per sheet
    needs_confirmation: bool = False
    refusal: str | None = None
    # The column model's doubt still held back, per read sheet (plain data: ``sheet``,
    # ``columns``, ``reasons``, ``flags``), for ``show_held_doubt`` once validation has said
    # whether the file goes to a reviewer.
    held: list[dict] = field(default_factory=list)


@dataclass
class _SheetResult:
    items: list[dict]
    report: dict
    notes: list[str]
    # The column model's doubt, held back until the file is known to go to
    # review (``extract``'s default): (the columns report with it, its
    # reasons, one uncertain-column flag per role in doubt).
    held_doubt: tuple[list[dict], list[str], list[dict]] | None = None


def _report(sheet: Sheet, header: Header, status: str, **extra) -> dict:
    return {
        "sheet": sheet.name,
        "header_row": header.rows[0] if header.rows else None,
        "header_rows": list(header.rows),
        "status": status,
        "columns": [],
        "needs_confirmation": False,
        "doubts": [],
        **extra,
    }


def _refused(sheet: Sheet, header: Header, reason: str, kind: str, **extra) -> _SheetResult:
    report = _report(sheet, header, "refused", kind=kind, reason=reason, **extra)
    return _SheetResult([], report, [reason])


def _currency_context(sheet: Sheet, header: Header, price: int) -> tuple[str | None, str, list[str]]:
    """Currency from the headers and title rows: (code, basis, doubts)."""
    labels = header.labels
    price_label = cell(labels, price)
    code = detect_currency(price_label)
    if code:
        return code, f"price header {price_label!r}", []
    doubts = []
    symbol = ambiguous_currency_symbol(price_label)
    if symbol:
        doubts.append(f"the price header {price_label!r} shows {symbol!r}, which does not say which currency")
    sibling = set().union(
        *[find_currencies(lb) for i, lb in enumerate(labels) if i != price and lb] or [set()]
    )
    if len(sibling) == 1:
        return next(iter(sibling)), "a sibling header", doubts
    if len(sibling) > 1:
        return None, "", doubts + [f"the headers name several currencies ({', '.join(sorted(sibling))})"]
    first = header.rows[0] if header.rows else 1
    title = set().union(*[find_currencies(cap(t)) for row in sheet.rows[: first - 1] for t in row] or [set()])
    if len(title) == 1:
        return next(iter(title)), f"a note in the title rows (1-{first - 1})", doubts
    if len(title) > 1:
        doubts.append(f"the title rows name several currencies ({', '.join(sorted(title))})")
    return None, "", doubts


class _ItemBuilder:
    """Builds the items of one sheet's rows, once its columns are known."""

    def __init__(
        self,
        sheet: Sheet,
        header: Header,
        cols: Columns,
        currency: str | None,
        uncertain: list[dict] | None = None,
    ):
        self.sheet = sheet
        self.cols = cols
        self.uncertain = uncertain or []  # one uncertain_column flag per role in doubt
        self.decimal = _decimal_of(sheet.rows[header.body_start - 1 :], cols.price)
        self.sheet_code, self.basis, self.doubts = _currency_context(sheet, header, cols.price)
        if currency:
            self.sheet_code, self.basis = currency, "the reviewer's mapping"
        self.split_cache: dict[str, tuple] = {}

    def _currency(self, r: int, row: list[str], price_text: str, value) -> tuple[str | None, list[dict]]:
        code = None
        if value is not None and not PLAIN_NUMBER_RE.fullmatch(price_text):
            code = detect_currency(price_text)
        if code is None and self.cols.currency is not None:
            text = cell(row, self.cols.currency)
            code = detect_currency(text) or (text.upper() if text.upper() in ISO_CODES else None)
        if code is None and self.sheet.currency_formats:
            code = self.sheet.format_currency(r, self.cols.price)
        if code is None:
            code = self.sheet_code
            if code is None and self.doubts:
                return None, [
                    flag(Code.MISSING_CURRENCY, "currency", variant="unclear", doubts="; ".join(self.doubts))
                ]
        return code, []

    def _split(self, text: str) -> tuple:
        got = self.split_cache.get(text)
        if got is None:
            got = self.split_cache[text] = split_pack(text)
        return got

    def _unit_pack(self, row: list[str], desc: str) -> tuple[str | None, object, list[dict]]:
        unit = pack = None
        if cell(row, self.cols.unit):
            unit, pack = self._split(cell(row, self.cols.unit))
        if cell(row, self.cols.pack):
            pu, pn = self._split(cell(row, self.cols.pack))
            if pn is not None:
                pack = pn
                if unit is None and pu is not None and normalize_unit(pu):
                    unit = pu
        if pack is None and desc:
            du, dn, doubt = pack_in_description(desc)
            if dn is not None:
                unit = unit if unit is not None else du
                flags = [flag(Code.AMBIGUOUS_PACK, "pack_size", doubt=doubt)] if doubt else []
                return unit, dn, flags
        return unit, pack, []

    def item(self, r: int, row: list[str], without_item: bool = False) -> dict:
        cols = self.cols
        price_text = cell(row, cols.price)
        value = parse_decimal(price_text, self.decimal)
        sku, desc = cell(row, cols.sku), cell(row, cols.desc)
        flags: list[dict] = []
        if without_item:
            desc, flags = self._fallback_description(r, row)
        code, more = self._currency(r, row, price_text, value)
        unit, pack, pack_flags = self._unit_pack(row, desc)
        item = {
            "sku": sku,
            "description": desc,
            "unit": unit,
            "pack_size": pack,
            "unit_price": canonical_decimal(value) if value is not None else price_text,
            "currency": code,
            "source": self._source(r),
        }
        written = max(0, -value.as_tuple().exponent) if value is not None else 0
        if written and written > max(0, -value.normalize().as_tuple().exponent):
            # "12.50" is published as "12.5"; pages show it as the sheet did.
            item["source"]["price_places"] = min(written, 6)
        if value is not None and self.decimal is None and (other := other_reading(price_text)):
            sign, reading = other
            read, other_value = canonical_decimal(value), canonical_decimal(reading)
            more = [
                *more,
                flag(Code.DECIMAL_SIGN, row=r, text=price_text, read=read, other=other_value, sign=sign),
            ]
        flags += more + pack_flags
        if flags:
            item["flags"] = flags
        _doubt_on(item, self.uncertain)
        return item

    def _source(self, r: int) -> dict:
        """The cited row; for an XLSX price shown rounded or computed, the stored value too."""
        source = {"sheet": self.sheet.name, "row": r}
        raw = self.sheet.raw_value(r, self.cols.price) if self.sheet.raw else None
        if raw:
            source["raw_price"] = raw["value"]
            if raw.get("formula"):
                source["formula"] = True
        return source

    def _fallback_description(self, r: int, row: list[str]) -> tuple[str, list[dict]]:
        """The longest text of the row outside the price column, and the flag that says so."""
        texts = [
            (len(c), i, c)
            for i, c in enumerate(row)
            if c and i != self.cols.price and parse_decimal(c) is None
        ]
        if not texts:
            return "", [flag(Code.PRICE_WITHOUT_ITEM, None, row=r, taken="")]
        _n, i, desc = max(texts)
        taken = f" (the text of column {col_letter(i)} was taken as the description)"
        return desc, [flag(Code.PRICE_WITHOUT_ITEM, "description", row=r, taken=taken)]


def _classify_rows(
    sheet: Sheet, header: Header, builder: _ItemBuilder
) -> tuple[list[dict], dict, list[dict]]:
    """(items, count per row class, non-item rows with reasons) for the whole sheet."""
    classifier = RowClassifier(builder.cols, builder.decimal)
    items, counts, listed = [], {}, []
    moved: dict | None = None  # the flag of every price under a header that names another column
    # An item whose price sums those above it, until the next row with anything in it: a total
    # ends what it sums, so a priced row right below it makes it an item whose price is only
    # equal to a sum.
    summing: dict | None = None
    for r, row in enumerate(sheet.rows, start=1):
        if r < header.body_start:
            kind = "header" if r in header.rows else ("title" if any(row) else "blank")
            got = None
        else:
            got = classifier.classify(r, row)
            kind = got.kind
        if kind == MOVED_HEADER:
            moved = flag(
                Code.UNCERTAIN_COLUMN,
                "unit_price",
                variant="moved",
                row=r,
                new=col_letter(header_price_columns(row)[0]),
                column=col_letter(builder.cols.price),
            )
            kind = "header"
        elif got and kind == "header":
            moved = None  # the sheet's own header again: its columns hold from here
        counts[kind] = counts.get(kind, 0) + 1
        taken = kind in ("item", PRICE_WITHOUT_ITEM, TOTAL_WORD)
        if summing is not None and kind != "blank":
            rest = [f for f in summing["flags"] if f["code"] != Code.SUM_OF_PRICES]
            if taken and rest:
                summing["flags"] = rest
            elif taken:
                del summing["flags"]
            summing = None
        if taken:
            item = builder.item(r, row, without_item=kind == PRICE_WITHOUT_ITEM)
            more = [dict(f) for f in (got.flag if got else None, moved) if f]
            if more:
                item["flags"] = [*item.get("flags", []), *more]
            items.append(item)
            if got and got.flag and got.flag["code"] == Code.SUM_OF_PRICES:
                summing = item
        if got and kind not in ("item", "blank", TOTAL_WORD) and len(listed) < MAX_LISTED_ROWS:
            listed.append({"row": r, "class": kind, "reason": got.reason})
    return items, counts, listed


def _columns_of(assignment, labels: list[str]) -> Columns:
    roles = assignment.roles
    return Columns(
        price=roles["unit_price"],
        sku=roles.get("sku"),
        desc=roles.get("description"),
        unit=roles.get("unit"),
        pack=roles.get("pack_size"),
        currency=roles.get("currency"),
        labels=tuple(labels),
    )


def _summary(sheet: Sheet, header: Header, assignment, builder: _ItemBuilder) -> list[str]:
    where = "+".join(map(str, header.rows)) if header.rows else "none"
    roles = "; ".join(
        f"{_ROLE_WORDS[c.role]} from column {col_letter(c.col)}" + (f" {c.header!r}" if c.header else "")
        for c in assignment.columns
        if c.role != "other"
    )
    notes = [
        f"sheet {sheet.name!r}: header row {where}; {roles}"
        + (f"; decimal separator {builder.decimal!r}" if builder.decimal else "")
    ]
    if assignment.other_prices:
        notes.append(
            f"sheet {sheet.name!r}: other price columns not used: "
            + ", ".join(col_letter(c) for c in assignment.other_prices)
        )
    if builder.sheet_code:
        notes.append(f"sheet {sheet.name!r}: currency {builder.sheet_code} from {builder.basis}")
    notes += [f"sheet {sheet.name!r}: {d}" for d in builder.doubts + assignment.doubts]
    return notes


MSG_BANDS_TOO = (
    "the rows are also named by bands (column {column}): if this is a rate card rather than "
    "an item list, refuse it; else confirm the columns"
)
KIND_BANDS = "rate card (prices by weight or size bands)"
KIND_BOUNDS = "rate card (prices by bands whose bounds are kept in two columns)"
KIND_PERIODS = "table of prices over time (its rows are dates or periods, not items)"
KIND_SPREAD = "table of statistics (a low, an average and a high price on every row)"
KIND_NOT_LIST = "table of rates or statistics (the fitted sheet model reads its rows as no items)"
MSG_MAYBE_NOT_LIST = (
    "the fitted sheet model reads this table more likely as rates or statistics than as an item "
    "list ({p:.2f}): if its rows are no items, refuse it; else confirm the columns"
)
# Both classes weigh the same in the sheet model's fitting: above half, it reads a sheet as no
# item list more likely than as one (below its refusal threshold, that is a doubt, not a refusal).
_MORE_LIKELY = 0.5
_SAMPLE = 500  # body rows looked at to judge what names the rows


def _band_names(body: list[list[str]], col: int | None) -> bool:
    names = [n for r in body[:_SAMPLE] if (n := cell(r, col))]
    return len(names) >= 3 and sum(1 for n in names if is_band(n)) >= 0.6 * len(names)


def _names_text(body: list[list[str]], col: int | None) -> bool:
    """The column names rows with text that is no band (a grade, a product name)."""
    names = [n for r in body[:_SAMPLE] if (n := cell(r, col))]
    return len(names) >= 3 and sum(
        1 for n in names if not is_band(n) and parse_decimal(n) is None
    ) >= 0.6 * len(names)


def _rows_shape(body: list[list[str]], width: int, assignment) -> tuple[str | None, str | None]:
    """(the kind of table that is no item list, or None; a doubt when an item
    list reads it too), judged on what tells the rows apart.

    Rows named by dates or periods, or whose names repeat row after row
    beside a column of running dates, are observations over time; rows told
    apart only by a band (in one cell, or its bounds in two columns) are
    rates. A band beside a column that names the rows with text (a grade
    and its size band) reads as items too: the reviewer confirms. A price
    that is a low, an average or a high of a spread observed on every row
    is a statistic."""
    names = [assignment.get("sku"), assignment.get("description")]
    names = [c for c in names if c is not None]
    keys = [tuple(cell(r, c) for c in names) for r in body[:_SAMPLE] if any(r)]
    repeated = len(set(keys)) < 0.5 * len(keys)  # the same names row after row
    dated = names if not repeated else range(width)  # then a running date anywhere keys the rows
    if any(keyed_by_periods([cell(r, c) for r in body[:_SAMPLE]]) for c in dated):
        return KIND_PERIODS, None
    banded = [c for c in names if _band_names(body, c)]
    if banded:
        if any(_names_text(body, c) for c in names if c not in banded):
            return None, MSG_BANDS_TOO.format(column=col_letter(banded[0]))
        return KIND_BANDS, None
    bounds = band_bounds(body, width)
    if bounds is not None and bounds not in names and bounds + 1 not in names and repeated:
        return KIND_BOUNDS, None
    if _observed_spread(body, width, assignment):
        return KIND_SPREAD, None
    return None, None


def _sheet_kind(body, width, labels, roles, features, observe) -> tuple[float, float] | None:
    """(the fitted sheet model's probability that a sheet the rules read as items
    is no item list, its refusal threshold); None for a sheet whose header names
    its item names, which is not judged, or before ``make train`` wrote the
    model. ``observe``, when given, receives the sheet's features (``make train``
    fits on them)."""
    if header_names_items(labels):
        return None
    values = sheet_kind_features(labels, roles, column_probabilities(body, width, labels, features))
    if observe is not None:
        observe(values)
    model = load_sheet_model()
    return None if model is None else (model.probability(values), model.threshold)


def _judge_rows(body, width, labels, rules, taken, features, observe) -> tuple[str | None, list[str], dict]:
    """(the kind of table that is no item list, or None; the doubts when an item
    list reads it too; the refusal's extra report fields): the rules' shape
    on the rules' roles first (``_rows_shape``), then the fitted sheet model
    on the roles the items are ``taken`` by (``_sheet_kind``): at its threshold
    the sheet is refused (the report gives the probability as ``confidence``);
    reading it more likely as no item list than as one, it is in doubt."""
    kind, doubt = _rows_shape(body, width, rules)
    doubts = [doubt] if doubt else []
    # A sheet the rules refuse is judged only when its features are asked for (make train).
    judged = _sheet_kind(body, width, labels, taken.roles, features, observe) if not kind or observe else None
    if kind or not judged:
        return kind, doubts, {}
    p, threshold = judged
    if p >= threshold:
        return KIND_NOT_LIST, doubts, {"confidence": round(p, 3)}
    if p > _MORE_LIKELY:
        doubts.append(MSG_MAYBE_NOT_LIST.format(p=p))
    return None, doubts, {}


def _decimal_of(body: list[list[str]], col: int | None) -> str | None:
    """The decimal sign the column's first rows write (``money.decimal_style``)."""
    return decimal_style(cell(r, col) for r in body[:2000])


def _observed_spread(body: list[list[str]], width: int, assignment) -> bool:
    """The price column is a low, an average or a high of a spread observed on
    every row (``formulas.midpoint``)."""
    price = assignment.get("unit_price")
    decimal = _decimal_of(body, price)
    return midpoint(body, width, price, decimal) is not None


def _price_relations(
    sheet: Sheet, body: list[list[str]], width: int, cols: Columns
) -> tuple[list[dict], list[str]]:
    """(the flag every item carries when the price column is computed from
    another, notes on the sheet) from ``formulas.price_relations``."""
    decimal = _decimal_of(body, cols.price)
    got = price_relations(body, width, cols.price, decimal)
    column = col_letter(cols.price)
    if got.derived and got.derived.kind == "ratio":
        other = col_letter(got.derived.columns[0])
        factor = format(got.derived.factor.normalize(), "f")
        return (
            [
                flag(
                    Code.DERIVED_PRICE,
                    "unit_price",
                    variant="ratio",
                    column=column,
                    other=other,
                    factor=factor,
                )
            ],
            [f"sheet {sheet.name!r}: the price column {column} is column {other} × {factor}"],
        )
    if got.derived:
        first, second = (col_letter(c) for c in got.derived.columns)
        return (
            [
                flag(
                    Code.DERIVED_PRICE,
                    "unit_price",
                    variant="total",
                    column=column,
                    first=first,
                    second=second,
                )
            ],
            [f"sheet {sheet.name!r}: the price column {column} is column {first} × column {second}"],
        )
    if got.total_of:
        total, other = (col_letter(c) for c in got.total_of)
        return [], [
            f"sheet {sheet.name!r}: column {total} is a total, the price column {column} × column {other}"
        ]
    return [], []


def _price_per_measure(body: list[list[str]], width: int, mapped: dict | None, *assignments) -> None:
    """A price column that is another column's price per kilogram or litre
    (``formulas.per_measure``) gives the price role to that column, in doubt: in the roles
    taken and in the column model's opinion (shown if held). Not when that column holds
    another item role, nor on a reviewer's mapping."""
    if mapped:
        return
    price = assignments[0].roles["unit_price"]
    decimal = _decimal_of(body, price)
    got = per_measure(body, width, price, decimal)
    if got is None:
        return
    offer, content = got
    why = (
        f"column {col_letter(price)} is a price per measure: times the content in column "
        f"{col_letter(content)} it is column {col_letter(offer)}, taken as the price"
    )
    for assignment in {id(a): a for a in assignments if a is not None}.values():
        if assignment.roles.get("unit_price") != price:
            continue
        if any(c == offer and r in ROLES for r, c in assignment.roles.items()):
            continue
        for role in [r for r, c in assignment.roles.items() if c == offer]:
            del assignment.roles[role]
        assignment.roles["unit_price"] = offer
        assignment.doubted["unit_price"] = (offer, why)
        assignment.doubts.append(why)
        for column in assignment.columns:
            if column.col == price:
                column.role, column.needs_confirmation = "other", True
            elif column.col == offer:
                column.role, column.needs_confirmation = "unit_price", True
        if offer in assignment.other_prices:
            assignment.other_prices.remove(offer)
            assignment.other_prices.append(price)


def _matrix_sheet(sheet: Sheet, matrix: Matrix, currency: str | None, source: str) -> _SheetResult:
    """A price matrix read as one item per priced cell; proposed (inferred)
    it waits for a reviewer's confirmation."""
    got = matrix_read(sheet, matrix, currency)
    name = sheet.name
    if got.too_large:
        reason = MSG_MATRIX_TOO_LARGE.format(sheet=name, limit=MAX_MATRIX_ITEMS)
        return _refused(sheet, Header(matrix.header_rows, []), reason, "too large")
    if not got.items:
        return _refused(sheet, Header(matrix.header_rows, []), MSG_NO_ITEMS.format(sheet=name), "no items")
    doubts = list(got.doubts)
    if source == "inferred":
        doubts.insert(0, MSG_MATRIX_PROPOSED)
        # Every value depends on the proposed mapping: each item is pointed at it, field by field.
        flags = [
            flag(Code.UNCERTAIN_COLUMN, role, variant="matrix", role=_ROLE_WORDS[role])
            for role in ("sku", "description", "unit_price", "currency")
        ]
        for item in got.items:
            item["flags"] = list(item.get("flags") or []) + [dict(f) for f in flags]
    labels = ", ".join(col_letter(c) for c in matrix.row_labels)
    notes = [
        f"sheet {name!r}: read as a price matrix (row labels {labels}, column labels from row "
        f"{'+'.join(map(str, matrix.header_rows))}, body {matrix.body}): {counts_sentence(got.counts)}"
    ]
    if got.currency:
        notes.append(f"sheet {name!r}: currency {got.currency} from {got.basis}")
    notes += [f"sheet {name!r}: {d}" for d in got.doubts]
    report = _report(
        sheet,
        Header(matrix.header_rows, []),
        "read",
        kind="matrix",
        matrix=matrix.to_json(),
        cells=got.counts,
        needs_confirmation=bool(doubts),
        doubts=doubts,
        source=source,
    )
    return _SheetResult(got.items, report, notes)


def _read_sheet(
    sheet: Sheet,
    mapped: dict | None,
    currency: str | None,
    column_model: bool,
    model_doubt: bool | None = False,
    observe=None,
) -> _SheetResult:
    rows = sheet.rows
    if mapped and mapped.get("matrix"):
        return _matrix_sheet(sheet, Matrix.from_json(mapped["matrix"]), currency, "reviewer")
    header, shift = _table_header(rows, mapped, sheet.spans)
    if not mapped:
        kind = not_an_item_list(rows, header)
        # A product matrix becomes items for a reviewer to confirm; a rate
        # card stays refused, with the matrix a reviewer may map.
        proposal = propose_matrix(rows, header=None if kind else header.rows)
        if proposal and proposal.kind == "matrix":
            return _matrix_sheet(sheet, proposal.matrix, currency, "inferred")
        if kind:
            got = _refused(sheet, header, MSG_NOT_LIST.format(sheet=sheet.name, kind=kind), kind)
            if proposal:
                got.report["matrix"] = proposal.matrix.to_json()
            return got
    body = _body(rows, header)
    width = max([len(header.labels)] + [len(r) for r in body])
    second = None
    shape_of = None
    features = None
    if column_model:
        assignment = assign_roles(body, width, header.labels, mapped and mapped["columns"])
    else:
        features = sheet_features(body, width)
        assignment = rules_columns.assign_roles(
            rules_columns.profile_columns(body, width, features), header.labels, mapped and mapped["columns"]
        )
        second = (
            second_opinion(assignment, body, width, header.labels, features)
            if model_doubt is not False and not mapped
            else None
        )
        if second is not None and (model_doubt or second.moved):
            shape_of, assignment = assignment, second
    _doubt_every_role(shift, assignment, second)
    if "unit_price" not in assignment.roles:
        named = any((got := classify_header(label)) and got[0] == "unit_price" for label in header.labels)
        if named:
            return _refused(sheet, header, MSG_NO_ITEMS.format(sheet=sheet.name), "no items")
        return _refused(sheet, header, MSG_NO_PRICE.format(sheet=sheet.name), "no prices")
    if "description" not in assignment.roles and "sku" not in assignment.roles:
        return _refused(sheet, header, MSG_NO_NAME.format(sheet=sheet.name), "no item names")
    shape_kind, shape_doubts, judged = (
        _judge_rows(body, width, header.labels, shape_of or assignment, assignment, features, observe)
        if not mapped
        else (None, [], {})
    )
    if shape_kind:
        return _refused(
            sheet, header, MSG_NOT_LIST.format(sheet=sheet.name, kind=shape_kind), shape_kind, **judged
        )
    _price_per_measure(body, width, mapped, assignment, second)
    uncertain = _uncertain_flags(assignment.doubted, assignment.roles)
    cols = _columns_of(assignment, header.labels)
    relation_flags, relation_notes = ([], []) if mapped else _price_relations(sheet, body, width, cols)
    builder = _ItemBuilder(sheet, header, cols, currency, uncertain + relation_flags)
    items, counts, listed = _classify_rows(sheet, header, builder)
    if not items:
        return _refused(sheet, header, MSG_NO_ITEMS.format(sheet=sheet.name), "no items")
    doubts = [] if mapped else list(assignment.doubts) + shape_doubts
    if not header.rows and not mapped:
        doubts.insert(0, "no header row: the columns were read from their values alone")
    if column_model:
        confirm = any(c.needs_confirmation for c in assignment.columns) or bool(assignment.doubted)
    else:
        confirm = bool(doubts)
    report = _report(
        sheet,
        header,
        "read",
        columns=[c.to_json() for c in assignment.columns],
        needs_confirmation=confirm and not mapped,
        doubts=doubts,
        rows=counts,
        skipped_rows=listed,
        source="reviewer" if mapped else "inferred",
    )
    held = _held_doubt(second, assignment) if model_doubt is None and assignment is not second else None
    # Whether the sheet is an item list at all comes first among its notes (a reviewer sees them).
    shape_notes = [f"sheet {sheet.name!r}: {d}" for d in ([] if mapped else shape_doubts)]
    notes = shape_notes + _summary(sheet, header, assignment, builder) + relation_notes
    return _SheetResult(items, report, notes, held)


def _body(rows: list[list[str]], header: Header) -> list[list[str]]:
    """The rows the columns are read from: below the header, less the rows that repeat it
    (``rows.repeats_header``: its words are no column's values), or from the first row that
    fills two cells of a sheet without one (``layout.table_start``). Items are read from the
    sheet's rows, so no row number depends on which rows these are."""
    body = rows[header.body_start - 1 :]
    if not header.rows:
        return body[table_start(body) :]
    labels = tuple(header.labels)
    return [r for r in body if not repeats_header(r, labels)]


def _table_header(rows: list[list[str]], mapped: dict | None, spans: dict) -> tuple[Header, int]:
    """The table's header (the reviewer's, else the one found) and the shift its words were
    read with: one column over when they stand over the body's columns only so
    (``layout.header_offset``)."""
    if mapped:
        return header_at(rows, mapped["header_row"]), 0
    header = find_header(rows, spans)
    shift = header_offset(rows, header)
    return (realigned(header, shift) if shift else header), shift


def _doubt_every_role(shift: int, *assignments) -> None:
    """Every item role in doubt, each column to confirm, when the header was read shifted: in
    the roles taken and in the column model's opinion (shown if held), which read that header."""
    if not shift:
        return
    side, back = ("right", "left") if shift > 0 else ("left", "right")
    why = MSG_HEADER_SHIFTED.format(side=side, back=back)
    for assignment in {id(a): a for a in assignments if a is not None}.values():
        assignment.doubts.insert(0, why)
        for role, col in assignment.roles.items():
            if role in ROLES:
                assignment.doubted.setdefault(role, (col, why))
        for column in assignment.columns:
            if column.role in ROLES:
                column.needs_confirmation = True


def _held_doubt(second, rules) -> tuple[list[dict], list[str], list[dict]] | None:
    """The column model's doubt on the rules' roles, kept for ``_show_held_doubt``."""
    if second is None or not second.doubted:
        return None
    return (
        [c.to_json() for c in second.columns],
        second.doubts[len(rules.doubts) :],
        _uncertain_flags(second.doubted, second.roles),
    )


def _uncertain_flags(doubted: dict[str, tuple[int, str]], taken: dict[str, int]) -> list[dict]:
    """One uncertain-column flag per item role in doubt (taken from its column, or taken from
    none while the column may hold it). A currency read for a price column in doubt (its
    header, its cells, their number format) is in doubt with it."""
    flags = [
        flag(
            Code.UNCERTAIN_COLUMN,
            role,
            variant="" if role in taken else "absent",
            role=_ROLE_WORDS[role],
            column=col_letter(col),
        )
        for role, (col, _why) in doubted.items()
    ]
    if "unit_price" in doubted and "currency" not in doubted:
        flags.append(
            flag(
                Code.UNCERTAIN_COLUMN,
                "currency",
                role=_ROLE_WORDS["currency"],
                column=col_letter(doubted["unit_price"][0]),
            )
        )
    return flags


def _doubt_on(item: dict, flags: list[dict]) -> None:
    """``flags`` (uncertain columns) on ``item``; a currency flag only on an item with a currency."""
    have = {(f["code"], f["field"]) for f in item.get("flags") or []}
    added = [
        dict(f)
        for f in flags
        if (f["field"] != "currency" or item.get("currency")) and (f["code"], f["field"]) not in have
    ]
    if added:
        item["flags"] = list(item.get("flags") or []) + added


def _show_held_doubt(report: dict, items: list[dict], held: tuple) -> None:
    """The column model's doubt on a sheet that goes to a reviewer anyway:
    its columns marked, every item flagged on the fields in doubt."""
    columns, reasons, flags = held
    report.update(columns=columns, needs_confirmation=True, doubts=list(report.get("doubts") or []) + reasons)
    for item in items:
        _doubt_on(item, flags)


def show_held_doubt(held: list[dict], sheets: list[dict], items: list[dict], *, review: bool) -> bool:
    """After validation: when the file goes to a reviewer anyway (``review``: an item
    flagged), the doubt ``extract`` held back (``Extraction.held``) is shown on the
    sheets' reports (``sheets``) and ``items``: the columns in doubt marked
    ``needs_confirmation``, their values flagged. Returns whether it was shown."""
    if not held or not review:
        return False
    reports = {r["sheet"]: r for r in sheets}
    for doubt in held:
        _show_held_doubt(
            reports[doubt["sheet"]],
            [i for i in items if i["source"]["sheet"] == doubt["sheet"]],
            (doubt["columns"], doubt["reasons"], doubt["flags"]),
        )
    return True


def extract(
    table: Table,
    mapping: dict | None = None,
    *,
    column_model: bool = False,
    model_doubt: bool | None = None,
    observe=None,
) -> Extraction:
    """Items and the per-sheet ``columns`` report of ``table`` (pure, no ORM).

    ``mapping`` (a reviewer's, or a remembered layout) names, per sheet, the
    header row and the column of each role; the sheets it lists are the only
    ones read, and its ``currency`` stands for the sheets' stated currency.
    The columns' roles come from the hand-weighted rules of ``rules_columns``.
    ``model_doubt`` keeps them and takes their doubt from the fitted column
    model: a role the model does not read the same way, confidently, marks
    its column ``needs_confirmation`` and flags its values as uncertain
    (catalog.flags; ``columns.second_opinion``). ``True`` always; ``None``
    (the default) when the file goes to a reviewer anyway (an item flagged,
    or columns to confirm), so the reviewer is pointed at the columns in
    doubt while a sheet the rules read cleanly still publishes; ``False``
    never. ``column_model`` takes the roles themselves from the model
    (``columns.assign_roles``). ``observe(sheet name, features)``, when
    given, receives the sheet model's features of every sheet it judges.
    Raises ``MappingError`` when the mapping names a sheet or column the
    table does not have.
    """
    if not any(any(row for row in s.rows) for s in table.sheets):
        return Extraction([], [MSG_EMPTY_TABLE], [], False, MSG_EMPTY_TABLE)
    items, notes, reports, refusals, results = [], [], [], [], []
    currency = (mapping or {}).get("currency")
    for sheet in table.sheets:
        mapped = sheet_mapping(mapping, sheet) if mapping else None
        if mapping and mapped is None:
            reports.append(_report(sheet, Header((), []), "not selected"))
            continue
        if not any(any(r) for r in sheet.rows):
            reports.append(_report(sheet, Header((), []), "empty"))
            continue
        seen = (lambda values, name=sheet.name: observe(name, values)) if observe else None
        got = _read_sheet(sheet, mapped, currency, column_model, model_doubt, seen)
        results.append(got)
        items += got.items
        notes += got.notes
        reports.append(got.report)
        if got.report["status"] == "refused":
            refusals.append(got.report["reason"])
    refusal = None if items else MSG_REFUSED.format(details="; ".join(refusals) or "no sheet was selected")
    confirm = any(r.get("needs_confirmation") for r in reports if r["status"] == "read")
    held = [got for got in results if got.held_doubt]
    if held and (confirm or any(item.get("flags") for item in items)):
        for got in held:
            _show_held_doubt(got.report, got.items, got.held_doubt)
        held, confirm = [], True
    kept = [
        {
            "sheet": got.report["sheet"],
            "columns": got.held_doubt[0],
            "reasons": got.held_doubt[1],
            "flags": got.held_doubt[2],
        }
        for got in held
    ]
    return Extraction(items, notes, reports, confirm, refusal, kept)


def extract_items(table: Table, mapping: dict | None = None, *, column_model: bool = False) -> Extraction:
    """``extract``, raising ``NotAnItemList`` (with the report) when no sheet holds items."""
    result = extract(table, mapping, column_model=column_model)
    if result.refusal:
        exc = NotAnItemList(result.refusal)
        exc.sheets = result.sheets
        raise exc
    return result


__all__ = ["Extraction", "MappingError", "ROLES", "extract", "extract_items", "show_held_doubt"]
