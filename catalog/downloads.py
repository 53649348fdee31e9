"""A revision's items as a CSV or XLSX download, the same bytes from the
page and from the API. Memory is bounded whatever the revision's size: the
CSV streams from a server-side cursor, the XLSX is written in write-only
mode into a temporary file that is served from disk."""

from __future__ import annotations

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils.text import slugify

from catalog.export import csv_chunks, xlsx_file
from catalog.models import CatalogRevision
from catalog.selectors import revision_export_rows

CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def download_filename(revision: CatalogRevision, extension: str) -> str:
    base = slugify(revision.supplier.name if revision.supplier else revision.workspace.slug) or "catalog"
    return f"{base}-revision-{revision.number}.{extension}"


def revision_download(revision: CatalogRevision, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """`fmt` is "csv" or "xlsx". The XLSX is stamped with the publication
    time, so every download of a revision is the same bytes."""
    if fmt == "csv":
        response = StreamingHttpResponse(
            csv_chunks(revision_export_rows(revision=revision)), content_type=CSV_CONTENT_TYPE
        )
    else:
        response = FileResponse(
            xlsx_file(lambda: revision_export_rows(revision=revision), revision.published_at),
            content_type=XLSX_CONTENT_TYPE,
        )
    response["Content-Disposition"] = f'attachment; filename="{download_filename(revision, fmt)}"'
    return response
