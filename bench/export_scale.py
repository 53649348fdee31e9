"""Exports and the job page of a 150,000-item revision: bounded memory,
answers in a page.

A revision of `--items` items (150,000 by default) is published through the
job services (admitted, claimed, its output accepted and published, as the
worker does; no HTTP) into a fresh database `bench_export_scale`. Then each
measurement runs in a fresh child process (Django set up, a signed-in test
client, the whole answer read and thrown away as it arrives), so that the
child's peak RSS is what one web worker needs for that answer:

- idle: a small request only (the floor: Python, Django, the app);
- csv / xlsx: the page's export of the revision (`catalog:export_csv`,
  `catalog:export_xlsx`), bytes and seconds;
- page: the job page `/jobs/<id>/` and `GET /api/jobs/<id>/items` (first
  page, default size), answer time and size (the best of 3 after a first).

    .venv/bin/python bench/export_scale.py                  # a few minutes
    .venv/bin/python bench/export_scale.py --items 20000    # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import say  # noqa: E402

DATABASE = "bench_export_scale"
USERNAME = "bench-member"
PAGE_LOADS = 3


def publish_revision(workspace, size: int):
    """A job whose `size` clean items are published as a revision."""
    from catalog.models import CatalogRevision, PriceSheet, Supplier
    from catalog.services import revision_publish
    from jobs.services import job_accept_output, job_admit, job_claim_next

    supplier = Supplier.objects.create(workspace=workspace, name="Bench Supplies")
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
    items = [
        {
            "sku": f"B-{n:07d}",
            "description": f"Bench article number {n} with a longer description",
            "unit": "pcs",
            "pack_size": str(1 + n % 50),
            "unit_price": f"{1 + n % 997}.{n % 100:02d}",
            "currency": "EUR",
            "source": {"sheet": "Prices", "row": n + 2},
            "flags": [],
        }
        for n in range(size)
    ]
    job_accept_output(
        claim=claim,
        output={"items": items, "notes": [], "extractor": "builtin"},
        publish=lambda accepted: revision_publish(job=accepted),
    )
    return job.pk, CatalogRevision.objects.get(job_id=job.pk)


def peak_rss_mb() -> float:
    """This process's peak resident set. VmHWM starts afresh at exec, where
    getrusage's ru_maxrss would carry the parent's peak over."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, job_id: str, revision_id: str) -> None:
    """One measurement in this process; prints a JSON line."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username=USERNAME))

    def fetch(url: str) -> tuple[int, float]:
        started = time.perf_counter()
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        size = (
            sum(len(piece) for piece in response.streaming_content)
            if response.streaming
            else len(response.content)
        )
        response.close()
        return size, time.perf_counter() - started

    result: dict = {"mode": mode}
    if mode == "idle":
        result["bytes"], result["seconds"] = fetch("/accounts/login/")
    elif mode in ("csv", "xlsx"):
        result["bytes"], result["seconds"] = fetch(reverse(f"catalog:export_{mode}", args=[revision_id]))
    else:
        for name, url in (("page", f"/jobs/{job_id}/"), ("api", f"/api/jobs/{job_id}/items")):
            fetch(url)
            loads = [fetch(url) for _ in range(PAGE_LOADS)]
            result[f"{name}_bytes"] = loads[0][0]
            result[f"{name}_seconds"] = min(seconds for _, seconds in loads)
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))


def run_child(db, mode: str, job_id, revision_id) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--job", str(job_id), "--revision", str(revision_id)],
        env=db.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=150_000)
    parser.add_argument("--child", choices=("idle", "csv", "xlsx", "page"))
    parser.add_argument("--job")
    parser.add_argument("--revision")
    args = parser.parse_args()
    if args.child:
        import django

        sys.path.insert(0, str(common.ROOT))
        django.setup()
        child(args.child, args.job, args.revision)
        return

    say(f"fresh database {DATABASE} ...")
    db = common.fresh_database(DATABASE)
    db.manage("collectstatic", "--noinput", "--verbosity", "0")  # the pages name hashed files
    common.setup_django(db)
    from accounts.models import Membership, Workspace
    from accounts.services import membership_add

    workspace = Workspace.objects.get(pk=db.workspace_id)
    membership_add(
        workspace=workspace, username=USERNAME, role=Membership.Role.MEMBER, password="bench-member-password"
    )
    say(f"publishing a revision of {args.items:,} items through the services ...")
    started = time.perf_counter()
    job_id, revision = publish_revision(workspace, args.items)
    say(
        f"published revision {revision.number} ({revision.item_count:,} items) "
        f"in {time.perf_counter() - started:.1f} s"
    )

    results = {}
    for mode in ("idle", "csv", "xlsx", "page"):
        say(f"measuring {mode} in a fresh process ...")
        results[mode] = run_child(db, mode, job_id, revision.public_id)
    idle = results["idle"]["peak_rss_mb"]
    rows = [
        [
            what,
            f"{results[what]['bytes'] / 1e6:.1f}",
            f"{results[what]['seconds']:.1f}",
            f"{results[what]['peak_rss_mb']:.0f}",
            f"{results[what]['peak_rss_mb'] - idle:.0f}",
        ]
        for what in ("csv", "xlsx")
    ]
    print(common.table(["export", "MB", "seconds", "peak RSS MB", "over idle MB"], rows))
    page = results["page"]
    print(
        common.table(
            ["answer", "KB", "seconds (best of 3)"],
            [
                ["job page /jobs/<id>/", f"{page['page_bytes'] / 1e3:.0f}", f"{page['page_seconds']:.3f}"],
                ["GET /api/jobs/<id>/items", f"{page['api_bytes'] / 1e3:.0f}", f"{page['api_seconds']:.3f}"],
            ],
        )
    )
    say(f"idle process peak RSS {idle:.0f} MB; page process peak RSS {page['peak_rss_mb']:.0f} MB")
    say(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
