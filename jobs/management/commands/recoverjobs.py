from django.core.management.base import BaseCommand

from jobs.services import jobs_expire_leases
from jobs.sessions import use_job_session_limits


class Command(BaseCommand):
    help = "One recovery pass: move running jobs whose lease expired."

    def handle(self, *args, **options) -> None:
        use_job_session_limits()
        moved = jobs_expire_leases()
        for job_id, state in moved:
            self.stdout.write(f"{job_id} -> {state}")
        self.stdout.write(f"{len(moved)} job(s) recovered")
