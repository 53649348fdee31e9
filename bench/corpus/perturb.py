"""The labeled sheets changed the ways unseen sheets differ, with their labels changed to match.

A sheet the project has never seen differs from the corpus in ways the
extractor must not depend on: its columns stand in another order, it has no
header row, it lists only a few items, it lacks the optional columns. Each
change below is applied to the labeled sheets of a file (the other sheets
are left as read) and to its label (column letters, row numbers), so the
scoring of bench/corpus/scoring.py reads the changed table against the
changed truth. Nothing is written: the tables live in memory.

- ``permute``: the columns in a random order (seeded by the file's path);
- ``reverse``: the columns from last to first;
- ``noheader``: the header rows and everything above them removed;
- ``head20``, ``head5``: the sheet cut after its 20th or 5th item row;
- ``dropopt``: the unit, pack size and currency columns removed;
- ``gaps``: an empty column after every column (a layout spaced out for print);
- ``foreign``: every header cell replaced by an invented word of about its length (a header in
  a language no vocabulary knows: the header row stays, its words name nothing);
- ``title``: three rows put above the sheet, as a supplier's letterhead: a name, an address with a
  telephone number, a date;
- ``sections``: a section heading (one invented word or two, in the description's column) put
  above the first item and every tenth after it;
- ``shift``: every header cell moved one column to the right, the body left where it is (a header
  that does not stand over its values, as merged cells leave it);
- ``comma``: the money columns (price, other prices, totals) written the continental way, a
  decimal comma and dots between thousands ("1234.5" becomes "1.234,5");
- ``pages``: the header again, after an empty row, above every 40th item (a list printed page by
  page and read back);
- ``spaced``: an empty row after every item but the last;
- ``twoline``: a header of one row written over two, each cell of several words cut after its
  first word (a header wrapped as it is printed);
- ``taxed``: a column put right of the price holding it with 20% tax on every item row, written
  as the price is (decimal sign, places, currency), under an invented header word (prices net
  and gross, the gross one named in no known word);
- ``numbered``: a column of running numbers (1, 2, 3, ...) on the item rows put first;
- ``stock``: a column of stock counts (whole numbers up to 500, a fifth of them 0) put right of
  the price;
- ``barcode``: a column of 13-digit article numbers (EAN-13, with their check digit) put right of
  the description, on sheets that have an SKU column (on a sheet without one, a barcode is its
  SKU);
- ``links``: a column of web addresses of the items' pages put last;
- ``category``: a column of a few invented names, each over ten items in a row, put left of the
  description (a product group);
- ``remarks``: a column of sentences of invented words on one item in four, put last;
- ``footer``: after the last item, an empty row, a total (an invented word where the
  descriptions stand, the sum of the prices in the price column) and a note of invented words;
- ``currency``: the sheet's currency (its ISO code; EUR where none is stated) written before or
  after every amount of the money columns (the price, other prices, totals) on every item row,
  on sheets without a currency column.

The columns ``numbered`` to ``remarks`` add hold no item role, each under an invented header word: the values
alone must tell a reader what they are not.

A sheet the change does not apply to (no header to remove, fewer items than
the cut, no optional column) stays as it is.
"""

from __future__ import annotations

import copy
import itertools
import random
import re
from decimal import Decimal

from bench.corpus.labels import rows_of
from catalog.extraction import col_index, col_letter
from catalog.extraction.money import ISO_CODES, decimal_style, find_currencies, parse_decimal
from catalog.readers.common import Sheet, Table

KINDS = (
    "permute",
    "reverse",
    "noheader",
    "head20",
    "head5",
    "dropopt",
    "gaps",
    "foreign",
    "title",
    "sections",
    "shift",
    "comma",
    "taxed",
    "pages",
    "spaced",
    "twoline",
    "numbered",
    "stock",
    "barcode",
    "links",
    "footer",
    "currency",
    "category",
    "remarks",
)
# Not the SKU: a second code column the label calls "other" (a manufacturer's part number) is the
# SKU of a sheet without the supplier's own, and would be counted wrong.
_OPTIONAL = ("unit", "pack_size", "currency")


