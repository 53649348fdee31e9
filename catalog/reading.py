"""Read an uploaded price sheet into a normalized ``Table``.

The format is decided from the bytes, not the name, and each format has its
reader module behind one interface (``catalog.readers``: CSV/TSV, XLSX, XLS,
XLSB, ODS, text PDF); the table, the limits and what the readers share live
in ``catalog.readers.common`` and are named here for the rest of the product.
"""

from __future__ import annotations

from pathlib import Path

from catalog.readers import read
from catalog.readers.common import (  # noqa: F401  the product's names for them
    CSV_SHEET_NAME,
    ReadLimits,
    Sheet,
    Table,
    _cell_text,
)


def read_table(path, *, filename: str, limits: ReadLimits | None = None) -> Table:
    """Read the file at ``path``; ``filename`` is the name the user gave it."""
    return read_bytes(Path(path).read_bytes(), filename=filename, limits=limits)


def read_bytes(data: bytes, *, filename: str, limits: ReadLimits | None = None) -> Table:
    """Read an uploaded sheet's bytes; ``filename`` is the name the user gave it.
    The reader is chosen by the bytes (``catalog.readers``)."""
    return read(data, filename=filename, limits=limits or ReadLimits())
