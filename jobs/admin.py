"""The admin console for jobs and the outbox.

Nothing here edits a job by hand: every Job field is read-only and the
change form cannot be saved (a model save would write back every column the
page loaded, racing the worker's guarded transitions). State changes go
through the same services as the API: the `cancel` and `retry` actions,
behind the permissions `jobs.cancel_job` and `jobs.retry_job`.
"""

import json
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.timesince import timesince

from accounts.admin_mixins import ReadOnlyAdminMixin
from jobs import registry
from jobs.models import (
    CANCELLABLE_STATES,
    FINISHED_STATES,
    RETRYABLE_STATES,
    Attempt,
    Job,
    OutboxMessage,
    State,
    WebhookEndpoint,
)
from jobs.outbox import MessageNotFailed, WebhookDelivery, outbox_redeliver, webhook_secret_rotate
from jobs.selectors import job_page_link, job_review_link
from jobs.services import InvalidTransition, job_cancel, job_retry
from jobs.webhooks import secret_masked

MSG_NONE_ELIGIBLE = "None of the {total} selected jobs can be {done}: {reasons}."
MSG_CHANGED = "{Done} {changed} of {total} selected jobs."
MSG_UNCHANGED = "{count} did not change: {reasons}."
MSG_CANCEL_WARNING = (
    "Cancelling stops publication, not a remote call already in progress: "
    "a running worker finds out at its next heartbeat and its result is discarded."
)
MSG_REDELIVER = "{count} failed message(s) will be delivered again."
MSG_REDELIVER_SKIPPED = "{count} were not failed and were left alone: {reasons}."
MSG_SECRET_SHOWN_ONCE = (
    "Signing secret of {url}: {secret} - copy it to the receiver now; it is not shown again."
)
MSG_SECRET_ROTATED = (
    "New signing secret of {url}: {secret} - copy it to the receiver now; it "
    "is not shown again. The previous secret also signs for {hours} h."
)

MSG_DETERMINISTIC = (
    "The last attempt failed for a reason a retry does not change (the same "
    "input gives the same error): {error} Retry only once the cause is fixed "
    "(another file, a setting, a new version)."
)
MSG_DETERMINISTIC_SELECTED = (
    "{count} of the selected jobs failed for a reason a retry does not "
    "change; they will fail the same way unless the cause was fixed."
)

MISSING = "deleted"

CONFIRM_TEMPLATE = "ops/admin_confirm_action.html"


def _pretty_json(value) -> str:
    if value in (None, "", [], {}):
        return "-"
    return format_html(
        '<pre style="white-space:pre-wrap;margin:0">{}</pre>',
        json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True),
    )


