from django.conf import settings
from django.core.management.base import BaseCommand

from jobs.services import jobs_end_stalled_sessions, jobs_expire_leases
from jobs.sessions import use_job_session_limits


class Command(BaseCommand):
    help = (
        "One recovery pass: move running jobs whose lease expired, ending the database "
        "session that still holds one long after its lease ran out."
    )

    def handle(self, *args, **options) -> None:
        use_job_session_limits()
        moved = jobs_expire_leases()
        stalled = jobs_end_stalled_sessions(leases=settings.JOB_STALLED_LEASES)
        for job_id, pid in stalled:
            self.stdout.write(f"{job_id}: ended stalled session {pid}")
        if stalled:
            moved += jobs_expire_leases()
        for job_id, state in moved:
            self.stdout.write(f"{job_id} -> {state}")
        self.stdout.write(f"{len(moved)} job(s) recovered")
