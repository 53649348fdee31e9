"""What the job machinery tells the apps above it, which it never imports."""

from django.dispatch import Signal

# Sent by the process that accepted a job's output for review, once that
# accept has committed, with `job_id`, `version` (the job's version after
# the accept) and `output` (the output in hand, so that a receiver need not
# read tens of MB of JSON back). Receivers run with `send_robust`: one that
# fails is logged and changes nothing about the job.
job_staged_for_review = Signal()