def ranges(rows) -> str:
    """[4, 5, 6, 9] -> "4-6,9" (the label's form)."""
    rows = sorted(set(rows))
    out, i = [], 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1] == rows[j] + 1:
            j += 1
        out.append(str(rows[i]) if i == j else f"{rows[i]}-{rows[j]}")
        i = j + 1
    return ",".join(out)


def _moved_rows(body: list[list[str]], cols: dict[int, int | None] | None, rows: dict[int, int] | None):
    if cols is not None:
        width = max([v for v in cols.values() if v is not None], default=-1) + 1
        moved = []
        for row in body:
            out = [""] * width
            for c, text in enumerate(row):
                if cols.get(c) is not None:
                    out[cols[c]] = text
            while out and not out[-1]:
                out.pop()
            moved.append(out)
        body = moved
    if rows is not None:
        body = [row for _n, row in sorted((rows[r + 1], row) for r, row in enumerate(body) if r + 1 in rows)]
    while body and not any(body[-1]):
        body.pop()
    return body


def _moved_formats(formats: dict, cols: dict[int, int | None] | None, rows: dict[int, int] | None) -> dict:
    out = {}
    for c, runs in formats.items():
        to = cols.get(c) if cols is not None else c
        if to is None:
            continue
        kept = []
        for first, last, code in runs:
            if rows is not None:
                now = [rows[r] for r in range(first, last + 1) if r in rows]
                if not now:
                    continue
                first, last = min(now), max(now)
            kept.append((first, last, code))
        if kept:
            out[to] = kept
    return out


def _moved_sheet(sheet: Sheet, cols: dict[int, int | None] | None, rows: dict[int, int] | None) -> Sheet:
    """``sheet`` with column ``c`` moved to ``cols[c]`` (None: removed) and row ``r`` (1-based) to
    ``rows[r]`` (absent: removed); number formats and stored values move with their cells."""
    raw = {}
    for key, value in sheet.raw.items():
        r, c = map(int, key.split(":"))
        c = cols.get(c) if cols is not None else c
        r = rows.get(r) if rows is not None else r
        if c is not None and r is not None:
            raw[f"{r}:{c}"] = value
    return Sheet(
        sheet.name,
        _moved_rows(sheet.rows, cols, rows),
        _moved_formats(sheet.currency_formats, cols, rows),
        raw,
        _moved_spans(sheet.spans, cols, rows),
    )


def _moved_spans(spans: dict, cols: dict[int, int | None] | None, rows: dict[int, int] | None) -> dict:
    """The merged ranges across columns that stay whole and in order where their cells go."""
    out = {}
    for (r, first), last in spans.items():
        r = rows.get(r) if rows is not None else r
        to = [cols.get(c) if cols is not None else c for c in range(first, last + 1)]
        if r is not None and None not in to and to == list(range(to[0], to[0] + len(to))):
            out[(r, to[0])] = to[-1]
    return out


def _moved_label(lab: dict, cols: dict[int, int | None] | None, rows: dict[int, int] | None) -> dict:
    lab = copy.deepcopy(lab)
    if cols is not None:
        lab["columns"] = {
            col_letter(cols[col_index(letter)]): role
            for letter, role in (lab.get("columns") or {}).items()
            if cols.get(col_index(letter)) is not None
        }
    if rows is not None:
        lab["header_rows"] = [rows[r] for r in lab.get("header_rows") or [] if r in rows]
        for key in ("item_rows", "review_rows", "group_rows"):
            lab[key] = ranges(rows[r] for r in rows_of(lab.get(key)) if r in rows)
    return lab


