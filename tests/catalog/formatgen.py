"""Writers of the other formats for the tests, by code: ODS (a zip of XML),
XLS (xlwt, test-only), XLSB record streams and text PDFs (text objects at
positions). Invented content only."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from xml.sax.saxutils import escape, quoteattr

ODS_MIMETYPE = "application/vnd.oasis.opendocument.spreadsheet"
ODS_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"'
)

# --- ODS ------------------------------------------------------------------------------


def ods_cell(
    value=None,
    *,
    shown: str | None = None,
    kind: str | None = None,
    repeat: int = 1,
    span: tuple[int, int] | None = None,
    currency: str | None = None,
    formula: str | None = None,
    date: str | None = None,
) -> str:
    """One <table:table-cell>. A number's ``shown`` text is what the cell displays."""
    attrs = []
    if repeat > 1:
        attrs.append(f'table:number-columns-repeated="{repeat}"')
    if span:
        attrs.append(f'table:number-rows-spanned="{span[0]}" table:number-columns-spanned="{span[1]}"')
    if formula:
        attrs.append(f"table:formula={quoteattr(formula)}")
    if date is not None:
        attrs.append(f'office:value-type="date" office:date-value="{date}"')
    elif isinstance(value, (int, float)):
        kind = kind or ("currency" if currency else "float")
        attrs.append(f'office:value-type="{kind}" office:value="{value}"')
        if currency:
            attrs.append(f'office:currency="{currency}"')
        shown = str(value) if shown is None else shown
    elif value is not None:
        attrs.append('office:value-type="string"')
        shown = str(value)
    body = f"<text:p>{escape(shown)}</text:p>" if shown is not None else ""
    return f"<table:table-cell {' '.join(attrs)}>{body}</table:table-cell>"


def ods_row(cells: list[str] | str, repeat: int = 1) -> str:
    inner = (
        cells if isinstance(cells, str) else "".join(c if c.startswith("<") else ods_cell(c) for c in cells)
    )
    attr = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    return f"<table:table-row{attr}>{inner}</table:table-row>"


def ods_bytes(
    tables: dict[str, str],
    *,
    mimetype: str = ODS_MIMETYPE,
    content: bytes | None = None,
    extra: dict[str, bytes] | None = None,
    level: int = 9,
) -> bytes:
    """An ODS: table name -> the rows' XML (``ods_row``)."""
    body = "".join(
        f"<table:table table:name={quoteattr(name)}>{rows}</table:table>" for name, rows in tables.items()
    )
    xml = (
        content
        or (
            f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODS_NS}>'
            f"<office:body><office:spreadsheet>{body}</office:spreadsheet></office:body>"
            "</office:document-content>"
        ).encode()
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), mimetype)  # stored, first, as ODF requires
        zf.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
            'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>',
            compress_type=zipfile.ZIP_DEFLATED,
        )
        zf.writestr("content.xml", xml, compress_type=zipfile.ZIP_DEFLATED, compresslevel=level)
        for name, data in (extra or {}).items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


# --- XLS (xlwt) --------------------------------------------------------------------------


def xls_bytes(
    sheets: dict[str, list[list]],
    *,
    formats: dict[tuple[str, int, int], str] | None = None,
    merges: dict[str, list[tuple[int, int, int, int]]] | None = None,
) -> bytes:
    """An XLS: sheet name -> rows (row 0 is spreadsheet row 1); ``formats``:
    (sheet, row, col) -> number format; ``merges``: (r0, r1, c0, c1), inclusive.
    A value ``("=", formula, cached)`` is written as a formula."""
    import xlwt

    book = xlwt.Workbook()
    styles: dict[str, object] = {}
    for name, rows in sheets.items():
        ws = book.add_sheet(name)
        merged = {(r0, c0): (r1, c1) for r0, r1, c0, c1 in (merges or {}).get(name, [])}
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if value is None:
                    continue
                fmt = (formats or {}).get((name, r, c))
                style = styles.setdefault(fmt, xlwt.easyxf(num_format_str=fmt)) if fmt else None
                if isinstance(value, tuple):
                    value = xlwt.Formula(value[1])
                args = (value, style) if style is not None else (value,)
                if (r, c) in merged:
                    r1, c1 = merged[(r, c)]
                    ws.write_merge(r, r1, c, c1, *args)
                else:
                    ws.write(r, c, *args)
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


# --- XLSB ------------------------------------------------------------------------------


