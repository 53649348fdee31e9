"""How soon the review page of a big sheet is usable in Chromium, and how
much it transfers.

For sheets of 100 (the baseline), 5,000 and 50,000 items, every item
flagged (no currency: the worst case for the page), a job awaiting review
is put in place through the job services; the app runs under gunicorn as in
`make run`; real Chromium opens /review/<job>/ signed in as a reviewer.
"Usable" is the moment the grid shows the items around the first flagged
one with keyboard focus possible (the grid marks itself `data-loaded`),
measured from the start of navigation with the page's own clock. The
transferred size is the sum of `transferSize` over the document and every
resource fetched until then (HTML, CSS, JS, the first JSON page of items).
The grid's snapshot (the items cut into pages) is built when the job enters
review, by the process that accepts it (the worker; here this script, as
the worker would); its time is printed apart. Printed: that time, the first
open, the median of the 3 opens after it, the bytes transferred, and the
ratios to the baseline.

    .venv/bin/python bench/review_page.py
    .venv/bin/python bench/review_page.py --sizes 100,5000   # quicker
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import say  # noqa: E402

DATABASE = "bench_review_page"
PASSWORD = "bench-review-password"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
GOAL_SECONDS = 2.0
GOAL_BYTES = 5 * 1024 * 1024
LOADS = 3


def flagged_job(workspace, supplier, size: int):
    """A job awaiting review with `size` items, each flagged for its currency."""
    from catalog.models import PriceSheet
    from catalog.reading import Table
    from catalog.validation import validate_items
    from jobs.services import job_accept_output, job_admit, job_checkpoint, job_claim_next

    rows = [["Bench price list"], ["SKU", "Description", "Unit", "Price"]]
    rows += [
        [
            f"B-{n:06d}",
            f"Bench article number {n} with a longer description",
            "pcs",
            f"{1 + n % 997}.{n % 100:02d}",
        ]
        for n in range(size)
    ]
    table = {"sheets": [{"name": "Prices", "rows": rows}]}
    items = [
        {
            "sku": r[0],
            "description": r[1],
            "unit": r[2],
            "pack_size": None,
            "unit_price": r[3],
            "currency": None,
            "source": {"sheet": "Prices", "row": n + 3},
        }
        for n, r in enumerate(rows[2:])
    ]
    sheet = PriceSheet.objects.create(
        workspace=workspace,
        supplier=supplier,
        sha256="0" * 64,
        size=1,
        original_name=f"bench-{size}.csv",
        storage_path="sheets/bench",
    )
    job, _ = job_admit(
        workspace_id=workspace.pk,
        kind="parse_sheet",
        payload={"sheet_id": str(sheet.pk), "supplier_id": supplier.pk},
    )
    claim = job_claim_next(worker_id="bench", kinds=["parse_sheet"])
    assert claim is not None and claim.job_id == job.pk
    job_checkpoint(claim=claim, name="table", data=table)
    checked = validate_items(items, Table.from_json(table))
    started = time.perf_counter()
    job_accept_output(
        claim=claim, output={"items": checked, "notes": [], "extractor": "builtin"}, needs_review=True
    )
    return job.pk, time.perf_counter() - started


MEASURE = """() => {
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return {usable_ms: performance.now(),
          bytes: entries.reduce((sum, e) => sum + (e.transferSize || 0), 0),
          requests: entries.length};
}"""


def load_once(browser, base: str, job_id) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{base}/accounts/login/?next=/review/")
        page.fill("input[name=username]", "bench-reviewer")
        page.fill("input[name=password]", PASSWORD)
        page.locator("input[name=password]").press("Enter")
        page.wait_for_url(f"{base}/review/")
        page.goto(f"{base}/review/{job_id}/", wait_until="commit", timeout=120_000)
        page.wait_for_selector("#review-grid[data-loaded=true] [role=gridcell]", timeout=120_000)
        return page.evaluate(MEASURE)
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes",
        default="100,5000,50000",
        help="item counts, the first one is the baseline [100,5000,50000]",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Chromium not found: apt-get install chromium, or set CHROMIUM")

    say(f"fresh database {DATABASE} ...")
    db = common.fresh_database(DATABASE)
    env = db.env(LOG_LEVEL="WARNING", CONN_MAX_AGE=60, HTTPS="false", DEBUG="false")
    db.manage("collectstatic", "--noinput", "--verbosity", "0", env=env)
    common.setup_django(db, HTTPS="false")
    from accounts.models import Membership, Workspace
    from accounts.services import membership_add
    from catalog.models import Supplier

    workspace = Workspace.objects.get(pk=db.workspace_id)
    membership_add(
        workspace=workspace, username="bench-reviewer", role=Membership.Role.REVIEWER, password=PASSWORD
    )
    supplier = Supplier.objects.create(workspace=workspace, name="Bench Supplies")
    jobs, accepts = {}, {}
    for size in sizes:
        say(f"putting a job of {size:,} flagged items in place ...")
        jobs[size], accepts[size] = flagged_job(workspace, supplier, size)

    port, _ = common.start_gunicorn(env)
    base = f"http://127.0.0.1:{port}"
    say(f"gunicorn on {base} (2 workers x 4 threads)")

    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            load_once(browser, base, jobs[sizes[0]])  # warm the server and the browser
            for size in sizes:
                first = load_once(browser, base, jobs[size])
                loads = [load_once(browser, base, jobs[size]) for _ in range(LOADS)]
                results[size] = {
                    "first": first["usable_ms"] / 1000,
                    "seconds": statistics.median(x["usable_ms"] for x in loads) / 1000,
                    "bytes": statistics.median(x["bytes"] for x in loads),
                    "requests": statistics.median(x["requests"] for x in loads),
                }
        finally:
            browser.close()

    baseline = results[sizes[0]]
    rows = []
    for size in sizes:
        r = results[size]
        rows.append(
            [
                f"{size:,}",
                f"{accepts[size]:.3f}",
                f"{r['first']:.3f}",
                f"{r['seconds']:.3f}",
                f"{r['bytes'] / 1024:.0f}",
                f"{r['requests']:.0f}",
                f"{r['seconds'] / baseline['seconds']:.2f}",
                f"{r['bytes'] / baseline['bytes']:.2f}",
            ]
        )
    print(
        common.table(
            [
                "items",
                "accept + snapshot s (worker)",
                "first open s",
                "usable s (median of 3)",
                "transferred KiB",
                "requests",
                "time / baseline",
                "bytes / baseline",
            ],
            rows,
        )
    )
    largest = results[sizes[-1]]
    say(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    say(
        f"goal for the largest sheet: usable < {GOAL_SECONDS} s, < {GOAL_BYTES // 1024 // 1024} MB: "
        f"{'met' if max(largest['first'], largest['seconds']) < GOAL_SECONDS and largest['bytes'] < GOAL_BYTES else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