def _change(kind: str, sheet: Sheet, lab: dict, rng: random.Random):
    """(columns map, rows map) of ``kind`` for one labeled sheet, or None when it does not apply."""
    width = max((len(r) for r in sheet.rows), default=0)
    items = rows_of(lab.get("item_rows"))
    if kind == "permute":
        order = list(range(width))
        rng.shuffle(order)
        return {old: new for new, old in enumerate(order)}, None
    if kind == "reverse":
        return {old: width - 1 - old for old in range(width)}, None
    if kind == "noheader":
        header = lab.get("header_rows") or []
        if not header:
            return None
        top = max(header)
        return None, {r: r - top for r in range(top + 1, len(sheet.rows) + 1)}
    if kind in ("head20", "head5"):
        keep = int(kind.removeprefix("head"))
        if len(items) <= keep:
            return None
        return None, {r: r for r in range(1, items[keep - 1] + 1)}
    if kind == "dropopt":
        roles = {col_index(letter): role for letter, role in (lab.get("columns") or {}).items()}
        drop = {c for c, role in roles.items() if role in _OPTIONAL}
        if not drop:
            return None
        kept = [c for c in range(width) if c not in drop]
        return {c: (kept.index(c) if c in kept else None) for c in range(width)}, None
    if kind == "gaps":
        return {c: 2 * c for c in range(width)}, None
    raise ValueError(f"unknown change {kind!r}; one of {', '.join(KINDS)}")


_INVENTED = "bdfghjklmnprstvz"  # consonants only, 3 or more: no number, and no word the vocabularies hold


def _foreign_header(sheet: Sheet, lab: dict, rng: random.Random) -> Sheet:
    rows = [list(r) for r in sheet.rows]
    for h in lab.get("header_rows") or []:
        if h <= len(rows):
            rows[h - 1] = [_word(rng, len(text)) if text else "" for text in rows[h - 1]]
    return Sheet(sheet.name, rows, sheet.currency_formats, sheet.raw)


def _word(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(_INVENTED) for _ in range(max(3, min(length, 12))))


def _inserted(sheet: Sheet, lab: dict, before: dict[int, list[list[str]]]) -> tuple[Sheet, dict]:
    """``sheet`` and ``lab`` with the rows ``before[r]`` put above row ``r`` (1-based); the rows
    below move down with their cells' formats and stored values."""
    rows, moved, added = [], {}, 0
    for r in range(1, len(sheet.rows) + 1):
        for row in before.get(r, ()):
            rows.append(list(row))
            added += 1
        rows.append(list(sheet.rows[r - 1]))
        moved[r] = r + added
    rows += [list(row) for row in before.get(len(sheet.rows) + 1, ())]  # rows put after the last
    shifted = _moved_sheet(sheet, None, moved)
    return Sheet(sheet.name, rows, shifted.currency_formats, shifted.raw), _moved_label(lab, None, moved)


def _shifted_header(sheet: Sheet, lab: dict) -> Sheet:
    rows = [list(r) for r in sheet.rows]
    for h in lab.get("header_rows") or []:
        if h <= len(rows):
            rows[h - 1] = ["", *rows[h - 1]]
    return Sheet(sheet.name, rows, sheet.currency_formats, sheet.raw)


_PLAIN_NUMBER = re.compile(r"(-?)(\d+)(?:\.(\d+))?")
_MONEY_ROLES = ("unit_price", "alt_price", "total")


def _continental(text: str) -> str:
    match = _PLAIN_NUMBER.fullmatch(text.strip())
    if not match:
        return text
    sign, whole, cents = match.groups()
    grouped = f"{int(whole):,}".replace(",", ".")
    return f"{sign}{grouped}{',' + cents if cents else ''}"


def _comma_money(sheet: Sheet, lab: dict) -> Sheet | None:
    money = [col_index(letter) for letter, role in (lab.get("columns") or {}).items() if role in _MONEY_ROLES]
    if not money:
        return None
    body = (
        set(rows_of(lab.get("item_rows")))
        | set(rows_of(lab.get("review_rows")))
        | set(rows_of(lab.get("group_rows")))
    )
    rows = [list(r) for r in sheet.rows]
    for r in body:
        if r > len(rows):
            continue
        for c in money:
            if c < len(rows[r - 1]):
                rows[r - 1][c] = _continental(rows[r - 1][c])
    return Sheet(sheet.name, rows, sheet.currency_formats, {})


_WRITTEN = re.compile(r"(\D*?)(\d[\d\s.,'\u00a0]*?)(?:([.,])(\d{1,2}))?(\D*)")