def xlsb_record(kind: int, data: bytes = b"") -> bytes:
    head = bytes([kind]) if kind < 0x80 else bytes([(kind & 0x7F) | 0x80, kind >> 7])
    size, out = len(data), bytearray()
    while True:
        b = size & 0x7F
        size >>= 7
        out.append(b | (0x80 if size else 0))
        if not size:
            break
    return head + bytes(out) + data


def _wide(text: str) -> bytes:
    return struct.pack("<I", len(text)) + text.encode("utf-16-le")


def xlsb_bytes(sheet_records: bytes, *, workbook: bytes | None = None, name: str = "S") -> bytes:
    """An XLSB archive around one worksheet part's records (the structure the
    reader looks at: the workbook's sheet list, its relationships, the part)."""
    book = (
        workbook
        if workbook is not None
        else (
            xlsb_record(131)
            + xlsb_record(143)
            + xlsb_record(156, struct.pack("<II", 0, 1) + _wide("rId1") + _wide(name))
            + xlsb_record(144)
            + xlsb_record(132)
        )
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.bin"/></Relationships>'
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.bin", book)
        zf.writestr("xl/_rels/workbook.bin.rels", rels)
        zf.writestr("xl/worksheets/sheet1.bin", sheet_records)
    return buf.getvalue()


def xlsb_cell_rk(row: int, col: int) -> bytes:
    """A row header and one number cell at (row, col), 0-based."""
    return xlsb_record(0, struct.pack("<I", row) + b"\x00" * 13) + xlsb_record(
        2, struct.pack("<I", col) + b"\x00\x00\x00\x00" + struct.pack("<I", 2 << 2)
    )


# --- PDF -------------------------------------------------------------------------------


def _pdf_text(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(
    pages: list[list[tuple[float, float, str]]], *, font_size: float = 10, images_only: bool = False
) -> bytes:
    """A PDF whose pages hold text at positions: (x, y from the top, text) in
    points on an A4 page, in Helvetica (latin-1 text). ``images_only``: each
    page is a grey image and no text, as a scan is."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 1 + 2 * len(pages) + (len(pages) if images_only else 0)
    kids = []
    for lines in pages:
        if images_only:
            pixels = zlib.compress(bytes([128]) * (100 * 100))
            image = add(
                b"<< /Type /XObject /Subtype /Image /Width 100 /Height 100 /ColorSpace /DeviceGray "
                b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
                % len(pixels)
                + pixels
                + b"\nendstream"
            )
            stream = b"q 500 0 0 700 40 70 cm /Im1 Do Q"
            resources = b"<< /XObject << /Im1 %d 0 R >> >>" % image
        else:
            ops = [
                f"BT /F1 {font_size:g} Tf 1 0 0 1 {x:.2f} {842 - y:.2f} Tm ({_pdf_text(t)}) Tj ET"
                for x, y, t in lines
            ]
            stream = "\n".join(ops).encode("latin-1")
            resources = b"<< /Font << /F1 %d 0 R >> >>" % font
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Resources %s /Contents %d 0 R >>"
                % (pages_id, resources, content)
            )
        )
    assert (
        add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids)))
        == pages_id
    )
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    return _pdf_file(objects, catalog)


def _pdf_file(objects: list[bytes], root: int) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def pdf_raw(objects: list[bytes], root: int) -> bytes:
    """A PDF of the given objects as they are (hostile files)."""
    return _pdf_file(objects, root)


def price_list_pdf(pages: int = 2, rows_per_page: int = 20) -> bytes:
    """An invented price list over ``pages`` pages: a title, a header row on
    each page, SKU / description / unit / price columns, prices right-aligned."""
    out = []
    n = 0
    for p in range(pages):
        lines = [
            (40, 40, f"Garden Tools Ltd - price list (EUR) - page {p + 1}"),
            (40, 80, "SKU"),
            (120, 80, "Description"),
            (360, 80, "Unit"),
            (480, 80, "Price"),
        ]
        for i in range(rows_per_page):
            n += 1
            y = 100 + 18 * i
            price = f"{(n * 7) % 90 + 1}.{n % 100:02d}"
            lines += [
                (40, y, f"GT-{n:03d}"),
                (120, y, f"Garden rake model {n}"),
                (360, y, "pcs"),
                (530 - 5 * len(price), y, price),
            ]
        out.append(lines)
    return pdf_bytes(out)
