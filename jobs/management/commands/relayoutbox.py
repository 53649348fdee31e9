import logging
import os
import signal
import threading

from django.core.management.base import BaseCommand

from jobs.relay import RelayThread
from jobs.sessions import use_job_session_limits

log = logging.getLogger("jobs.relay")


class Command(BaseCommand):
    help = (
        "Deliver outbox messages to webhook endpoints until stopped "
        "(SIGTERM: finish the message in hand, give back the rest)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--burst", action="store_true", help="exit once nothing is deliverable now")

    def handle(self, *args, burst: bool, **options) -> None:
        use_job_session_limits()
        stop = threading.Event()

        def on_signal(signum, frame) -> None:
            if stop.is_set():
                log.warning("second signal: exiting now")
                os._exit(1)
            log.info("signal %s: stopping after the message in hand", signum)
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        # Run the loop in this (main) thread, so signals reach it between POSTs.
        RelayThread(stop, burst=burst).run()
