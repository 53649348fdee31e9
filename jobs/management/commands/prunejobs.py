import argparse
from datetime import timedelta

from django.core.management.base import BaseCommand

from jobs.management.argtypes import positive_int
from jobs.retention import jobs_prune_finished


def non_negative_days(value: str) -> float:
    days = float(value)
    if not days >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of days >= 0, got {value}")
    return days


class Command(BaseCommand):
    help = (
        "Remove finished jobs (completed, needs attention, cancelled) older than DAYS, "
        "with their attempts and delivered outbox messages, in short batches that never "
        "block workers. Jobs that another record still points at (e.g. what they published) are kept."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--older-than",
            type=non_negative_days,
            required=True,
            metavar="DAYS",
            help="finished more than DAYS days ago (fractions allowed)",
        )
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=1000,
            metavar="N",
            help="jobs per transaction (default 1000)",
        )

    def handle(self, *args, older_than: float, batch_size: int, **options) -> None:
        removed = jobs_prune_finished(older_than=timedelta(days=older_than), batch_size=batch_size)
        self.stdout.write(f"{removed} finished job(s) removed")
