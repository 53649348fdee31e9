"""The shapes of the upload API: the uploaded sheet and a sheet job's
result, on top of the generic job shapes (jobs.api_schemas). The items a
sheet job yields are typed in catalog.items."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from jobs import api_schemas as generic
from jobs.api_schemas import Open


class JobResult(Open):
    revision_id: UUID | None = Field(description="The published revision (its public id).")
    item_count: int | None
    unchanged: bool | None = Field(
        default=None, description="Present and true when the sheet was identical to the "
        "supplier's current revision, which `revision_id` names: nothing new was published.")
    note: str | None = Field(default=None, description="Why, when `unchanged`.")


class JobStatus(generic.JobStatus):
    result: JobResult | None


class JobPage(generic.JobPage):
    results: list[JobStatus]


class UploadForm(BaseModel):
    model_config = ConfigDict(title="Upload")

    file: bytes = Field(json_schema_extra={"format": "binary"}, description="The price sheet (CSV or XLSX).")
    supplier: str | None = Field(None, max_length=200, description="Created if missing.")
    workspace: str | None = Field(None, description="A slug; needed only with several workspaces.")