def _written_as(text: str, value: Decimal, exact: bool = False) -> str:
    """``value`` written as the price in ``text`` is (its decimal sign and places, its currency
    before or after), or "" when ``text`` holds no price; ``exact``: with as many more places as
    ``value`` needs."""
    match = _WRITTEN.fullmatch(text.strip())
    if parse_decimal(text) is None or not match:
        return ""
    before, _whole, sign, cents, after = match.groups()
    places = len(cents) if cents else 0
    if exact:
        places = max(places, -value.normalize().as_tuple().exponent)
    number = f"{value:.{places}f}"
    return f"{before}{number.replace('.', sign) if sign else number}{after}"


def _taxed_text(text: str) -> str:
    """The price in ``text`` with 20% tax, written as ``text`` writes it: "€ 19" gives "€ 23",
    "1 234,50 zł" "1481,40 zł"."""
    value = parse_decimal(text)
    return _written_as(text, value * Decimal("1.2")) if value is not None else ""


def _with_currency(sheet: Sheet, lab: dict, code: str, before: bool) -> Sheet | None:
    """``sheet`` with ``code`` written before or after every amount of its money columns (the
    price, other prices, totals) on every item row."""
    money = [col_index(letter) for letter, role in (lab.get("columns") or {}).items() if role in _MONEY_ROLES]
    if not money:
        return None
    rows = [list(r) for r in sheet.rows]
    for r, c in itertools.product(rows_of(lab.get("item_rows")), money):
        text = rows[r - 1][c].strip() if r <= len(rows) and c < len(rows[r - 1]) else ""
        if text and parse_decimal(text) is not None and not find_currencies(text):
            rows[r - 1][c] = f"{code} {text}" if before else f"{text} {code}"
    return Sheet(sheet.name, rows, {}, {})


def _footer(sheet: Sheet, lab: dict, rng: random.Random) -> tuple[Sheet, dict] | None:
    """``sheet`` and ``lab`` with three rows put after the last item: an empty one, a total (an
    invented word where the descriptions stand, the sum of the prices written as the last price
    is) and a note (a sentence of invented words in the first column)."""
    roles = {role: col_index(letter) for letter, role in (lab.get("columns") or {}).items()}
    price, items = roles.get("unit_price"), rows_of(lab.get("item_rows"))
    if price is None or not items or items[-1] > len(sheet.rows):
        return None
    cells = [row[price] for r in items if price < len(row := sheet.rows[r - 1])]
    decimal = decimal_style(cells)
    values = [v for v in (parse_decimal(text, decimal) for text in cells) if v is not None]
    written = _written_as(cells[-1], sum(values), exact=True) if cells and values else ""
    if not written:
        return None
    total = [""] * (max(price, roles.get("description", 0)) + 1)
    total[roles.get("description", 0)] = _word(rng, 6).title()
    total[price] = written
    return _inserted(sheet, lab, {items[-1] + 1: [[], total, [_sentence(rng, 8)]]})


def _taxed(sheet: Sheet, lab: dict, rng: random.Random) -> tuple[Sheet, dict] | None:
    roles = {role: col_index(letter) for letter, role in (lab.get("columns") or {}).items()}
    price = roles.get("unit_price")
    if price is None:
        return None
    width = max((len(r) for r in sheet.rows), default=0)
    cols = {c: (c if c <= price else c + 1) for c in range(width)}
    moved = _moved_sheet(sheet, cols, None)
    rows = [list(r) for r in moved.rows]
    header, items = set(lab.get("header_rows") or []), set(rows_of(lab.get("item_rows")))
    for r, row in enumerate(rows, start=1):
        if r in header:
            text = _word(rng, 8)
        elif r in items:
            text = _taxed_text(row[price] if price < len(row) else "")
        else:
            continue
        row.extend([""] * (price + 2 - len(row)))
        row[price + 1] = text
    label = _moved_label(lab, cols, None)
    label["columns"][col_letter(price + 1)] = "alt_price"
    return Sheet(sheet.name, rows, moved.currency_formats, moved.raw), label


