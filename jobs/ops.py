"""The operations dashboard (/ops/, staff only) and the Prometheus endpoint
(/metrics, bearer token). Both read the same selectors."""

import hmac
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from jobs import selectors_ops
from jobs.models import State

MSG_METRICS_UNAUTHORIZED = "a valid bearer token is required\n"

CHART_WIDTH = 720
CHART_HEIGHT = 180
CHART_LABEL_SPACE = 20  # below the bars, for the time axis
CHART_TOP_SPACE = 16  # above the tallest bar, for its count


# The dashboard shows every workspace's jobs: being staff (admin access) is
# not enough, the user needs the permission to view jobs (superusers have it).
OPS_PERMISSION = "jobs.view_job"


def staff_required(view):
    """Anonymous visitors go to the login page; signed-in users who are not
    staff with OPS_PERMISSION get 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_staff and request.user.has_perm(OPS_PERMISSION)):
            raise PermissionDenied("the operations dashboard is for staff allowed to view jobs")
        return view(request, *args, **kwargs)

    return wrapper


def human_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{sign}{seconds:.1f} s"
    if seconds < 3600:
        return f"{sign}{int(seconds // 60)} min {int(seconds % 60)} s"
    if seconds < 86400:
        return f"{sign}{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
    return f"{sign}{int(seconds // 86400)} d {int(seconds % 86400 // 3600)} h"


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str

    @property
    def center(self) -> float:
        return round(self.x + self.width / 2, 1)

    @property
    def count_y(self) -> float:
        return round(self.y - 4, 1)


def bar_chart(
    buckets: list[selectors_ops.Bucket], *, width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> tuple[list[Bar], int]:
    """Geometry of an SVG bar chart: one bar per bucket, scaled to the
    largest count. Returns the bars and the scale's top value."""
    top = max([b.count for b in buckets] + [1])
    baseline = height - CHART_LABEL_SPACE
    plot = baseline - CHART_TOP_SPACE
    slot = width / max(len(buckets), 1)
    bars = []
    for index, bucket in enumerate(buckets):
        bar_height = plot * bucket.count / top
        bars.append(
            Bar(
                x=round(index * slot + slot * 0.1, 1),
                y=round(baseline - bar_height, 1),
                width=round(slot * 0.8, 1),
                height=round(bar_height, 1),
                count=bucket.count,
                label=f"{bucket.start_minutes_ago}–{bucket.end_minutes_ago} min ago",
            )
        )
    return bars, top


@require_GET
@never_cache
@staff_required
def dashboard(request):
    per_state = selectors_ops.jobs_per_state()
    buckets = selectors_ops.throughput_last_hour()
    bars, top = bar_chart(buckets)
    phases = selectors_ops.phase_times()
    lost_counts, lost = selectors_ops.lost_attempts_last_24h()
    outbox = selectors_ops.outbox_figures()
    running = selectors_ops.running_jobs()
    oldest = selectors_ops.oldest_claimable_age_seconds()
    context = {
        "states": [(State(state).label, state, count) for state, count in per_state.items()],
        "per_state": per_state,
        "total_jobs": sum(per_state.values()),
        "oldest_claimable_seconds": oldest,
        "oldest_claimable": human_seconds(oldest),
        "buckets": buckets,
        "completed_last_hour": sum(b.count for b in buckets),
        "bars": bars,
        "chart": {
            "width": CHART_WIDTH,
            "height": CHART_HEIGHT,
            "top": top,
            "baseline": CHART_HEIGHT - CHART_LABEL_SPACE,
            "label_y": CHART_HEIGHT - 4,
        },
        "phases": phases,
        "phase_rows": [
            (name, p.jobs, human_seconds(p.p50), human_seconds(p.p95))
            for name, p in (
                ("waiting", phases.waiting),
                ("running", phases.running),
                ("in review", phases.review),
            )
        ],
        "lost_counts": lost_counts,
        "lost": lost,
        "outbox": outbox,
        "outbox_oldest": human_seconds(outbox.oldest_pending_seconds),
        "running": [
            (job, human_seconds(job.running_seconds), human_seconds(job.lease_seconds_left))
            for job in running
        ],
        "leases_overdue": selectors_ops.leases_overdue(),
    }
    return render(request, "ops/dashboard.html", context)


