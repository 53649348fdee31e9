"""A hostile corpus, generated in memory: files an attacker with an ordinary
member account could upload to make a worker slow, big or confused. Used by
the tests and by `bench/hostile_input.py`; nothing here is stored on disk.

Each entry is ``name -> (filename, bytes builder, expectation)`` where the
expectation is ``"refused"`` (the job needs attention with a reason) or
``"read"`` (the file is legitimately small and reads correctly).
"""

import io
import random
import zipfile

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
HEADER = "SKU,Description,Unit,Price,Currency\n"


def xlsx_bytes(
    sheets: dict[str, bytes],
    *,
    shared_strings: bytes | None = None,
    extra: dict[str, bytes] | None = None,
    level: int = 9,
) -> bytes:
    """A minimal workbook: sheet name -> worksheet XML."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        overrides = "".join(
            f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
            f'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            for i in range(1, len(sheets) + 1)
        )
        zf.writestr(
            "[Content_Types].xml",
            (
                '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                '<Default Extension="xml" ContentType="application/xml"/>'
                '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
                + overrides
                + (
                    '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
                    'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
                    if shared_strings is not None
                    else ""
                )
                + "</Types>"
            ),
        )
        zf.writestr(
            "_rels/.rels",
            (
                f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{NS_PKG}">'
                f'<Relationship Id="rId1" Type="{NS_R}/officeDocument" Target="xl/workbook.xml"/>'
                "</Relationships>"
            ),
        )
        entries = "".join(
            f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(sheets, start=1)
        )
        zf.writestr(
            "xl/workbook.xml",
            (
                f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{NS}" xmlns:r="{NS_R}">'
                f"<sheets>{entries}</sheets></workbook>"
            ),
        )
        rels = "".join(
            f'<Relationship Id="rId{i}" Type="{NS_R}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(sheets) + 1)
        )
        if shared_strings is not None:
            rels += (
                f'<Relationship Id="rId{len(sheets) + 1}" Type="{NS_R}/sharedStrings" '
                'Target="sharedStrings.xml"/>'
            )
            zf.writestr("xl/sharedStrings.xml", shared_strings)
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{NS_PKG}">{rels}</Relationships>',
        )
        for i, xml in enumerate(sheets.values(), start=1):
            zf.writestr(f"xl/worksheets/sheet{i}.xml", xml)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


def worksheet(rows_xml: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{NS}"><sheetData>{rows_xml}</sheetData></worksheet>'.encode()


def inline_row(r: int, values: list[str]) -> str:
    cells = "".join(
        f'<c r="{chr(65 + i)}{r}" t="inlineStr"><is><t>{v}</t></is></c>' for i, v in enumerate(values)
    )
    return f'<row r="{r}">{cells}</row>'


ITEM_ROWS = inline_row(1, ["SKU", "Description", "Unit", "Price", "Currency"]) + inline_row(
    2, ["A-1", "Apples", "kg", "1.50", "EUR"]
)


# --- the files ---------------------------------------------------------------------


def digits_description_csv() -> bytes:
    """A description of 16,000 digits then a letter: quadratic for a
    backtracking pattern that looks for a number."""
    return (HEADER + f"A-1,{'1' * 16_000}x,kg,1.50,EUR\n").encode()


def digits_price_csv() -> bytes:
    """A price of 16,000 digits: beyond Python's int() digit limit."""
    return (HEADER + f"A-1,Apples,kg,{'9' * 16_000},EUR\n").encode()


def million_char_cell_xlsx() -> bytes:
    """A million letters in one cell (random, so no ratio check catches it)."""
    rnd = random.Random(3)
    text = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(1_000_000))
    return xlsx_bytes({"S": worksheet(ITEM_ROWS + inline_row(3, ["B-2", text, "kg", "2", "EUR"]))})


def million_char_cell_csv() -> bytes:
    return (HEADER + f"A-1,{'x' * 1_000_000},kg,1.50,EUR\n").encode()


def sparse_sheets_xlsx(count: int = 100, row: int = 150_000) -> bytes:
    sheet = worksheet(f'<row r="{row}"><c r="A{row}" t="inlineStr"><is><t>x</t></is></c></row>')
    return xlsx_bytes({f"S{i}": sheet for i in range(1, count + 1)})


def blank_lines_then_item_csv(megabytes: int = 19) -> bytes:
    return (HEADER + "\n" * (megabytes * 1024 * 1024) + "A-1,Apples,kg,1.50,EUR\n").encode()


