from django.core.management.base import BaseCommand

from jobs.management.argtypes import positive_int, positive_seconds
from jobs.sessions import use_job_session_limits
from jobs.worker import Worker


class Command(BaseCommand):
    help = (
        "Claim and run jobs until stopped (SIGTERM: stop claiming; finish the jobs in hand "
        "or release them at their next check-in)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--concurrency", type=positive_int, default=1, help="jobs run at once in this process (threads)"
        )
        parser.add_argument("--burst", action="store_true", help="exit once nothing is claimable")
        parser.add_argument("--worker-id", default=None, help="name recorded on attempts (default host:pid)")
        parser.add_argument(
            "--prefetch",
            type=positive_int,
            default=None,
            help="jobs claimed per statement by each loop, always (1: never "
            "prefetch); default: up to JOB_PREFETCH_MAX of kinds this "
            "worker runs in under JOB_PREFETCH_SHORT_SECONDS",
        )
        parser.add_argument(
            "--relay", action="store_true", help="also deliver outbox messages in this process"
        )
        parser.add_argument(
            "--shutdown-timeout",
            type=positive_seconds,
            default=None,
            help="seconds a graceful stop (SIGTERM) may take: then the jobs "
            "still in hand are released (not counted) and the process "
            "exits; default: wait for them",
        )

    def handle(
        self,
        *args,
        concurrency: int,
        burst: bool,
        worker_id: str | None,
        relay: bool,
        prefetch: int | None,
        shutdown_timeout: float | None,
        **options,
    ) -> None:
        use_job_session_limits()
        Worker(
            worker_id=worker_id,
            concurrency=concurrency,
            burst=burst,
            relay=relay,
            prefetch=prefetch,
            shutdown_timeout=shutdown_timeout,
        ).run()
