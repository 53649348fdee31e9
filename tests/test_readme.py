"""The README's commands work as pasted: its HTTP examples run, exactly as
written, against a real `make run`, and Ctrl-C stops `make run` quietly."""

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


def readme_http_block() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Over HTTP"):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


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
    log = open(tmp_path / "make-run.log", "wb")
    proc = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=ROOT,
                            env=subprocess_env(PORT=port), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    proc.log_path = log.name
    try:
        wait_for(lambda: answers(port) or proc.poll() is not None, timeout=180,
                 interval=0.2, message="make run to answer")
        assert proc.poll() is None, (tmp_path / "make-run.log").read_text()
        yield proc
    finally:
        try:
            family = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for each in [proc, *family]:
            try:
                each.kill()
            except (ProcessLookupError, psutil.NoSuchProcess):
                pass
        proc.wait(timeout=10)


def test_readme_http_examples_run_as_written(tmp_path):
    port = free_port()
    block = readme_http_block()
    assert "uuidgen" not in block

    with make_run(tmp_path, port):
        # A second terminal: none of the settings the test sets for its
        # processes, only where the (test) database and the server are.
        terminal = {k: v for k, v in subprocess_env(PORT=port).items()
                    if k not in ("SECRET_KEY", "HTTPS", "DJANGO_SETTINGS_MODULE")}
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT,
                                env=terminal, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r'"state": "(queued|running|completed|awaiting_review)"', out)
    assert '"items": [' in out
    assert '"results": [' in out and '"count": ' in out
    assert "/problems/" in out or '"state": "cancelled"' in out  # cancel answered


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
