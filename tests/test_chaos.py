"""The short chaos soak: real web, worker and relay processes under faults;
every promise is checked by SQL afterwards (bench/chaos.py has the full one)."""

import pytest

from bench.chaos import ChaosConfig, run
from tests.helpers import database_url

pytestmark = [pytest.mark.processes, pytest.mark.soak, pytest.mark.django_db(transaction=True)]


def test_chaos_soak_keeps_every_promise(tmp_path):
    config = ChaosConfig(workers=4, jobs=200, fault_seconds=45, quiesce_seconds=180)
    report = run(
        config, database_url=database_url(), media_root=tmp_path / "media", log_dir=tmp_path / "logs"
    )
    print("\n".join(report.lines()))
    assert report.violations == []
    assert report.stale_rejected >= 1
    assert report.jobs >= 150
    assert sum(report.faults.values()) >= 5


def test_chaos_soak_with_a_noisy_workspace_keeps_the_quiet_ones_waits_short(tmp_path):
    """One workspace uploads 60 sheets at once, another one at a time
    meanwhile, under faults: each quiet job is claimed after at most one
    noisy job per worker, not after the backlog ahead of it (claims made
    while a stopped worker still holds a quiet job's lease are reported
    apart: until it expires, that job is running as far as anyone knows)."""
    config = ChaosConfig(
        workers=4,
        noisy_jobs=60,
        quiet_jobs=4,
        fault_seconds=15,
        fault_interval=(2.0, 4.0),
        quiesce_seconds=150,
    )
    report = run(
        config, database_url=database_url(), media_root=tmp_path / "media", log_dir=tmp_path / "logs"
    )
    print("\n".join(report.lines()))
    assert report.violations == []
    assert len(report.quiet_waits) >= 3