def trailing_blank_lines_csv(megabytes: int = 19) -> bytes:
    return (HEADER + "A-1,Apples,kg,1.50,EUR\n" + "\r\n" * (megabytes * 512 * 1024)).encode()


def zip_bomb_xlsx() -> bytes:
    """One worksheet part of 200 MB of padding, a few hundred KB compressed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.xml", f'<workbook xmlns="{NS}"/>')
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as part:
            part.write(f'<worksheet xmlns="{NS}"><sheetData>'.encode())
            block = b" " * (1024 * 1024)
            for _ in range(200):
                part.write(block)
            part.write(b"</sheetData></worksheet>")
    return buf.getvalue()


def many_small_parts_xlsx(parts: int = 400, size: int = 60 * 1024) -> bytes:
    """Many parts, each under the per-part threshold, each expanding ~1000x."""
    filler = worksheet(ITEM_ROWS).replace(b"</sheetData>", b"</sheetData>" + b" " * size)
    return xlsx_bytes(
        {f"S{i}": filler for i in range(1, 41)},
        extra={f"xl/media/pad{i}.xml": b"<x>" + b" " * size + b"</x>" for i in range(parts)},
    )


def deep_nesting_xlsx(depth: int = 100_000) -> bytes:
    rnd = random.Random(7)
    names = [f"n{rnd.randrange(16**5):05x}" for _ in range(depth)]
    inner = "".join(f"<{n}>" for n in names) + "".join(f"</{n}>" for n in reversed(names))
    xml = worksheet(ITEM_ROWS.replace("<t>Apples</t>", f"<t>Apples</t>{inner}"))
    return xlsx_bytes({"S": xml}, level=1)


def huge_shared_strings_xlsx(count: int = 400_000) -> bytes:
    rnd = random.Random(11)
    items = "".join(f"<si><t>{rnd.getrandbits(64):016x}{i}</t></si>" for i in range(count))
    sst = f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{NS}" count="{count}" uniqueCount="{count}">{items}</sst>'
    rows = '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
    return xlsx_bytes({"S": worksheet(rows)}, shared_strings=sst.encode())


def many_columns_xlsx() -> bytes:
    return xlsx_bytes(
        {"S": worksheet(ITEM_ROWS + '<row r="3"><c r="XFD3" t="inlineStr"><is><t>far</t></is></c></row>')}
    )


def wide_sparse_sheet_xlsx() -> bytes:
    """One cell at the last row Excel allows."""
    return xlsx_bytes(
        {
            "S": worksheet(
                ITEM_ROWS + '<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>far</t></is></c></row>'
            )
        }
    )


def legit_sparse_xlsx() -> bytes:
    """Legitimately small: items, then one note far below (row 5,000)."""
    return xlsx_bytes({"S": worksheet(ITEM_ROWS + inline_row(5000, ["end of list"]))})


# --- amplification: small to read, big once every reference is written out --------


def _long_text(length: int, seed: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(length))


def _shared_item_rows(first: int, count: int, prefix: str = "") -> str:
    """Item rows whose description is shared string 0."""
    return "".join(
        f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>{prefix}S-{r}</t></is></c>'
        f'<c r="B{r}" t="s"><v>0</v></c>'
        f'<c r="C{r}" t="inlineStr"><is><t>kg</t></is></c><c r="D{r}"><v>{r}.5</v></c>'
        f'<c r="E{r}" t="inlineStr"><is><t>EUR</t></is></c></row>'
        for r in range(first, first + count)
    )


def _one_shared_string(text: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{NS}" count="1" uniqueCount="1">'
        f"<si><t>{text}</t></si></sst>"
    ).encode()


def shared_string_references_xlsx(rows: int = 20_000, length: int = 30_000) -> bytes:
    """One 30,000-character shared string named as the description of 20,000
    items: about 600 MB once every reference is written out."""
    return xlsx_bytes(
        {"S": worksheet(ITEM_ROWS.replace("Apples", "Pears") + _shared_item_rows(3, rows))},
        shared_strings=_one_shared_string(_long_text(length, 5)),
    )


def repeated_inline_strings_xlsx(rows: int = 2_500, length: int = 30_000) -> bytes:
    """The same 30,000-character inline string in 2,500 rows: each a copy of
    its own, compressed to a few hundred bytes by the ZIP."""
    text = _long_text(length, 9)
    body = "".join(inline_row(r, [f"S-{r}", text, "kg", f"{r}.5", "EUR"]) for r in range(3, 3 + rows))
    return xlsx_bytes({"S": worksheet(ITEM_ROWS + body)})


def sheets_of_references_xlsx(sheets: int = 50, rows: int = 500, length: int = 30_000) -> bytes:
    """50 sheets of 500 items whose description is the one shared string."""
    return xlsx_bytes(
        {
            f"S{i}": worksheet(ITEM_ROWS + _shared_item_rows(3, rows, prefix=f"{i}-"))
            for i in range(1, sheets + 1)
        },
        shared_strings=_one_shared_string(_long_text(length, 13)),
    )


def long_descriptions_csv(rows: int = 200, length: int = 16_000) -> bytes:
    """Descriptions of 16,000 characters, one per row: within every limit, longer than any real one."""
    text = _long_text(length - 8, 17)
    return (HEADER + "".join(f"S-{r},Item {r:03d} {text},kg,{r}.5,EUR\n" for r in range(rows))).encode()


def odd_length_utf16_csv() -> bytes:
    """UTF-16 with a byte-order mark, cut one byte into a character."""
    return b"\xff\xfe" + (HEADER + "A-1,Apples,kg,1.50,EUR\n").encode("utf-16-le") + b"A"


def late_nul_byte_csv() -> bytes:
    """A NUL inside a cell, past the first few kilobytes the type check looks at."""
    filler = "".join(f"S-{r},Item {r},kg,{r}.5,EUR\n" for r in range(400))
    return (HEADER + filler + "B-2,Pe\x00ars,kg,2,EUR\n").encode()


# The amplification family: each ends in needs_attention or publishes values
# cut to a plausible length and flagged.
AMPLIFICATION = (
    "shared-string-references.xlsx",
    "repeated-inline-strings.xlsx",
    "sheets-of-references.xlsx",
    "long-descriptions.csv",
)

# name -> (upload file name, builder, expectation)
CORPUS = {
    "digits-description.csv": ("digits.csv", digits_description_csv, "any"),
    "digits-price.csv": ("digits-price.csv", digits_price_csv, "any"),
    "million-char-cell.xlsx": ("long.xlsx", million_char_cell_xlsx, "any"),
    "million-char-cell.csv": ("long.csv", million_char_cell_csv, "refused"),
    "100-sparse-sheets.xlsx": ("sparse.xlsx", sparse_sheets_xlsx, "refused"),
    "50-sparse-sheets.xlsx": ("sparse50.xlsx", lambda: sparse_sheets_xlsx(50), "refused"),
    "blank-lines-then-item.csv": ("blank.csv", blank_lines_then_item_csv, "refused"),
    "trailing-blank-lines.csv": ("trailing.csv", trailing_blank_lines_csv, "read"),
    "zip-bomb.xlsx": ("bomb.xlsx", zip_bomb_xlsx, "refused"),
    "many-small-parts.xlsx": ("parts.xlsx", many_small_parts_xlsx, "refused"),
    "deep-nesting.xlsx": ("deep.xlsx", deep_nesting_xlsx, "any"),
    "huge-shared-strings.xlsx": ("sst.xlsx", huge_shared_strings_xlsx, "any"),
    "far-column.xlsx": ("wide.xlsx", many_columns_xlsx, "refused"),
    "last-excel-row.xlsx": ("far.xlsx", wide_sparse_sheet_xlsx, "refused"),
    "legit-sparse.xlsx": ("note.xlsx", legit_sparse_xlsx, "read"),
    "shared-string-references.xlsx": ("refs.xlsx", shared_string_references_xlsx, "any"),
    "repeated-inline-strings.xlsx": ("inline.xlsx", repeated_inline_strings_xlsx, "any"),
    "sheets-of-references.xlsx": ("refsheets.xlsx", sheets_of_references_xlsx, "any"),
    "long-descriptions.csv": ("longdesc.csv", long_descriptions_csv, "any"),
    "odd-length-utf16.csv": ("utf16.csv", odd_length_utf16_csv, "refused"),
    "late-nul-byte.csv": ("nul.csv", late_nul_byte_csv, "refused"),
}


# --- the other formats ---------------------------------------------------------------


def zip_bomb_ods() -> bytes:
    """content.xml of 200 MB of padding, a few hundred KB compressed."""
    from tests.catalog.formatgen import ODS_MIMETYPE

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), ODS_MIMETYPE)
        info = zipfile.ZipInfo("content.xml", date_time=(2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as part:
            block = b" " * (1024 * 1024)
            for _ in range(200):
                part.write(block)
    return buf.getvalue()


def zip_bomb_xlsb() -> bytes:
    """A worksheet part of 200 MB of zero bytes, written in blocks (never held)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.bin", b"")
        with zf.open("xl/worksheets/sheet1.bin", "w", force_zip64=True) as part:
            block = b"\x00" * (1024 * 1024)
            for _ in range(200):
                part.write(block)
    return buf.getvalue()