def readable_duration(seconds: float | None) -> str:
    """9 ms, 1.2 s, 3 min 12 s, 2 h 5 min, 3 d 4 h."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def deterministic_failure(job: Job, last: Attempt | None) -> str:
    """What to know before retrying a job whose last attempt failed for good
    (a permanent error, not one attempt too many of a transient one)."""
    if (
        last is None
        or job.state != State.NEEDS_ATTENTION
        or last.outcome != Attempt.Outcome.FAILED
        or job.reason.startswith("gave up after")
    ):
        return ""
    return MSG_DETERMINISTIC.format(error=(last.error or job.reason).rstrip(".") + ".")


def _is_uuid(value) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _were(count: int, phrase: str) -> str:
    return f"{count} {'was' if count == 1 else 'were'} {phrase}"


def _why_unchanged(skipped: Counter, phrases: dict[str, str]) -> list[str]:
    """ "3 were already completed", ...: most frequent first, then by phrase."""
    lines = [(count, phrases.get(state, state.replace("_", " "))) for state, count in skipped.items()]
    return [_were(count, phrase) for count, phrase in sorted(lines, key=lambda c: (-c[0], c[1]))]


def _reasons(skipped: Counter, phrases: dict[str, str]) -> str:
    return ", ".join(_why_unchanged(skipped, phrases))


@dataclass(frozen=True)
class BulkTransition:
    """A staff action over selected jobs: which states it starts from, the
    service that makes it, and how to explain the jobs it leaves alone."""

    name: str
    verb: str
    done: str
    eligible_states: list[str]
    service: Callable[..., None]
    skip_phrases: dict[str, str]
    warning: str = ""


CANCEL = BulkTransition(
    name="cancel",
    verb="cancel",
    done="cancelled",
    eligible_states=CANCELLABLE_STATES,
    service=job_cancel,
    skip_phrases={
        State.COMPLETED: "already completed",
        State.CANCELLED: "already cancelled",
        State.NEEDS_ATTENTION: "already finished (needs attention)",
        MISSING: "deleted meanwhile",
    },
    warning=MSG_CANCEL_WARNING,
)

RETRY = BulkTransition(
    name="retry",
    verb="retry",
    done="retried",
    eligible_states=RETRYABLE_STATES,
    service=job_retry,
    skip_phrases={
        State.QUEUED: "already queued",
        State.RUNNING: "running",
        State.RETRYING: "already waiting to retry",
        State.AWAITING_REVIEW: "awaiting review",
        State.COMPLETED: "completed",
        MISSING: "deleted meanwhile",
    },
)


class AttemptInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Attempt
    extra = 0
    max_num = 0
    can_delete = False
    fields = [
        "number",
        "outcome",
        "worker_id",
        "started_at",
        "finished_at",
        "duration",
        "error",
        "diagnostic_display",
        "provider_calls",
    ]
    readonly_fields = fields

    def has_view_permission(self, request, obj=None) -> bool:
        # Attempts are part of the job's history: who may see the job sees them.
        return request.user.has_perm("jobs.view_job") or request.user.has_perm("jobs.change_job")

    @admin.display(description="duration")
    def duration(self, attempt: Attempt) -> str:
        if attempt.finished_at is None:
            return "-"
        return readable_duration((attempt.finished_at - attempt.started_at).total_seconds())

    @admin.display(description="diagnostic (stale result)")
    def diagnostic_display(self, attempt: Attempt) -> str:
        if not attempt.diagnostic:
            return "-"
        text = json.dumps(attempt.diagnostic, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html(
            '<pre style="white-space:pre-wrap;margin:0;max-height:16em;overflow:auto">{}</pre>',
            Truncator(text).chars(4000),
        )

    @admin.display(description="provider request ids / usage")
    def provider_calls(self, attempt: Attempt) -> str:
        if not attempt.provider_request_ids and not attempt.token_usage:
            return "-"
        ids = ", ".join(str(i) for i in attempt.provider_request_ids if i) or "-"
        usage = ", ".join(f"{k}: {v}" for k, v in sorted((attempt.token_usage or {}).items())) or "-"
        return format_html("{}<br><span style='color:#666'>{}</span>", ids, usage)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["short_id", "kind", "state", "workspace", "attempts", "age", "short_reason"]
    list_filter = ["state", "kind", "workspace"]
    list_select_related = ["workspace"]
    search_fields = ["idempotency_key"]
    search_help_text = "Job id (or its first characters) or idempotency key."
    show_full_result_count = False
    list_per_page = 50
    actions = ["cancel", "retry"]
    inlines = [AttemptInline]
    # The attempts (an inline) come after these fieldsets; the output, which
    # can be long, comes after the attempts, folded (see change_form_template).
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "kind",
                    "kind_fields",
                    "workspace",
                    "state",
                    "reason",
                    "before_retry",
                    "pages",
                    "created_by",
                    "created_at",
                    "updated_at",
                    "finished_at",
                ]
            },
        ),
        (
            "Attempts and lease",
            {
                "fields": [
                    "attempt",
                    "max_attempts",
                    "version",
                    "worker_id",
                    "lease_token",
                    "lease_until",
                    "run_after",
                ]
            },
        ),
        ("Time spent", {"fields": ["waiting", "running", "in_review", "state_changed_at"]}),
        ("Input", {"fields": ["payload_display", "idempotency_key", "request_fingerprint"]}),
        ("Result", {"fields": ["review_required", "progress", "result_display"]}),
    ]
    computed_fields = [
        "pages",
        "kind_fields",
        "before_retry",
        "payload_display",
        "progress",
        "result_display",
        "waiting",
        "running",
        "in_review",
    ]
    change_form_template = "admin/jobs/job/change_form.html"

    def get_queryset(self, request):
        # The list never shows `output` (every extracted item); the change
        # page loads it when it renders it.
        return super().get_queryset(request).defer("output")

    def view_on_site(self, job: Job) -> str | None:
        return job_page_link(job)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        job = Job.objects.filter(pk=object_id).only("output").first() if _is_uuid(object_id) else None
        extra_context = {
            **(extra_context or {}),
            "output_html": self.output_display(job) if job is not None else "",
        }
        return super().change_view(request, object_id, form_url, extra_context)

    # --- nothing is edited by hand ------------------------------------------------

    def get_readonly_fields(self, request, obj=None) -> list[str]:
        return [f.name for f in Job._meta.fields] + self.computed_fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # View-only: the form cannot be saved at all (a POST is refused), so a
        # stale page can never write an old state, token or lease back.
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Only finished jobs may go; without an object (the bulk delete
        # action) nothing checks each row's state, so it is not offered.
        if obj is None or obj.state not in FINISHED_STATES:
            return False
        return super().has_delete_permission(request, obj)

    def has_cancel_permission(self, request) -> bool:
        return request.user.has_perm("jobs.cancel_job")

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("jobs.retry_job")

    # --- list ------------------------------------------------------------------------

    @admin.display(description="id", ordering="id")
    def short_id(self, job: Job) -> str:
        return str(job.pk)[:8]

    @admin.display(description="attempt")
    def attempts(self, job: Job) -> str:
        return f"{job.attempt}/{job.max_attempts}"

    @admin.display(description="age", ordering="created_at")
    def age(self, job: Job) -> str:
        return timesince(job.created_at, timezone.now())

    @admin.display(description="reason")
    def short_reason(self, job: Job) -> str:
        return Truncator(job.reason).chars(80)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        if all(c in "0123456789abcdefABCDEF-" for c in term):
            queryset = queryset.annotate(id_text=Cast("id", TextField()))
        return queryset.filter(self.search_matches(term)), False

    def search_matches(self, term: str) -> Q:
        """What a search term finds; apps that know more about their jobs'
        payloads extend this in a subclass."""
        matches = Q(idempotency_key__icontains=term)
        try:
            matches |= Q(pk=uuid.UUID(term))
        except ValueError:
            if all(c in "0123456789abcdefABCDEF-" for c in term):
                matches |= Q(id_text__startswith=term.lower())
        return matches

    # --- detail ------------------------------------------------------------------------

    @admin.display(description="pages")
    def pages(self, job: Job) -> str:
        links = []
        if page := job_page_link(job):
            links.append(format_html('<a href="{}">job page</a>', page))
        if (job.state == State.AWAITING_REVIEW or job.review_required) and (review := job_review_link(job)):
            links.append(format_html('<a href="{}">review page</a>', review))
        if not links:
            return "-"
        return format_html_join(" · ", "{}", ((link,) for link in links))

    @admin.display(description="of its kind")
    def kind_fields(self, job: Job) -> str:
        """The read-only rows the job's kind registers (`JobKind.admin_fields`)."""
        kind = registry.get_kind(job.kind)
        if kind is None or not kind.admin_fields:
            return "-"
        return format_html(
            '<table style="margin:0">{}</table>',
            format_html_join(
                "",
                "<tr><th>{}</th><td>{}</td></tr>",
                ((label, render(job)) for label, render in kind.admin_fields.items()),
            ),
        )

    @admin.display(description="before a retry")
    def before_retry(self, job: Job) -> str:
        last = Attempt.objects.filter(job=job).order_by("-number").first()
        return deterministic_failure(job, last) or "-"

    @admin.display(description="waiting")
    def waiting(self, job: Job) -> str:
        return readable_duration(job.waiting_seconds)

    @admin.display(description="running")
    def running(self, job: Job) -> str:
        return readable_duration(job.running_seconds)

    @admin.display(description="awaiting review")
    def in_review(self, job: Job) -> str:
        return readable_duration(job.review_seconds)

    @admin.display(description="payload")
    def payload_display(self, job: Job) -> str:
        return _pretty_json(job.payload)

    @admin.display(description="progress")
    def progress(self, job: Job) -> str:
        return f"{job.progress_done} of {job.progress_total}" if job.progress_total else "-"

    @admin.display(description="result")
    def result_display(self, job: Job) -> str:
        return _pretty_json(job.result)

    @admin.display(description="output (staged or published)")
    def output_display(self, job: Job) -> str:
        kind = registry.get_kind(job.kind)
        if kind is not None and kind.admin_output is not None:
            return kind.admin_output(job)
        return _pretty_json(job.output)

    # --- actions -----------------------------------------------------------------------

    @admin.action(permissions=["cancel"], description="Cancel selected jobs")
    def cancel(self, request, queryset):
        return self._bulk(request, queryset, CANCEL)

    @admin.action(permissions=["retry"], description="Retry selected jobs")
    def retry(self, request, queryset):
        return self._bulk(request, queryset, RETRY)

    def _bulk(self, request, queryset, transition: BulkTransition):
        rows = list(queryset.order_by("-created_at").values_list("pk", "state"))
        eligible = [pk for pk, state in rows if state in transition.eligible_states]
        skipped = Counter(state for _, state in rows if state not in transition.eligible_states)
        if not eligible:
            self.message_user(
                request,
                MSG_NONE_ELIGIBLE.format(
                    total=len(rows), done=transition.done, reasons=_reasons(skipped, transition.skip_phrases)
                ),
                messages.WARNING,
            )
            return None
        if request.POST.get("post") != "yes":
            return self._confirm(request, queryset, transition, eligible, skipped)
        label = f"{request.user.get_username()} (admin)"
        changed = 0
        for pk in eligible:
            try:
                transition.service(job_id=pk, by_label=label)
            except InvalidTransition as exc:
                # It moved between the confirmation and now (e.g. it completed).
                skipped[exc.state] += 1
            except Job.DoesNotExist:
                skipped[MISSING] += 1
            else:
                changed += 1
        text = MSG_CHANGED.format(Done=transition.done.capitalize(), changed=changed, total=len(rows))
        if skipped:
            text += " " + MSG_UNCHANGED.format(
                count=sum(skipped.values()), reasons=_reasons(skipped, transition.skip_phrases)
            )
        self.message_user(request, text, messages.SUCCESS if changed else messages.WARNING)
        return None

    def _confirm(
        self, request, queryset, transition: BulkTransition, eligible: list, skipped: Counter
    ) -> TemplateResponse:
        jobs = list(queryset.select_related("workspace").order_by("-created_at"))
        deterministic = 0
        if transition is RETRY:
            last = {
                a.job_id: a
                for a in Attempt.objects.filter(job__in=[j.pk for j in jobs])
                .order_by("job_id", "-number")
                .distinct("job_id")
            }
            deterministic = sum(1 for job in jobs if deterministic_failure(job, last.get(job.pk)))
        context = {
            **self.admin_site.each_context(request),
            "title": f"{transition.verb.capitalize()} jobs",
            "opts": self.model._meta,
            "transition": transition,
            "eligible_count": len(eligible),
            "skipped_count": sum(skipped.values()),
            "total": len(jobs),
            "skipped": _why_unchanged(skipped, transition.skip_phrases),
            "jobs": [(job, job.state in transition.eligible_states) for job in jobs],
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "deterministic": (
                MSG_DETERMINISTIC_SELECTED.format(count=deterministic) if deterministic else ""
            ),
        }
        return TemplateResponse(request, CONFIRM_TEMPLATE, context)


