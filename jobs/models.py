"""Durable jobs, their attempts and the outbox. Generic over job kinds: this
app knows nothing of what the apps above it do with their jobs."""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from jobs.webhooks import EndpointRefused, secret_generate, target_vet


class State(models.TextChoices):
    QUEUED = "queued"  # admit, retry by staff, or requeue with a reviewer's input
    RUNNING = "running"  # claim
    RETRYING = "retrying"  # fail (transient), expire, or release by a stopping worker
    AWAITING_REVIEW = "awaiting_review"  # accept of output that a reviewer must check
    COMPLETED = "completed"  # accept of clean output, or approve
    NEEDS_ATTENTION = "needs_attention"  # fail (permanent or out of attempts), expire, reject
    CANCELLED = "cancelled"  # cancel


CLAIMABLE_STATES = [State.QUEUED, State.RETRYING]
CANCELLABLE_STATES = [State.QUEUED, State.RETRYING, State.RUNNING, State.AWAITING_REVIEW]
RETRYABLE_STATES = [State.NEEDS_ATTENTION, State.CANCELLED]
# A person can send these back to the queue with new input (e.g. a column mapping).
REQUEUEABLE_STATES = [State.AWAITING_REVIEW, State.NEEDS_ATTENTION]
FINISHED_STATES = [State.COMPLETED, State.NEEDS_ATTENTION, State.CANCELLED]


class JobQuerySet(models.QuerySet):
    def claimable(self):
        # Served by the partial index `job_claimable`.
        return self.filter(state__in=CLAIMABLE_STATES, run_after__lte=Now())

    def lease_expired(self):
        return self.filter(state=State.RUNNING, lease_until__lt=Now())

    def for_member(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(workspace__memberships__user=user)

    def finished(self):
        return self.filter(state__in=FINISHED_STATES)


class Job(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=50)
    # No index of its own: the indexes below begin with the workspace.
    workspace = models.ForeignKey(
        "accounts.Workspace", on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    payload = models.JSONField(default=dict, blank=True)

    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    # Bumped by every transition and review edit: versioned mutations (cancel,
    # approve, reject) name the version they saw.
    version = models.PositiveIntegerField(default=1)

    # The fence is (attempt, lease_token): a new token per claim; attempt only grows.
    attempt = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField()
    lease_token = models.UUIDField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    worker_id = models.CharField(max_length=100, blank=True)
    run_after = models.DateTimeField(db_default=Now())
    # When the job was last claimed (database time). The claim serves first
    # the workspace whose jobs were claimed least recently (jobs.services).
    claimed_at = models.DateTimeField(null=True, blank=True)

    # Null for jobs admitted without a key: the unique (workspace, key) constraint ignores nulls.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    request_fingerprint = models.CharField(max_length=128, blank=True)

    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True)
    # Output accepted from the current claim: staged for review, or published.
    output = models.JSONField(null=True, blank=True)
    # Once flagged for review, later attempts go to review too.
    review_required = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)

    # Time spent per phase, accumulated in database time at each transition.
    state_changed_at = models.DateTimeField(db_default=Now())
    waiting_seconds = models.FloatField(default=0)
    running_seconds = models.FloatField(default=0)
    review_seconds = models.FloatField(default=0)

    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("cancel_job", "Can cancel jobs"),
            ("retry_job", "Can retry jobs"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=State.values), name="job_state_valid"),
            # Only a running job holds a lease; every other state has cleared it.
            models.CheckConstraint(
                condition=Q(state=State.RUNNING, lease_token__isnull=False, lease_until__isnull=False)
                | (~Q(state=State.RUNNING) & Q(lease_token__isnull=True)),
                name="job_lease_only_when_running",
            ),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="job_max_attempts_positive"),
            models.UniqueConstraint(
                fields=["workspace", "idempotency_key"], name="job_idempotency_key_unique"
            ),
        ]
        indexes = [
            # The claim query: claimable rows only, in run_after order.
            models.Index(
                fields=["run_after"],
                name="job_claimable",
                condition=Q(state__in=CLAIMABLE_STATES),
            ),
            # The fair claim: each workspace's claimable rows, in run_after
            # order, and when a job of the workspace was last claimed.
            models.Index(
                fields=["workspace", "run_after"],
                name="job_claimable_workspace",
                condition=Q(state__in=CLAIMABLE_STATES),
            ),
            models.Index(
                fields=["workspace", "claimed_at"],
                name="job_workspace_claimed",
                condition=Q(claimed_at__isnull=False),
            ),
            # The recovery scan: running rows by lease expiry.
            models.Index(fields=["lease_until"], name="job_running_lease", condition=Q(state=State.RUNNING)),
            models.Index(fields=["workspace", "state", "created_at"], name="job_workspace_state"),
            # A workspace's newest jobs: the upload rate window reads only the
            # last minute's, whatever the workspace's history.
            models.Index(fields=["workspace", "created_at"], name="job_workspace_created"),
            models.Index(fields=["state", "finished_at"], name="job_finished"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.state})"


