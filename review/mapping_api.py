"""`POST /api/jobs/<id>/mapping`: a reviewer's column mapping over HTTP.

202 `{id, state, version}` once the job is back in the queue with the
mapping; 404 for a job outside the caller's workspaces (as for an unknown
id), 403 without the reviewer role, 409 when the job changed since the
version named or cannot take a mapping in its state, 422 for a mapping the
sheet cannot take. A sheet is mapped by its columns (an item list) or, for a
price matrix, by a `matrix` form (catalog.extraction.matrix checks it).
Errors are problem+json like the rest of the API.
"""

import uuid
from typing import Annotated

from django.http import HttpRequest, JsonResponse
from ninja import Router, Schema
from pydantic import ConfigDict, Field, create_model

from catalog.items import VALUE_FIELDS
from catalog.mapping import MappingInvalid
from catalog.services import SheetNotRead, pricesheet_mapping_apply
from jobs.http import JobVersion, Version, answers, caller, json_int
from jobs.models import Job
from jobs.problems import Problem, not_found, register_titles
from jobs.services import InvalidTransition, VersionConflict
from review.selectors import NotAReviewer, job_history_sentence, review_job_get

register_titles(
    {
        "not-mappable": "The job cannot take a column mapping in its current state",
        "invalid-mapping": "The column mapping does not fit the sheet",
    }
)

MSG_NOT_A_REVIEWER = "Only reviewers and admins of the job's workspace may map its columns."
MSG_NOT_MAPPABLE = "The job is {state}: a mapping can be applied while it awaits review or needs attention."
MSG_CONFLICT = "Nothing was changed: the job changed since version {version}. {history}"
SHEET_NAME_MAX = 255
ROWS_MAX = 1_048_576  # a spreadsheet's last row


# --- shapes: the parser of the body and its description (catalog/mapping.py
# checks that the mapping fits the sheet) --------------------------------------------

Letter = Annotated[str, Field(pattern=r"^[A-Za-z]{1,3}$")] | None


_COLUMN_NOTES = {"sku": "A column letter (A, B, ..., AA), or null.", "unit_price": "Required."}
MappedColumns = create_model(
    "MappedColumns",
    __config__=ConfigDict(extra="forbid"),
    **{role: (Letter, Field(None, description=_COLUMN_NOTES.get(role))) for role in VALUE_FIELDS},
)


class MatrixForm(Schema):
    """A price matrix: one item per priced cell of the body (catalog.extraction.matrix)."""

    model_config = ConfigDict(extra="forbid")

    row_labels: list[str] = Field(
        max_length=50,
        description=(
            'The column letters that hold the product and its attributes (or the row dimension), e.g. ["A"].'
        ),
    )
    column_header_rows: list[json_int(ge=1, le=ROWS_MAX)] = Field(
        max_length=10,
        description=("The 1-based rows above the body whose cells name each body column, e.g. [3]."),
    )
    body: str = Field(
        max_length=20, description=('The priced cells, e.g. "B4:Z40"; "B4:Z" reads to the sheet\'s last row.')
    )
    dimension_unit: str | None = Field(
        None, max_length=20, description='Written after numeric labels: "cm", "ml".'
    )
    product: str | None = Field(
        None,
        max_length=200,
        description=("A name put before every description, for a matrix whose rows are only a dimension."),
    )


class MappedSheet(Schema):
    model_config = ConfigDict(extra="forbid")

    sheet: str = Field(
        max_length=SHEET_NAME_MAX, description="The sheet's name; only the sheets listed are read."
    )
    header_row: json_int(ge=1, le=ROWS_MAX) | None = Field(
        None, description="1-based; null when there is none."
    )
    columns: MappedColumns | None = Field(None, description="An item list's columns (or `matrix`).")
    matrix: MatrixForm | None = Field(None, description="A price matrix, instead of `columns`.")


class MappingRequest(Schema):
    model_config = ConfigDict(extra="forbid")

    version: Version
    sheets: list[MappedSheet] = Field(max_length=1_000)
    currency: str | None = Field(
        None,
        pattern=r"^[A-Za-z]{3}$",
        description="ISO 4217: the currency of prices whose cell, "
        "currency column or number format names none.",
    )


router = Router(tags=["review"])


@router.post(
    "/jobs/{uuid:id}/mapping",
    response={202: JobVersion},
    url_name="job-mapping",
    summary="Map a sheet's columns and read it again",
)
@answers(
    descriptions={202: "Queued with the mapping; it comes back to review."},
    problems={
        403: "Not a reviewer of the job's workspace, a read-only token, or a failed CSRF check.",
        404: "No such job in your workspaces.",
        409: "The job changed since that version, or is neither awaiting review nor needing attention.",
        422: "The mapping does not fit the sheet (`errors` says why).",
    },
)
def job_mapping(request: HttpRequest, id: uuid.UUID, payload: MappingRequest):
    user = caller(request).user
    try:
        review_job_get(user=user, job_id=id)
    except Job.DoesNotExist:
        raise not_found() from None
    except NotAReviewer:
        raise Problem(403, "forbidden", MSG_NOT_A_REVIEWER) from None
    version = payload.version
    try:
        new_version = pricesheet_mapping_apply(
            job_id=id, expected_version=version, data=payload.model_dump(exclude_unset=True), user=user
        )
    except MappingInvalid as exc:
        raise Problem(422, "invalid-mapping", " ".join(exc.errors), errors=exc.errors) from None
    except SheetNotRead as exc:
        raise Problem(422, "invalid-mapping", str(exc), errors=[str(exc)]) from None
    except VersionConflict as exc:
        job = Job.objects.get(pk=id)
        history = job_history_sentence(job=job, since_version=version)
        raise Problem(
            409,
            "version-conflict",
            MSG_CONFLICT.format(version=version, history=history),
            state=exc.state,
            version=exc.actual,
        ) from None
    except InvalidTransition as exc:
        raise Problem(
            409, "not-mappable", MSG_NOT_MAPPABLE.format(state=exc.state.replace("_", " ")), state=exc.state
        ) from None
    job = Job.objects.get(pk=id)
    return JsonResponse({"id": str(job.pk), "state": job.state, "version": new_version}, status=202)