# --- outbox ------------------------------------------------------------------------------


class OutboxStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("pending", "pending"), ("delivered", "delivered"), ("failed", "failed")]

    def queryset(self, request, queryset):
        if self.value() == "pending":
            return queryset.filter(delivered_at__isnull=True, failed_at__isnull=True)
        if self.value() == "delivered":
            return queryset.filter(delivered_at__isnull=False)
        if self.value() == "failed":
            return queryset.filter(failed_at__isnull=False)
        return queryset


def _outbox_status(message: OutboxMessage) -> str:
    if message.delivered_at:
        return "delivered"
    if message.failed_at:
        return "failed"
    return "pending"


class WebhookDeliveryInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = WebhookDelivery
    extra = 0
    max_num = 0
    can_delete = False
    fields = ["created_at", "attempt", "url", "succeeded", "status_code", "duration_ms", "error"]
    readonly_fields = fields

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("jobs.view_outboxmessage") or request.user.has_perm(
            "jobs.change_outboxmessage"
        )


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Messages are history; the relay alone moves them."""

    list_display = [
        "id",
        "topic",
        "workspace",
        "status",
        "attempts",
        "created_at",
        "available_at",
        "delivered_at",
        "short_error",
    ]
    list_filter = [OutboxStatusFilter, "topic", "workspace"]
    list_select_related = ["workspace"]
    search_fields = ["topic"]
    search_help_text = "Message id, job id, or topic."
    show_full_result_count = False
    actions = ["redeliver"]
    inlines = [WebhookDeliveryInline]
    fields = [
        "id",
        "workspace",
        "topic",
        "status",
        "payload_display",
        "created_at",
        "available_at",
        "attempts",
        "delivered_at",
        "failed_at",
        "last_error",
    ]
    readonly_fields = fields

    def has_redeliver_permission(self, request) -> bool:
        return request.user.has_perm("jobs.change_outboxmessage")

    @admin.display(description="status")
    def status(self, message: OutboxMessage) -> str:
        return _outbox_status(message)

    @admin.display(description="last error")
    def short_error(self, message: OutboxMessage) -> str:
        return Truncator(message.last_error).chars(80)

    @admin.display(description="payload")
    def payload_display(self, message: OutboxMessage) -> str:
        return _pretty_json(message.payload)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            exact = uuid.UUID(term)
        except ValueError:
            return queryset.filter(topic__icontains=term), False
        return queryset.filter(Q(pk=exact) | Q(payload__job_id=str(exact))), False

    @admin.action(permissions=["redeliver"], description="Redeliver selected failed messages")
    def redeliver(self, request, queryset):
        redelivered = 0
        skipped: Counter = Counter()
        for pk in queryset.values_list("pk", flat=True):
            try:
                outbox_redeliver(message_id=pk)
            except MessageNotFailed as exc:
                skipped[exc.status] += 1
            except OutboxMessage.DoesNotExist:
                skipped[MISSING] += 1
            else:
                redelivered += 1
        if redelivered:
            self.message_user(request, MSG_REDELIVER.format(count=redelivered), messages.SUCCESS)
        if skipped:
            reasons = _reasons(
                skipped,
                {"delivered": "already delivered", "pending": "still pending", MISSING: "deleted meanwhile"},
            )
            self.message_user(
                request,
                MSG_REDELIVER_SKIPPED.format(count=sum(skipped.values()), reasons=reasons),
                messages.WARNING,
            )


# --- webhook endpoints -----------------------------------------------------------------------


class WebhookEndpointForm(forms.ModelForm):
    """The URL only: the secret is generated, never typed in. The model's
    clean() vets the URL (https, public addresses)."""

    url = forms.URLField(
        assume_scheme="https",
        max_length=200,
        help_text="Receives an HTTPS POST with a JSON body for every outbox message of the "
        "workspace. Only public addresses are allowed.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["workspace", "url", "active"]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "workspace", "active", "signing_secret", "created_at"]
    list_filter = ["active", "workspace"]
    list_select_related = ["workspace"]
    search_fields = ["url"]
    readonly_fields = ["signing_secret", "previous_secret_until"]
    actions = ["rotate_secret"]

    @admin.display(description="signing secret")
    def signing_secret(self, endpoint: WebhookEndpoint) -> str:
        # Shown in full once, in the message after creation or rotation.
        return secret_masked(endpoint.secret) if endpoint.pk else "generated when saved"

    @admin.display(description="previous secret signs until")
    def previous_secret_until(self, endpoint: WebhookEndpoint) -> str:
        expires = endpoint.previous_secret_expires_at
        if not endpoint.previous_secret or expires is None or expires <= timezone.now():
            return "-"
        return f"{secret_masked(endpoint.previous_secret)} until {expires:%Y-%m-%d %H:%M} UTC"

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            self.message_user(
                request, MSG_SECRET_SHOWN_ONCE.format(url=obj.url, secret=obj.secret), messages.SUCCESS
            )

    @admin.action(description="Rotate the signing secret of selected endpoints", permissions=["change"])
    def rotate_secret(self, request, queryset) -> None:
        grace = settings.WEBHOOK_SECRET_GRACE_SECONDS
        for endpoint in queryset.order_by("pk"):
            secret = webhook_secret_rotate(endpoint_id=endpoint.pk, grace_seconds=grace)
            self.message_user(
                request,
                MSG_SECRET_ROTATED.format(url=endpoint.url, secret=secret, hours=round(grace / 3600, 1)),
                messages.SUCCESS,
            )
