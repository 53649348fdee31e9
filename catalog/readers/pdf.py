"""Text PDFs with pdfplumber: one sheet per page, one row per line of text.

A price list printed to PDF from a spreadsheet or an ERP keeps its text
with positions. Each page becomes a sheet named ``page N`` whose row ``i``
is the page's ``i``-th line of text from the top, so an item cites its page
and line. A line's words are joined into cells where the gap between them
is wider than a space; the cells of the page are put in columns by where
they stand (the x-ranges of the cells of lines with two or more cells,
overlapping ranges merged into one column), so a right-aligned price column
stays one column.

A PDF with no text at all (a scan) is refused with a reason that says so.
More than ``max_pages`` pages is refused before any page is read; a Flate
stream inflating beyond 64 MB is refused before pdfminer inflates it whole;
deep object nesting is held by the child's memory and time limits, and its
errors become plain reasons here.
"""

from __future__ import annotations

import io
import re
import zlib

from catalog.errors import UnreadableSheet
from catalog.readers.common import MSG_TOO_MANY_COLUMNS, ReadLimits, Sheet, Table, error_text

MSG_SCAN = (
    "the PDF has no text layer (it is a scanned image): upload the spreadsheet it was made "
    "from, or have it read by the model-backed extractor"
)
MSG_NO_TEXT = (
    "the PDF holds no text on any page (no text layer): upload the spreadsheet it was made "
    "from, or have it read by the model-backed extractor"
)
MSG_PAGES = "the PDF has {count} pages (limit {limit}); split it or upload the spreadsheet it was made from"
MSG_STREAM = (
    "the PDF holds a stream that inflates to more than {mb} MB (a compressed bomb, "
    "or far more than a price list needs)"
)
MSG_UNREADABLE = "the PDF cannot be read: {detail}"
MSG_ENCRYPTED = "the PDF is password-protected: remove the password and upload it again"
MSG_NESTED = "the PDF cannot be read: its objects are nested too deeply"

# Lines: words whose tops differ by less than this share a line (points).
LINE_TOLERANCE = 3.0
# Cells: a gap wider than this share of the font size separates two cells
# (a space is about a quarter to a third of it).
CELL_GAP = 0.6
_SPACES = re.compile(r"\s+")
_STREAM = re.compile(rb"stream\r?\n")
# pdfminer inflates a stream whole, in memory: streams are measured first,
# inflating in bounded steps, and one that grows beyond this is refused.
MAX_STREAM_BYTES = 64 * 1024 * 1024


def read(data: bytes, *, limits: ReadLimits, filename: str = "") -> Table:
    import pdfplumber
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfparser import PDFSyntaxError
    from pdfminer.psparser import PSException

    check_streams(data)
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            count = len(pdf.pages)
            if count > limits.max_pages:
                raise UnreadableSheet(MSG_PAGES.format(count=count, limit=limits.max_pages))
            sheets, images = [], 0
            for number, page in enumerate(pdf.pages, start=1):
                sheets.append(Sheet(name=f"page {number}", rows=page_rows(_words(page), limits, number)))
                images += len(page.images)
                page.close()  # drop the page's cached objects before the next
    except UnreadableSheet:
        raise
    except (PDFEncryptionError, PDFPasswordIncorrect) as exc:
        raise UnreadableSheet(MSG_ENCRYPTED) from exc
    except RecursionError as exc:
        raise UnreadableSheet(MSG_NESTED) from exc
    except MemoryError:
        raise
    except (
        PDFSyntaxError,
        PSException,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        AssertionError,
        OSError,
        EOFError,
        ZeroDivisionError,
        OverflowError,
    ) as exc:
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    except Exception as exc:  # pdfplumber's own errors (e.g. PdfminerException) wrap the above
        if isinstance(exc.__cause__ or exc.__context__, RecursionError):
            raise UnreadableSheet(MSG_NESTED) from exc
        if "encrypt" in str(exc).lower() or "password" in str(exc).lower():
            raise UnreadableSheet(MSG_ENCRYPTED) from exc
        raise UnreadableSheet(MSG_UNREADABLE.format(detail=error_text(exc))) from exc
    if not any(s.rows for s in sheets):
        # Pages of images and no text are a scan; pages of nothing at all are
        # said as they are.
        raise UnreadableSheet(MSG_SCAN if images else MSG_NO_TEXT)
    return Table(sheets=sheets)


