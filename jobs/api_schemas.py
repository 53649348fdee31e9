"""The shapes of the jobs API (DESIGN.md, the contract) as pydantic models.

They describe the answers for the OpenAPI document (jobs/openapi.py); the
test suite validates every answer it receives against that document, so a
view and its model cannot silently part ways. Objects allow more members
than listed: adding a member is not a breaking change for clients.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from jobs.models import State

JobState = Literal[tuple(State.values)]  # type: ignore[valid-type]


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Progress(Open):
    done: int
    total: int


class Timings(Open):
    waiting_seconds: float
    running_seconds: float
    review_seconds: float


class JobResult(Open):
    revision_id: UUID | None = Field(description="The published revision (its public id).")
    item_count: int | None
    unchanged: bool | None = Field(
        default=None, description="Present and true when the sheet was identical to the "
        "supplier's current revision, which `revision_id` names: nothing new was published.")
    note: str | None = Field(default=None, description="Why, when `unchanged`.")


class JobStatus(Open):
    id: UUID
    state: JobState
    attempt: int
    max_attempts: int
    progress: Progress
    reason: str
    created_at: datetime
    updated_at: datetime
    timings: Timings
    result: JobResult | None
    links: dict[str, str]


class JobPage(Open):
    results: list[JobStatus]
    count: int
    next: str | None
    previous: str | None


class Admission(Open):
    id: UUID
    state: JobState
    status_url: str


class JobVersion(Open):
    id: UUID
    state: JobState
    version: int


class JobListQuery(BaseModel):
    state: list[JobState] | None = Field(
        None, description="Only jobs in these states (repeat the parameter, or separate by commas).")
    page: int = Field(1, ge=1)
    page_size: int = Field(20, ge=1, description="At most 100 (larger asks get 100).")


class UploadForm(BaseModel):
    model_config = ConfigDict(title="Upload")

    file: bytes = Field(json_schema_extra={"format": "binary"}, description="The price sheet (CSV or XLSX).")
    supplier: str | None = Field(None, max_length=200, description="Created if missing.")
    workspace: str | None = Field(None, description="A slug; needed only with several workspaces.")


class CancelRequest(BaseModel):
    version: int | None = Field(None, ge=1, description="Cancel only if the job is still at this version.")
