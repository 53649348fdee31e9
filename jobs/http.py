"""The generic pieces of the job API: request helpers every API view shares,
the member-scoped job lookup, and the versioned cancel, which needs nothing
of any job kind."""

import json
import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from accounts.auth import authenticate
from jobs import api_schemas as schemas
from jobs.models import Job
from jobs.openapi import JSON, Body, catch_all, json_answer, operation, problem
from jobs.problems import Problem, api_view, not_found
from jobs.selectors import jobs_with_live_phase
from jobs.services import job_cancel

MSG_BAD_NUMBER = "`{name}` must be a whole number from 1 to 1000000."
MAX_NUMBER = 1_000_000
MSG_BAD_JSON = "The body is not a JSON object."
MSG_NO_ENDPOINT = "There is no API endpoint at this address."
MSG_METHOD = "Use {allowed}."


def allow(request: HttpRequest, *methods: str) -> None:
    if request.method not in methods:
        allowed = ", ".join(methods)
        raise Problem(405, "method-not-allowed", MSG_METHOD.format(allowed=allowed),
                      headers={"Allow": allowed})


def positive_int(raw: str | None, *, name: str, default: int) -> int:
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise Problem(400, "invalid-request", MSG_BAD_NUMBER.format(name=name)) from None
    # An upper bound too: a huge page would overflow the query's OFFSET.
    if not 1 <= value <= MAX_NUMBER:
        raise Problem(400, "invalid-request", MSG_BAD_NUMBER.format(name=name))
    return value


def member_job(user, job_id: uuid.UUID, *, with_output: bool = False) -> Job:
    """The job, if the caller is a member of its workspace. Otherwise the
    same 404 as for an id that does not exist: existence is not disclosed."""
    job = (jobs_with_live_phase(Job.objects.for_member(user), with_output=with_output)
           .filter(pk=job_id).first())
    if job is None:
        raise not_found()
    return job


def expected_version(request: HttpRequest) -> int | None:
    """The version the caller saw: `If-Match: "N"`, or `version` in a JSON or form body."""
    if_match = request.headers.get("If-Match", "").strip()
    if if_match and if_match != "*":
        return positive_int(if_match.removeprefix("W/").strip('"'), name="If-Match", default=0)
    raw = None
    if request.content_type == "application/json":
        if request.body.strip():
            try:
                data = json.loads(request.body)
            except ValueError:
                raise Problem(400, "invalid-request", MSG_BAD_JSON) from None
            if not isinstance(data, dict):
                raise Problem(400, "invalid-request", MSG_BAD_JSON)
            raw = data.get("version")
    else:
        raw = request.POST.get("version")
    if raw in (None, ""):
        return None
    return positive_int(str(raw), name="version", default=0)


@operation(
    "POST", summary="Cancel a job", tags=("jobs",),
    body=(Body(JSON, schemas.CancelRequest),), body_required=False,
    headers={"If-Match": ('The version you saw, `"N"`: cancel only if nothing changed.', False)},
    answers={200: json_answer(schemas.JobVersion, "Cancelled."),
             404: problem("No such job in your workspaces."),
             409: problem("The job can no longer be cancelled, or changed since that version.")})
@csrf_exempt  # session requests are CSRF-checked in authenticate(); tokens need no check
@api_view
def job_cancel_view(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    """A versioned, authorized mutation; 409 when the job cannot be cancelled
    any more (or changed since the version the caller names)."""
    allow(request, "POST")
    caller = authenticate(request)
    member_job(caller.user, id)
    job_cancel(job_id=id, expected_version=expected_version(request),
               by_label=caller.user.get_username())
    job = Job.objects.get(pk=id)
    return JsonResponse({"id": str(job.pk), "state": job.state, "version": job.version})


@catch_all
@csrf_exempt
@api_view
def unknown_endpoint(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    raise Problem(404, "not-found", MSG_NO_ENDPOINT)