def check_streams(data: bytes, limit: int = MAX_STREAM_BYTES) -> None:
    """Refuse a PDF whose Flate stream inflates beyond ``limit`` bytes, measured
    without holding the output (streams that are not zlib data are skipped)."""
    for match in _STREAM.finditer(data):
        end = data.find(b"endstream", match.end())
        body = memoryview(data)[match.end() : end if end >= 0 else len(data)]
        inflater, size, step = zlib.decompressobj(), 0, 1 << 20
        try:
            chunk = inflater.decompress(body, step)
            while chunk:
                size += len(chunk)
                if size > limit:
                    raise UnreadableSheet(MSG_STREAM.format(mb=limit // (1024 * 1024)))
                chunk = inflater.decompress(inflater.unconsumed_tail, step)
        except zlib.error:
            continue


def _words(page) -> list[dict]:
    return page.extract_words(keep_blank_chars=False, use_text_flow=False, extra_attrs=["size"])


def page_rows(words: list[dict], limits: ReadLimits, number: int) -> list[list[str]]:
    """A page's rows: ``rows[i]`` is line ``i + 1`` from the top, cut into columns.
    ``words`` are pdfplumber's words (``text``, ``x0``, ``x1``, ``top``, ``size``)."""
    lines = _lines(words)
    cells = [_cells(line) for line in lines]
    columns = _columns(cells)
    if len(columns) > limits.max_columns:
        raise UnreadableSheet(
            MSG_TOO_MANY_COLUMNS.format(
                sheet=f"page {number}", row=1, col=len(columns), limit=limits.max_columns
            )
        )
    placed = [[_column_of(columns, x0, x1) for x0, x1, _ in line_cells] for line_cells in cells]
    group = _complementary_groups(placed, len(columns))
    rows = []
    for line_cells, cols in zip(cells, placed, strict=True):
        row = [""] * (max(group, default=-1) + 1)
        for (_x0, _x1, text), col in zip(line_cells, cols, strict=True):
            col = group[col]
            row[col] = (row[col] + " " + text).strip() if row[col] else text[: limits.max_cell_chars]
        while row and not row[-1]:
            row.pop()
        rows.append(row)
    return rows


def _lines(words: list[dict]) -> list[list[dict]]:
    lines: list[list[dict]] = []
    for word in sorted(words, key=lambda w: (round(w["top"], 1), w["x0"])):
        if lines and abs(word["top"] - lines[-1][0]["top"]) < LINE_TOLERANCE:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _cells(line: list[dict]) -> list[tuple[float, float, str]]:
    """Words joined into cells: (x0, x1, text)."""
    cells: list[list] = []
    for word in line:
        gap_limit = CELL_GAP * float(word.get("size") or 10)
        if cells and word["x0"] - cells[-1][1] <= gap_limit:
            cells[-1][1] = max(cells[-1][1], word["x1"])
            cells[-1][2] += " " + word["text"]
        else:
            cells.append([word["x0"], word["x1"], word["text"]])
    return [(x0, x1, _SPACES.sub(" ", text).strip()) for x0, x1, text in cells]


def _columns(lines: list[list[tuple[float, float, str]]]) -> list[tuple[float, float]]:
    """Column x-ranges: the ranges of the cells of lines with two or more cells
    (a title alone on its line does not join columns), overlaps merged."""
    spans = sorted((x0, x1) for cells in lines if len(cells) > 1 for x0, x1, _ in cells)
    if not spans:
        spans = sorted((x0, x1) for cells in lines for x0, x1, _ in cells)[:1]
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    return [(a, b) for a, b in columns]


def _complementary_groups(placed: list[list[int]], count: int) -> list[int]:
    """Adjacent columns that never hold cells on the same line are one column
    (a left-aligned header over right-aligned prices that do not overlap it):
    the new index of each column."""
    lines_of: list[set[int]] = [set() for _ in range(count)]
    for i, cols in enumerate(placed):
        for col in cols:
            lines_of[col].add(i)
    group, current, members = [], -1, set()
    for col in range(count):
        if current >= 0 and not (members & lines_of[col]):
            members |= lines_of[col]
        else:
            current, members = current + 1, set(lines_of[col])
        group.append(current)
    return group


def _column_of(columns: list[tuple[float, float]], x0: float, x1: float) -> int:
    """The column a cell overlaps most; a cell between columns goes to the one it starts after."""
    best, best_overlap = None, 0.0
    for i, (a, b) in enumerate(columns):
        overlap = min(b, x1) - max(a, x0)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    if best is not None:
        return best
    before = [i for i, (a, _b) in enumerate(columns) if a <= x0]
    return before[-1] if before else 0