def _with_column(sheet: Sheet, lab: dict, at: int, value, rng: random.Random) -> tuple[Sheet, dict]:
    """``sheet`` and ``lab`` with a column put at index ``at`` (the columns from there move one
    right): an invented word in the last header row, ``value(n)`` on the ``n``-th item row
    (0-based), nothing elsewhere."""
    width = max((len(r) for r in sheet.rows), default=0)
    cols = {c: (c if c < at else c + 1) for c in range(width)}
    moved = _moved_sheet(sheet, cols, None)
    rows = [list(r) for r in moved.rows]
    header = (lab.get("header_rows") or [None])[-1]
    items = rows_of(lab.get("item_rows"))
    texts = {r: value(n) for n, r in enumerate(items)}
    if header is not None:
        texts[header] = _word(rng, 8)
    for r, text in texts.items():
        if r > len(rows):
            continue
        row = rows[r - 1]
        row.extend([""] * (at + 1 - len(row)))
        row[at] = text
    return Sheet(sheet.name, rows, moved.currency_formats, moved.raw), _moved_label(lab, cols, None)


def _sentence(rng: random.Random, words: int | None = None) -> str:
    """Invented words of 3 to 9 letters, ``words`` of them (4 to 10 when None), as a sentence."""
    count = words if words is not None else rng.randint(4, 10)
    return " ".join(_word(rng, rng.randint(3, 9)) for _ in range(count)).capitalize() + "."


def _ean13(rng: random.Random) -> str:
    digits = [rng.randint(0, 9) for _ in range(12)]
    check = (10 - sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10) % 10
    return "".join(map(str, digits)) + str(check)