def sparse_range_xlsb() -> bytes:
    """Two number cells, A1 and XFD1048576: a dense reader would hold 17 billion cells."""
    from tests.catalog.formatgen import xlsb_bytes, xlsb_cell_rk

    return xlsb_bytes(xlsb_cell_rk(0, 0) + xlsb_cell_rk(1_048_575, 16_383))


def sparse_rows_ods() -> bytes:
    """A million empty rows repeated, then one value at the last row ODS allows."""
    from tests.catalog.formatgen import ods_bytes, ods_cell, ods_row

    return ods_bytes(
        {"T": ods_row(["SKU", "Price"]) + ods_row("", repeat=1_048_574) + ods_row([ods_cell("far")])}
    )


def repeated_columns_ods() -> bytes:
    """One value repeated over 16,384 columns of a million repeated rows."""
    from tests.catalog.formatgen import ods_bytes, ods_cell, ods_row

    return ods_bytes({"T": ods_row([ods_cell("x", repeat=16_384)], repeat=1_048_576)})


def deep_nesting_ods(depth: int = 100_000) -> bytes:
    from tests.catalog.formatgen import ods_bytes, ods_row

    inner = "<text:span>" * depth + "x" + "</text:span>" * depth
    cell = f'<table:table-cell office:value-type="string"><text:p>{inner}</text:p></table:table-cell>'
    return ods_bytes({"T": ods_row(["SKU", "Description"]) + ods_row(cell)}, level=1)


