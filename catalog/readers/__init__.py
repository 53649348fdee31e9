"""Readers: one module per format behind one interface, chosen by the bytes.

A reader module has one function, ``read(data, *, limits, filename) -> Table``
(``catalog.reading.Table``). ``FORMATS`` is the registry: the format's name,
its reader module, the extensions and media types the upload form offers,
and how its bytes are told (``detect``). The name a user gave a file never
chooses the reader: an XLSX named ``.xls`` reads as XLSX, a ZIP workbook named
``.csv`` as a workbook. Adding a format is a module and a line here.
"""

from __future__ import annotations

import importlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from catalog.errors import UnreadableSheet
from catalog.readers.common import MSG_EMPTY, ReadLimits, Table

MAGIC_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
MAGIC_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# A BIFF2-BIFF5 workbook saved without an OLE2 container starts with its BOF
# record: id 0x0009/0x0209/0x0409/0x0809, then a small length.
BIFF_BOF = (b"\x09\x00", b"\x09\x02", b"\x09\x04", b"\x09\x08")
MAGIC_PDF = b"%PDF-"
ODS_MIMETYPE = b"application/vnd.oasis.opendocument.spreadsheet"

# Other things people upload by mistake, named so the reason is useful.
_BINARY_KINDS = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"Rar!", "a RAR archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
)


def binary_kind(head: bytes) -> str | None:
    """What a file that is no sheet is ("a PNG image"), by its first bytes; None otherwise."""
    return next((name for magic, name in _BINARY_KINDS if head.startswith(magic)), None)


@dataclass(frozen=True)
class Format:
    name: str
    module: str
    extensions: tuple[str, ...]
    media_types: tuple[str, ...] = ()


FORMATS: dict[str, Format] = {
    "csv": Format(
        "CSV/TSV",
        "catalog.readers.delimited",
        (".csv", ".tsv", ".txt", ".tab"),
        ("text/csv", "text/tab-separated-values"),
    ),
    "xlsx": Format(
        "XLSX",
        "catalog.readers.xlsx",
        (".xlsx", ".xlsm", ".xltx", ".xltm"),
        ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",),
    ),
    "xls": Format("XLS", "catalog.readers.xls", (".xls", ".xlt"), ("application/vnd.ms-excel",)),
    "xlsb": Format(
        "XLSB", "catalog.readers.xlsb", (".xlsb",), ("application/vnd.ms-excel.sheet.binary.macroEnabled.12",)
    ),
    "ods": Format(
        "ODS", "catalog.readers.ods", (".ods",), ("application/vnd.oasis.opendocument.spreadsheet",)
    ),
    "pdf": Format("PDF (with a text layer)", "catalog.readers.pdf", (".pdf",), ("application/pdf",)),
}


def accepted_files() -> str:
    """The upload form's ``accept`` attribute: every extension and media type read."""
    parts = [ext for f in FORMATS.values() for ext in f.extensions]
    parts += [mt for f in FORMATS.values() for mt in f.media_types]
    return ",".join(parts)


def format_names() -> list[str]:
    return [f.name for f in FORMATS.values()]


def read(data: bytes, *, filename: str, limits: ReadLimits) -> Table:
    """Read an upload with the reader its bytes call for."""
    key = detect(data, filename=filename)
    module = importlib.import_module(FORMATS[key].module)
    return module.read(data, limits=limits, filename=filename)


def detect(data: bytes, *, filename: str) -> str:
    """The key in ``FORMATS`` of the format the bytes are; refuses what no reader reads."""
    head = data[:8]
    if not head:
        raise UnreadableSheet(MSG_EMPTY)
    if head.startswith(MAGIC_OLE2) or _is_raw_biff(data):
        return "xls"
    if head.startswith(MAGIC_ZIP):
        # Content wins over a wrong name: a ZIP workbook is unambiguous.
        return _zip_kind(data)
    if head.startswith(MAGIC_PDF):
        return "pdf"
    ext = Path(filename).suffix.lower()
    claimed = next((key for key, f in FORMATS.items() if ext in f.extensions), None)
    for magic, kind in _BINARY_KINDS:
        if head.startswith(magic):
            raise UnreadableSheet(
                f"the file is {kind}, not a spreadsheet"
                + (f" (its name says {FORMATS[claimed].name})" if claimed else "")
            )
    if claimed not in (None, "csv"):
        # A text file named .xlsx (or .xls, .ods, .pdf) is usually an HTML
        # error page or a renamed CSV; reading it as CSV would hide the mistake.
        raise UnreadableSheet(
            f"the name says {FORMATS[claimed].name} but the bytes are not one "
            "(they look like text); upload the real file or rename it to .csv"
        )
    return "csv"


def _is_raw_biff(data: bytes) -> bool:
    if data[:2] not in BIFF_BOF or len(data) < 8:
        return False
    length = int.from_bytes(data[2:4], "little")
    return 4 <= length <= 20


def _zip_kind(data: bytes) -> str:
    """XLSX, XLSB or ODS, told by the archive's members (the XLSX reader
    explains a ZIP that is none of them, or a damaged one)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "mimetype" in names:
                info = zf.getinfo("mimetype")
                mimetype = zf.read(info).strip() if info.file_size <= 200 else b""
                if mimetype == ODS_MIMETYPE:
                    return "ods"
                if mimetype.startswith(b"application/vnd.oasis.opendocument."):
                    kind = mimetype.rsplit(b".", 1)[-1].decode("ascii", "replace")
                    raise UnreadableSheet(
                        f"the file is an OpenDocument {kind}, not a spreadsheet; save it as ODS, XLSX or CSV"
                    )
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return "xlsx"
    if "xl/workbook.bin" in names:
        return "xlsb"
    return "xlsx"
