"""Run several commands together until Ctrl-C: what `make run` starts.

    python -m config.supervise 'COMMAND ...' ['COMMAND ...' ...]

Each command runs in a process group of its own, so a Ctrl-C in the
terminal reaches only this process, which asks every command once (SIGTERM)
to stop gracefully, waits for all of them and exits 0. Each further Ctrl-C
is passed on as one more SIGTERM (a worker asked twice exits at once; the
jobs it held run again once their leases expire). A command that ends
by itself stops the others too, and this process exits with its status (1
if that was 0: the service is not meant to end; 128 + N for signal N).

Signals are only noted in their handlers; the main loop acts on them after
each child is known, so a signal that arrives while a child is being started
still reaches that child once it runs its program."""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import sys


def supervise(commands: list[list[str]]) -> int:
    signals: list[int] = []  # every SIGINT or SIGTERM received, in order

    def on_stop(signum, frame) -> None:
        signals.append(signum)

    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)  # every handled signal also writes a byte here
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # only to wake the loop

    children: list[subprocess.Popen] = []
    for command in commands:
        if signals:
            break
        children.append(subprocess.Popen(command, process_group=0))

    status, ended_by_itself, asked = 0, False, 0
    while True:
        ended = [child for child in children if child.poll() is not None]
        if ended and not signals and not ended_by_itself:  # one ended by itself: stop the rest
            code = next((c.returncode for c in ended if c.returncode), 0)
            status = 128 - code if code < 0 else code or 1
            ended_by_itself = True
        rounds = max(len(signals), int(ended_by_itself))
        if rounds > asked:  # one SIGTERM per signal received (one if a command ended by itself)
            asked = rounds
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
        if len(ended) == len(children):
            return status
        select.select([wake_read], [], [])
        while True:
            try:
                if not os.read(wake_read, 512):
                    break
            except BlockingIOError:
                break


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    return supervise([shlex.split(command) for command in argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