def _added_column(kind: str, sheet: Sheet, lab: dict, rng: random.Random) -> tuple[Sheet, dict] | None:
    roles = {role: col_index(letter) for letter, role in (lab.get("columns") or {}).items()}
    if not rows_of(lab.get("item_rows")):
        return None
    if kind == "numbered":
        return _with_column(sheet, lab, 0, lambda n: str(n + 1), rng)
    if kind == "stock":
        if "unit_price" not in roles:
            return None
        return _with_column(
            sheet,
            lab,
            roles["unit_price"] + 1,
            lambda n: str(rng.randint(1, 500) if rng.random() > 0.2 else 0),
            rng,
        )
    if kind == "barcode":
        if "sku" not in roles:
            return None
        at = roles.get("description", roles["sku"]) + 1
        return _with_column(sheet, lab, at, lambda n: _ean13(rng), rng)
    if kind == "category":
        names = [_word(rng, rng.randint(5, 9)).title() for _ in range(rng.randint(3, 6))]
        at = roles.get("description", roles.get("sku", 0))
        return _with_column(sheet, lab, at, lambda n: names[n // 10 % len(names)], rng)
    width = max((len(r) for r in sheet.rows), default=0)
    if kind == "remarks":
        return _with_column(sheet, lab, width, lambda n: _sentence(rng) if rng.random() < 0.25 else "", rng)
    site = _word(rng, 7)
    return _with_column(
        sheet, lab, width, lambda n: f"https://www.{site}.com/p/{rng.randint(1000, 99999)}", rng
    )


_ADDED = ("numbered", "stock", "barcode", "links", "category", "remarks")
_MOVES = ("permute", "reverse", "noheader", "head20", "head5", "dropopt", "gaps")  # ``_change``'s
_MORE_ROWS = ("pages", "spaced", "twoline")


def _more_rows(kind: str, sheet: Sheet, lab: dict) -> tuple[Sheet, dict] | None:
    items = rows_of(lab.get("item_rows"))
    if kind == "spaced":
        return _inserted(sheet, lab, {r + 1: [[]] for r in items if r < len(sheet.rows)}) if items else None
    if kind == "twoline":
        if len(lab.get("header_rows") or []) != 1 or lab["header_rows"][0] > len(sheet.rows):
            return None
        h = lab["header_rows"][0]
        cut = [text.split(None, 1) if text.strip() else [""] for text in sheet.rows[h - 1]]
        sheet = Sheet(
            sheet.name,
            [*sheet.rows[: h - 1], [words[0] for words in cut], *sheet.rows[h:]],
            sheet.currency_formats,
            sheet.raw,
        )
        sheet, lab = _inserted(sheet, lab, {h + 1: [[words[1] if len(words) > 1 else "" for words in cut]]})
        lab["header_rows"] = [h, h + 1]
        return sheet, lab
    first = []  # the first header (a label may list it again further down)
    for h in lab.get("header_rows") or []:
        if first and h != first[-1] + 1:
            break
        first.append(h)
    header = [list(sheet.rows[h - 1]) for h in first if h <= len(sheet.rows)]
    if not header or len(items) <= 40:
        return None
    return _inserted(sheet, lab, {r: [[], *header] for r in items[40::40]})


def _other_change(kind: str, sheet: Sheet, lab: dict, rng: random.Random) -> tuple[Sheet, dict] | None:
    """The changes that add rows or move header cells: (sheet, label), or None when it does not apply."""
    if kind == "foreign":
        return _foreign_header(sheet, lab, rng), lab
    if kind == "shift":
        return (_shifted_header(sheet, lab), lab) if lab.get("header_rows") else None
    if kind == "taxed":
        return _taxed(sheet, lab, rng)
    if kind == "footer":
        return _footer(sheet, lab, rng)
    if kind == "comma":
        changed = _comma_money(sheet, lab)
        return (changed, lab) if changed is not None else None
    if kind == "title":
        address = f"{_word(rng, 8).title()} {rng.randint(1, 99)}, {rng.randint(10000, 99999)} {_word(rng, 7).title()}"
        phone = (
            f"+{rng.randint(1, 99)} {rng.randint(100, 999)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
        )
        date = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(2015, 2026)}"
        name = f"{_word(rng, 6).title()} {_word(rng, 5).title()}"
        return _inserted(sheet, lab, {1: [[name], [f"{address}, tel. {phone}"], [date]]})
    if kind in _MORE_ROWS:
        return _more_rows(kind, sheet, lab)
    if kind in _ADDED:
        return _added_column(kind, sheet, lab, rng)
    if kind == "sections":
        items = rows_of(lab.get("item_rows"))
        if not items:
            return None
        roles = {role: col_index(letter) for letter, role in (lab.get("columns") or {}).items()}
        at = roles.get("description", 0)
        before = {
            r: [[""] * at + [" ".join(_word(rng, 7).title() for _ in range(rng.randint(1, 2)))]]
            for r in items[::10]
        }
        return _inserted(sheet, lab, before)
    return None


def _currency(table: Table, label: dict, rng: random.Random) -> tuple[Table, dict]:
    """``currency``: a file's currency written in its price cells, and stated there by its label."""
    labs = [
        lab for lab in label.get("sheets") or [] if lab["sheet"] < len(table.sheets) and not lab.get("matrix")
    ]
    if any("currency" in (lab.get("columns") or {}).values() for lab in labs):
        return table, label  # a currency column may state another currency on each row
    code = label.get("currency") if label.get("currency") in ISO_CODES else "EUR"
    before, sheets = rng.random() < 0.5, list(table.sheets)
    for lab in labs:
        sheets[lab["sheet"]] = _with_currency(sheets[lab["sheet"]], lab, code, before) or sheets[lab["sheet"]]
    if sheets == list(table.sheets):
        return table, label
    return Table(sheets), {**copy.deepcopy(label), "currency": code, "currency_basis": "cell"}


def perturbed(kind: str, table: Table, label: dict, seed: int = 0) -> tuple[Table, dict]:
    """``table`` and ``label`` with change ``kind`` applied to every labeled sheet (``seed`` varies
    the random order of ``permute``)."""
    rng = random.Random(f"{label['file']}:{seed}" if seed else label["file"])
    if kind == "currency":
        return _currency(table, label, rng)
    sheets, label = list(table.sheets), copy.deepcopy(label)
    for i, lab in enumerate(label.get("sheets") or []):
        if lab["sheet"] >= len(sheets) or lab.get("matrix"):
            continue
        if kind not in _MOVES:
            changed = _other_change(kind, sheets[lab["sheet"]], lab, rng)
            if changed is not None:
                sheets[lab["sheet"]], label["sheets"][i] = changed
            continue
        change = _change(kind, sheets[lab["sheet"]], lab, rng)
        if change is None:
            continue
        sheets[lab["sheet"]] = _moved_sheet(sheets[lab["sheet"]], *change)
        label["sheets"][i] = _moved_label(lab, *change)
    return Table(sheets), label
