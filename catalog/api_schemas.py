"""The shapes of the upload API: the uploaded sheet, the items a sheet job
yields and its result, on top of the generic job shapes (jobs.api_schemas)."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from jobs import api_schemas as generic
from jobs.api_schemas import Open


class Source(Open):
    sheet: str
    row: int


class Flag(Open):
    code: str = Field(description="missing_currency, ambiguous_unit, invalid_price, ...")
    field: str | None
    message: str


class Item(Open):
    """An extracted or published item (DESIGN.md, the item schema)."""

    sku: str | None
    description: str | None
    unit: str | None
    pack_size: float | str | None
    unit_price: str | None = Field(description="A decimal, as text.")
    currency: str | None = Field(description="ISO 4217, or null when not stated.")
    source: Source | None


class JobItem(Item):
    flags: list[Flag]


class JobItems(Open):
    items: list[JobItem]


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
