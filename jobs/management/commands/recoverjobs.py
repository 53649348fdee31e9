from django.core.management.base import BaseCommand

from jobs.services import jobs_expire_leases


class Command(BaseCommand):
    help = "One recovery pass: move running jobs whose lease expired."

    def handle(self, *args, **options) -> None:
        moved = jobs_expire_leases()
        for job_id, state in moved:
            self.stdout.write(f"{job_id} -> {state}")
        self.stdout.write(f"{len(moved)} job(s) recovered")
