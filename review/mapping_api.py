"""`POST /api/jobs/<id>/mapping`: a reviewer's column mapping over HTTP.

202 `{id, state, version}` once the job is back in the queue with the
mapping; 404 for a job outside the caller's workspaces (as for an unknown
id), 403 without the reviewer role, 409 when the job changed since the
version named or cannot take a mapping in its state, 422 for a mapping the
sheet cannot take. Errors are problem+json like the rest of the API.
"""

import json
import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, create_model

from accounts.auth import authenticate
from catalog.items import VALUE_FIELDS
from catalog.mapping import MappingInvalid
from catalog.services import SheetNotRead, pricesheet_mapping_apply
from jobs.api_schemas import JobVersion
from jobs.models import Job
from jobs.openapi import JSON, Body, json_answer, operation, problem
from jobs.problems import Problem, api_view, not_found
from jobs.services import InvalidTransition, VersionConflict
from review.selectors import NotAReviewer, job_history_sentence, review_job_get

MSG_BAD_JSON = "Send the mapping as a JSON object (Content-Type: application/json)."
MSG_VERSION = "Send `version`: the job version your mapping was made from (see GET /api/jobs/<id>)."
MSG_NOT_A_REVIEWER = "Only reviewers and admins of the job's workspace may map its columns."
MSG_NOT_MAPPABLE = ("The job is {state}: a mapping can be applied while it awaits review or "
                    "needs attention.")
MSG_CONFLICT = "Nothing was changed: the job changed since version {version}. {history}"


# --- shapes, for the OpenAPI description (catalog/mapping.py checks the bodies) ----

Letter = str | None


_COLUMN_NOTES = {"sku": "A column letter (A, B, ..., AA), or null.", "unit_price": "Required."}
MappedColumns = create_model("MappedColumns", __config__=ConfigDict(extra="forbid"), **{
    role: (Letter, Field(None, description=_COLUMN_NOTES.get(role))) for role in VALUE_FIELDS})


class MappedSheet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sheet: str = Field(description="The sheet's name; only the sheets listed are read.")
    header_row: int | None = Field(None, ge=1, description="1-based; null when there is none.")
    columns: MappedColumns


class MappingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, description="The job's version as you read it.")
    sheets: list[MappedSheet]
    currency: str | None = Field(None, description="ISO 4217: the currency of prices whose cell, "
                                                   "currency column or number format names none.")


def _body(request: HttpRequest) -> dict:
    try:
        data = json.loads(request.body or b"")
    except ValueError:
        raise Problem(400, "invalid-request", MSG_BAD_JSON) from None
    if not isinstance(data, dict):
        raise Problem(400, "invalid-request", MSG_BAD_JSON)
    return data


def _version(data: dict) -> int:
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise Problem(400, "invalid-request", MSG_VERSION)
    return version


@operation("POST", summary="Map a sheet's columns and read it again", tags=("review",),
           body=(Body(JSON, MappingRequest),), answers={
               202: json_answer(JobVersion, "Queued with the mapping; it comes back to review."),
               400: problem("No `version`, or a body that is not a JSON object."),
               403: problem("Not a reviewer of the job's workspace, a read-only token, or a failed CSRF check."),
               404: problem("No such job in your workspaces."),
               409: problem("The job changed since that version, or is neither awaiting review nor "
                            "needing attention."),
               422: problem("The mapping does not fit the sheet (`errors` says why)."),
           })
@csrf_exempt  # session requests are CSRF-checked in authenticate(); tokens need no check
@api_view
def job_mapping(request: HttpRequest, id: uuid.UUID) -> HttpResponse:
    if request.method != "POST":
        raise Problem(405, "method-not-allowed", "Use POST.", headers={"Allow": "POST"})
    caller = authenticate(request)
    try:
        review_job_get(user=caller.user, job_id=id)
    except Job.DoesNotExist:
        raise not_found() from None
    except NotAReviewer:
        raise Problem(403, "forbidden", MSG_NOT_A_REVIEWER) from None
    data = _body(request)
    version = _version(data)
    try:
        new_version = pricesheet_mapping_apply(job_id=id, expected_version=version, data=data,
                                               user=caller.user)
    except MappingInvalid as exc:
        raise Problem(422, "invalid-mapping", " ".join(exc.errors), errors=exc.errors) from None
    except SheetNotRead as exc:
        raise Problem(422, "invalid-mapping", str(exc), errors=[str(exc)]) from None
    except VersionConflict as exc:
        job = Job.objects.get(pk=id)
        history = job_history_sentence(job=job, since_version=version)
        raise Problem(409, "version-conflict", MSG_CONFLICT.format(version=version, history=history),
                      state=exc.state, version=exc.actual) from None
    except InvalidTransition as exc:
        raise Problem(409, "not-mappable", MSG_NOT_MAPPABLE.format(state=exc.state.replace("_", " ")),
                      state=exc.state) from None
    job = Job.objects.get(pk=id)
    return JsonResponse({"id": str(job.pk), "state": job.state, "version": new_version},
                        status=202)
