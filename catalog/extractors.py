"""Extractors: what turns a read table into candidate items, behind one
small interface, chosen by name with the EXTRACTOR setting.

An extractor runs inside the parse child (`catalog.pipeline`), between
reading and validation. ``extract`` gives the candidate items (not yet
validated), notes, a refusal (why no sheet is an item list, or None) and
the columns report; ``check`` adds the extractor's own checks of its items
against the sheet before the common validation. An extractor that calls a
remote model reports each call to the job through ``calls``; it may reach
only its configured endpoint (the child refuses any other connection).

A reviewer's mapping, or a remembered layout that fits, decides the
columns whichever extractor is configured: the built-in one reads them as
given (`catalog.pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from catalog.reading import Table

NOTE_MODEL = "extracted by model {model}"


class Calls(Protocol):
    """How an extractor that calls out reports to the job (through the pipe)."""

    def before_call(self) -> None:
        """Before each paid call: raises when the job must stop first."""

    def on_call(self, request_id: str | None, usage: dict | None) -> None:
        """As soon as a call returns, failed or not: its billing record."""

    def progress(self, done: int, total: int) -> None:
        """After each part of the work."""


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the model-backed extractor sends its calls (plain data: it
    crosses into the parse child)."""

    base_url: str
    api_key: str
    model: str
    timeout_seconds: float


class Extractor(Protocol):
    name: str
    # Whether it calls the model endpoint (the child's only reachable address).
    remote: bool

    def extract(self, table: Table, *, layouts: dict, endpoint: ModelEndpoint | None, calls: Calls) -> dict:
        """``{"items", "notes", "refusal", "report"}``, the items not yet validated."""

    def check(self, items: list[dict], table: Table) -> list[dict]:
        """Copies of ``items`` with this extractor's own flags."""


class BuiltinExtractor:
    """Deterministic and offline: header, columns, rows (`catalog.extraction`),
    with the mapping chosen for the table (`catalog.mapping.read_items`)."""

    name = "builtin"
    remote = False

    def extract(self, table: Table, *, layouts: dict, endpoint: ModelEndpoint | None, calls: Calls) -> dict:
        from catalog.mapping import read_items

        return read_items(table, **layouts)

    def check(self, items: list[dict], table: Table) -> list[dict]:
        return items


class ModelExtractor:
    """Any OpenAI-compatible endpoint (`catalog.llm`), strict JSON schema."""

    name = "openai"
    remote = True

    def extract(self, table: Table, *, layouts: dict, endpoint: ModelEndpoint | None, calls: Calls) -> dict:
        from catalog.llm import LLMConfig, extract_items_with_model

        if endpoint is None:
            raise ValueError("the model extractor needs an endpoint")
        config = LLMConfig(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            model=endpoint.model,
            timeout_seconds=endpoint.timeout_seconds,
        )
        result = extract_items_with_model(
            table,
            config=config,
            before_call=calls.before_call,
            on_call=calls.on_call,
            progress=calls.progress,
        )
        return {
            "items": result.items,
            "notes": [NOTE_MODEL.format(model=endpoint.model)],
            "refusal": None,
            "report": {
                "columns": [],
                "needs_confirmation": False,
                "layout": {"source": "inferred", "approved_by": None, "approved_at": None},
            },
        }

    def check(self, items: list[dict], table: Table) -> list[dict]:
        from catalog.validation import check_model_items

        return check_model_items(items, table)


# The extractors by the name the EXTRACTOR setting gives.
EXTRACTORS: dict[str, Extractor] = {e.name: e for e in (BuiltinExtractor(), ModelExtractor())}
