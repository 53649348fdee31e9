"""config/supervise.py, what `make run` starts web and workers with: one
Ctrl-C stops every command it started, however early it comes."""

import os
import signal
import subprocess
import sys

import psutil

from tests.helpers import ROOT, wait_for

SLEEPER = "sh -c 'echo $$ >> {pids}; exec sleep 600'"


def _supervise(*commands: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "config.supervise", *commands],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # as a terminal's foreground job
    )


def _pids(path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_a_ctrl_c_as_soon_as_one_runs_stops_every_command_started(tmp_path):
    pids = tmp_path / "pids"
    proc = _supervise(*[SLEEPER.format(pids=pids)] * 8)
    wait_for(lambda: _pids(pids), interval=0.001, message="a command to start")
    proc.send_signal(signal.SIGINT)  # the others may still be starting
    out, _ = proc.communicate(timeout=60)

    assert proc.returncode == 0, out
    assert out == b""
    assert not [p for p in _pids(pids) if psutil.pid_exists(p)]


def test_a_ctrl_c_later_stops_every_command_each_in_a_group_of_its_own(tmp_path):
    pids = tmp_path / "pids"
    proc = _supervise(*[SLEEPER.format(pids=pids)] * 3)
    wait_for(lambda: len(_pids(pids)) == 3, message="three commands to start")
    started = _pids(pids)
    assert {c.pid for c in psutil.Process(proc.pid).children()} == set(started)
    assert [os.getpgid(p) for p in started] == started  # a terminal's Ctrl-C reaches none of them

    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)

    assert proc.returncode == 0, out
    assert not [p for p in started if psutil.pid_exists(p)]


def test_a_command_that_ends_by_itself_stops_the_others_with_its_status(tmp_path):
    pids = tmp_path / "pids"
    proc = _supervise(SLEEPER.format(pids=pids), "sh -c 'exit 3'")
    out, _ = proc.communicate(timeout=60)

    assert proc.returncode == 3, out
    assert not [p for p in _pids(pids) if psutil.pid_exists(p)]


STUBBORN = (
    f'{sys.executable} -c "import os, signal, sys, time; '
    "asked = []; "
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0) if asked else asked.append(open(sys.argv[1], 'a').write('asked'))); "
    "open(sys.argv[1] + '.pid', 'w').write(str(os.getpid())); "
    '[time.sleep(0.05) for _ in iter(int, 1)]" {path}'
)


def test_a_second_ctrl_c_is_passed_on_as_a_second_sigterm(tmp_path):
    # A command that finishes its work on the first SIGTERM and exits on the second, as the worker does.
    path = tmp_path / "stubborn"
    proc = _supervise(STUBBORN.format(path=path))
    wait_for(lambda: (tmp_path / "stubborn.pid").exists(), message="the command to start")

    proc.send_signal(signal.SIGINT)
    wait_for(lambda: path.exists(), message="the command to be asked once")
    assert proc.poll() is None  # it is still finishing its work

    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert not psutil.pid_exists(int((tmp_path / "stubborn.pid").read_text()))