class OpsCollector:
    """Prometheus collector over the dashboard's selectors, read at scrape time."""

    def collect(self):
        prefix = settings.JOBS_PRODUCT
        jobs = GaugeMetricFamily(f"{prefix}_jobs", "Jobs per state.", labels=["state"])
        for state, count in selectors_ops.jobs_per_state().items():
            jobs.add_metric([state], count)
        yield jobs

        oldest = selectors_ops.oldest_claimable_age_seconds()
        yield GaugeMetricFamily(
            f"{prefix}_oldest_claimable_job_age_seconds",
            "How long the oldest claimable job has been waiting to be claimed (0 when none).",
            value=oldest or 0.0,
        )
        yield GaugeMetricFamily(
            f"{prefix}_jobs_completed_last_hour",
            "Jobs completed in the last hour.",
            value=sum(b.count for b in selectors_ops.throughput_last_hour()),
        )

        phases = selectors_ops.phase_times()
        quantiles = GaugeMetricFamily(
            f"{prefix}_job_phase_seconds",
            "Percentiles of time spent per phase by jobs finished in the last 24 hours.",
            labels=["phase", "quantile"],
        )
        finished = GaugeMetricFamily(
            f"{prefix}_job_phase_jobs",
            "Jobs finished in the last 24 hours that the phase percentiles cover.",
            labels=["phase"],
        )
        for phase, p in (("waiting", phases.waiting), ("running", phases.running), ("review", phases.review)):
            finished.add_metric([phase], p.jobs)
            if p.p50 is not None:
                quantiles.add_metric([phase, "0.5"], p.p50)
                quantiles.add_metric([phase, "0.95"], p.p95)
        yield quantiles
        yield finished

        lost_counts, _ = selectors_ops.lost_attempts_last_24h(limit=0)
        lost = GaugeMetricFamily(
            f"{prefix}_attempts_lost_last_24h",
            "Attempts that ended stale or expired in the last 24 hours.",
            labels=["outcome"],
        )
        for outcome, count in lost_counts.items():
            lost.add_metric([outcome], count)
        yield lost

        yield GaugeMetricFamily(
            f"{prefix}_job_leases_overdue",
            "Running jobs whose lease expired, not yet recovered.",
            value=selectors_ops.leases_overdue(),
        )

        outbox = selectors_ops.outbox_figures()
        yield GaugeMetricFamily(
            f"{prefix}_outbox_pending_messages",
            "Outbox messages not yet delivered (including retries).",
            value=outbox.pending,
        )
        yield GaugeMetricFamily(
            f"{prefix}_outbox_due_messages", "Pending outbox messages deliverable now.", value=outbox.due
        )
        yield GaugeMetricFamily(
            f"{prefix}_outbox_oldest_pending_age_seconds",
            "Age of the oldest pending outbox message (0 when none).",
            value=outbox.oldest_pending_seconds or 0.0,
        )
        yield GaugeMetricFamily(
            f"{prefix}_outbox_failed_messages",
            "Outbox messages the relay gave up on (redeliver in admin).",
            value=outbox.failed,
        )


def _bearer_matches(request, token: str) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    # Constant-time comparison: the token is a secret.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
@never_cache
def metrics(request):
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404("metrics are disabled")
    if not _bearer_matches(request, token):
        response = HttpResponse(MSG_METRICS_UNAUTHORIZED, status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry(auto_describe=False)
    registry.register(OpsCollector())
    # The scraper's Accept header picks the format (text 0.0.4 by default, or OpenMetrics).
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(registry), content_type=content_type)