def broken_ole_xls() -> bytes:
    """An OLE2 header whose sector tables point nowhere."""
    rnd = random.Random(5)
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(rnd.getrandbits(8) for _ in range(4096))


def truncated_xls() -> bytes:
    from tests.catalog.formatgen import xls_bytes

    data = xls_bytes({"S": [["SKU", "Price"]] + [[f"A-{i}", i + 0.5] for i in range(2000)]})
    return data[: len(data) // 3]


def many_pages_pdf(pages: int = 5_000) -> bytes:
    from tests.catalog.formatgen import pdf_bytes

    return pdf_bytes([[(40, 40, "x")] for _ in range(pages)])


def huge_stream_pdf() -> bytes:
    """A page whose content stream inflates to 1 GB (about 1 MB compressed)."""
    import zlib

    from tests.catalog.formatgen import pdf_raw

    comp = zlib.compressobj(9)
    body = b"".join(comp.compress(b" " * (1024 * 1024)) for _ in range(1024)) + comp.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body) + body + b"\nendstream",
    ]
    return pdf_raw(objects, 1)


def deep_nesting_pdf(depth: int = 100_000) -> bytes:
    from tests.catalog.formatgen import pdf_raw

    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources "
        + b"[" * depth
        + b"]" * depth
        + b" >>",
    ]
    return pdf_raw(objects, 1)


def scanned_pdf() -> bytes:
    from tests.catalog.formatgen import pdf_bytes

    return pdf_bytes([[], []], images_only=True)


CORPUS.update(
    {
        "zip-bomb.ods": ("bomb.ods", zip_bomb_ods, "refused"),
        "zip-bomb.xlsb": ("bomb.xlsb", zip_bomb_xlsb, "refused"),
        "sparse-range.xlsb": ("sparse.xlsb", sparse_range_xlsb, "refused"),
        "sparse-rows.ods": ("sparse.ods", sparse_rows_ods, "refused"),
        "repeated-columns.ods": ("repeat.ods", repeated_columns_ods, "refused"),
        "deep-nesting.ods": ("deep.ods", deep_nesting_ods, "any"),
        "broken-ole.xls": ("broken.xls", broken_ole_xls, "refused"),
        "truncated.xls": ("cut.xls", truncated_xls, "refused"),
        "5000-pages.pdf": ("pages.pdf", many_pages_pdf, "refused"),
        "huge-stream.pdf": ("stream.pdf", huge_stream_pdf, "refused"),
        "deep-nesting.pdf": ("deep.pdf", deep_nesting_pdf, "refused"),
        "scan.pdf": ("scan.pdf", scanned_pdf, "refused"),
    }
)
