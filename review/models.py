"""The review history: every reviewer decision on a flagged job, append-only."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now


class ReviewDecisionAppendOnly(Exception):
    """A recorded decision was about to be changed: history is only added to."""


class ReviewDecision(models.Model):
    """Who decided what on a job, when, at which version, and what they changed.

    `changes` holds field-level before/after values per row and the sheet-wide
    overrides: {"rows": [{"index", "sku", "source", "fields": {name: {"before",
    "after"}}}], "removed": [{"index", "sku"}], "overrides": {"currency":
    {"value", "scope", "rows"}, "unit": {"value", "rows"}}}.
    """

    class Decision(models.TextChoices):
        APPROVE = "approve"  # published the (edited) items, job completed
        REJECT = "reject"  # nothing published, job needs attention
        EDIT = "edit"  # saved edits, job still awaiting review

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="review_decisions")
    # The name is kept beside the key so "who" survives the user's deletion.
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewer_name = models.CharField(max_length=150)
    decision = models.CharField(max_length=10, choices=Decision.choices)
    at = models.DateTimeField(db_default=Now())
    version_seen = models.PositiveIntegerField(help_text="The job version the reviewer decided on.")
    changes = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=["approve", "reject", "edit"]),
                name="reviewdecision_decision_valid",
            ),
            # A rejection always says why: the uploader reads it as the job's reason.
            models.CheckConstraint(
                condition=~Q(decision="reject") | ~Q(reason=""),
                name="reviewdecision_reject_has_reason",
            ),
        ]
        indexes = [models.Index(fields=["job", "at"], name="reviewdecision_job_at")]

    def __str__(self) -> str:
        return f"{self.decision} of {self.job_id} by {self.reviewer_name}"

    def save(self, *args, **kwargs):
        # Append-only: an existing row is history and is never rewritten.
        if self.pk is not None:
            raise ReviewDecisionAppendOnly(f"review decision {self.pk} is history and cannot change")
        super().save(*args, **kwargs)


class ReviewSnapshot(models.Model):
    """What the review grid reads of one version of a job's staged output:
    the flag summary, and the items cut into fixed pages (`ReviewChunk`).

    Derived data, rebuilt whenever the job's version moves on: a sheet of
    50,000 items is then served a page at a time without reading its whole
    output (tens of MB of JSON) on every request."""

    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, related_name="review_snapshot")
    version = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    summary = models.JSONField(default=dict)
    built_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"snapshot of {self.job_id} at version {self.version}"


class ReviewChunk(models.Model):
    """One page of a snapshot's items, kept as the JSON text the grid is
    sent (stored and served without decoding it again)."""

    snapshot = models.ForeignKey(ReviewSnapshot, on_delete=models.CASCADE, related_name="chunks")
    number = models.PositiveIntegerField()
    items_json = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "number"], name="reviewchunk_unique_number"),
        ]

    def __str__(self) -> str:
        return f"page {self.number} of snapshot {self.snapshot_id}"
