"""What the job admin shows of a sheet job: its file and supplier, and its
output as a table of items. The `parse_sheet` kind registers these with
the job registry (catalog.handlers); the admin of `jobs` renders them."""

import json

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from catalog.selectors import job_sheet
from jobs.models import Job

MAX_OUTPUT_ROWS = 500


def sheet_file_html(job: Job) -> str:
    """The uploaded sheet, linked to its admin page, with its size."""
    sheet_id = (job.payload or {}).get("sheet_id")
    if not sheet_id:
        return "-"
    sheet = job_sheet(job=job)
    if sheet is None:
        return str(sheet_id)
    url = reverse("admin:catalog_pricesheet_change", args=[sheet.pk])
    return format_html('<a href="{}">{}</a> ({} bytes)', url, sheet.original_name, sheet.size)


def sheet_supplier_text(job: Job) -> str:
    sheet = job_sheet(job=job)
    return (sheet.supplier_name if sheet is not None else "") or "-"


def _item_row(index: int, item: dict) -> tuple:
    source = item.get("source") or {}
    return (
        "background:#fef3f2" if item.get("flags") else "",
        index,
        item.get("sku") or "",
        Truncator(item.get("description") or "").chars(80),
        item.get("unit") or "",
        "" if item.get("pack_size") is None else item["pack_size"],
        item.get("unit_price") or "",
        item.get("currency") or "",
        "{}:{}".format(source.get("sheet", ""), source.get("row", "")),
        "; ".join(f"{f.get('code')}: {f.get('message')}" for f in item.get("flags") or []),
    )


def sheet_output_html(job: Job) -> str:
    """The staged or published items as a table, flagged rows marked; other
    output as JSON."""
    output = job.output
    if not isinstance(output, dict) or not isinstance(output.get("items"), list):
        if output in (None, "", [], {}):
            return "-"
        return format_html(
            '<pre style="white-space:pre-wrap;margin:0">{}</pre>',
            json.dumps(output, indent=2, ensure_ascii=False, sort_keys=True),
        )
    items = output["items"]
    flagged = sum(1 for item in items if item.get("flags"))
    head = format_html(
        "<p>{} item(s), {} flagged. {}</p>",
        len(items),
        flagged,
        "; ".join(str(n) for n in output.get("notes") or []),
    )
    rows = format_html_join(
        "",
        '<tr style="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
        "<td>{}</td><td>{}</td><td>{}</td></tr>",
        (_item_row(index, item) for index, item in enumerate(items[:MAX_OUTPUT_ROWS], start=1)),
    )
    more = (
        format_html("<p>{} more item(s) not shown.</p>", len(items) - MAX_OUTPUT_ROWS)
        if len(items) > MAX_OUTPUT_ROWS
        else ""
    )
    return format_html(
        "{}<table><thead><tr><th>#</th><th>SKU</th><th>description</th><th>unit</th>"
        "<th>pack</th><th>unit price</th><th>currency</th><th>source</th><th>flags</th>"
        "</tr></thead><tbody>{}</tbody></table>{}",
        head,
        rows,
        more,
    )