class Attempt(models.Model):
    """One claim of a job. Written at the claim, closed once with its outcome;
    a stale worker's result is kept here as a diagnostic only."""

    class Outcome(models.TextChoices):
        RUNNING = "running"  # claimed, not finished
        SUCCEEDED = "succeeded"  # output accepted (completed or sent to review)
        RETRY = "retry"  # transient failure, the job will retry
        FAILED = "failed"  # permanent failure, or out of attempts
        EXPIRED = "expired"  # the recovery scanner took the job back
        RELEASED = "released"  # the worker stopped and gave the job back
        CANCELLED = "cancelled"  # the job was cancelled while this attempt ran
        STALE = "stale"  # the worker came back after losing its lease: result discarded

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    lease_token = models.UUIDField()
    worker_id = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.RUNNING)
    error = models.TextField(blank=True)
    diagnostic = models.JSONField(null=True, blank=True)
    provider_request_ids = models.JSONField(default=list, blank=True)
    token_usage = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="attempt_unique_number"),
            models.CheckConstraint(
                condition=Q(
                    outcome__in=[
                        "running",
                        "succeeded",
                        "retry",
                        "failed",
                        "expired",
                        "released",
                        "cancelled",
                        "stale",
                    ]
                ),
                name="attempt_outcome_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.job_id} ({self.outcome})"

    @property
    def member_error(self) -> str:
        """The error as a workspace member may read it: an unexpected
        failure (recorded as "reference X: <detail>") shows only its
        reference; the detail is for staff."""
        if self.error.startswith("reference "):
            return f"internal error, {self.error.split(':', 1)[0]}"
        return self.error


class OutboxMessage(models.Model):
    """An event written in the transaction of the change it reports; the relay
    delivers it at least once, and its id is the consumers' dedupe key."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="+")
    topic = models.CharField(max_length=50)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(db_default=Now())
    # The relay reserves a message by moving available_at forward, delivers
    # outside any transaction, then marks it delivered or schedules a retry.
    available_at = models.DateTimeField(db_default=Now())
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(
                fields=["available_at"],
                name="outbox_pending",
                condition=Q(delivered_at__isnull=True, failed_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic} {self.id}"


class WebhookEndpoint(models.Model):
    """Where a workspace's outbox messages are POSTed. The URL is vetted
    (https, public addresses only) when saved and again at every POST; the
    secret is generated here, never typed in."""

    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField()
    secret = models.CharField(max_length=200, default=secret_generate)
    # After a rotation the previous secret signs too until it expires, so
    # receivers can switch without losing a message.
    previous_secret = models.CharField(max_length=200, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.url

    def clean(self) -> None:
        super().clean()
        if self.url:
            try:
                target_vet(self.url)
            except EndpointRefused as exc:
                raise ValidationError({"url": str(exc)}) from None


class WebhookDelivery(models.Model):
    """One POST of an outbox message to one endpoint, appended after the
    POST returns (or fails). A message is delivered once every active
    endpoint of its workspace has a succeeded row for it; retries POST only
    to the endpoints that have none."""

    message = models.ForeignKey(OutboxMessage, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    # Kept so the history still reads after the endpoint is changed or removed.
    url = models.URLField()
    attempt = models.PositiveIntegerField(help_text="The message's reservation this POST belonged to.")
    succeeded = models.BooleanField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            # "Which endpoints already have this message?", asked before every retry.
            models.Index(
                fields=["message", "endpoint"],
                name="webhook_delivery_succeeded",
                condition=Q(succeeded=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.message_id} to {self.url} ({'ok' if self.succeeded else 'failed'})"


class JobCheckpoint(models.Model):
    """Useful progress a replacement worker reuses (e.g. the parsed table).
    Staged under a name of the attempt's own, then renamed into place in a
    transaction whose guarded UPDATE proved the fence."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="checkpoint_rows")
    name = models.CharField(max_length=100)
    attempt = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="checkpoint_unique_name"),
        ]

    def __str__(self) -> str:
        return f"checkpoint {self.name!r} of {self.job_id} (attempt {self.attempt})"
