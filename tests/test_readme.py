"""The README's commands work as pasted: every shell block that is a
command runs, exactly as written, in a second terminal against a real
`make run` on a port other than the default, and Ctrl-C stops `make run`
quietly."""

import contextlib
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from contextlib import contextmanager

import psutil
import pytest

from tests.helpers import ROOT, free_port, subprocess_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


# The shell blocks that are not commands for a second terminal, by their
# first line, and why.
NOT_RUN = {
    "make run    # set up everything": "make run itself, which the test starts",
    ".venv/bin/python manage.py runworker [--concurrency N]": "the command's synopsis",
    "SHEETS_STORAGE=s3": "settings for an object store",
}


def readme_sh_blocks() -> list[str]:
    return re.findall(r"^ *```sh\n(.*?)^ *```", (ROOT / "README.md").read_text(), re.S | re.M)


def readme_http_block() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Over HTTP") :]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def readme_sync_blocks() -> str:
    """The downstream sync guide's blocks, run one after the other in one
    terminal (the webhook example uses what the polling one set)."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Keeping a downstream system in sync") :]
    section = section[: section.index("\n## ")]
    return "\n".join(re.findall(r"```sh\n(.*?)```", section, re.S))


def second_terminal(port: int) -> dict[str, str]:
    """None of the settings the test sets for its processes, not even the
    port: only where the (test) database is."""
    return {
        k: v
        for k, v in subprocess_env().items()
        if k not in ("SECRET_KEY", "HTTPS", "DJANGO_SETTINGS_MODULE", "PORT")
    }


def run_block(block: str, port: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=second_terminal(port),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_readme_shell_block_is_run_or_said_not_to_be_a_command():
    blocks = readme_sh_blocks()
    ran = readme_http_block() + readme_sync_blocks()
    others = [b for b in blocks if b not in ran]
    firsts = {b.strip().splitlines()[0] for b in others}
    assert {line for line in firsts if not any(line.startswith(k) for k in NOT_RUN)} == set()
    assert len(others) == len(NOT_RUN)


def answers(port: int) -> bool:
    """Whether the web server answers HTTP on `port` (any status)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@contextmanager
def make_run(tmp_path, port: int):
    """`make run` on the test database, in a session of its own (like a
    terminal's foreground group, so a SIGINT to the group is a Ctrl-C)."""
    with open(tmp_path / "make-run.log", "wb") as log:  # make keeps its own descriptor
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=subprocess_env(PORT=port),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proc.log_path = log.name
    try:
        wait_for(
            lambda: answers(port) or proc.poll() is not None,
            timeout=180,
            interval=0.2,
            message="make run to answer",
        )
        assert proc.poll() is None, (tmp_path / "make-run.log").read_text()
        yield proc
    finally:
        try:
            family = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for each in [proc, *family]:
            with contextlib.suppress(ProcessLookupError, psutil.NoSuchProcess):
                each.kill()
        proc.wait(timeout=10)


def test_readme_http_examples_run_as_written(tmp_path):
    from catalog.models import Supplier

    port = free_port()
    assert port != 8000
    block = readme_http_block()
    assert "uuidgen" not in block

    with make_run(tmp_path, port):
        result = run_block(block, port)
        assert result.returncode == 0, result.stderr
        # The sync guide reads a published supplier: the demo's clean sheet.
        wait_for(
            lambda: Supplier.objects.filter(current_revision__isnull=False).exists(),
            timeout=120,
            interval=0.2,
            message="a supplier with a published revision",
        )
        sync = run_block(readme_sync_blocks(), port)

    out = result.stdout
    assert re.search(r'"state": "(queued|running|completed|awaiting_review)"', out)
    assert '"items": [' in out
    assert '"results": [' in out and '"count": ' in out
    assert "/problems/" in out or '"state": "cancelled"' in out  # cancel answered

    assert sync.returncode == 0, sync.stderr
    assert '"current_revision_id": "' in sync.stdout
    assert "HTTP/1.1 304 Not Modified" in sync.stdout, sync.stdout  # nothing new
    assert '"added": []' in sync.stdout  # the webhook example: changes since the revision held


def test_ctrl_c_stops_make_run_quietly(tmp_path):
    port = free_port()
    with make_run(tmp_path, port) as proc:
        family = psutil.Process(proc.pid).children(recursive=True)
        assert any("gunicorn" in " ".join(p.cmdline()) for p in family)

        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        proc.wait(timeout=60)
        _, alive = psutil.wait_procs(family, timeout=60)

    output = (tmp_path / "make-run.log").read_text()
    assert alive == []
    assert "***" not in output and "Terminated" not in output, output
    assert "Traceback" not in output, output
    assert not answers(port)
