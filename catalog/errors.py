"""Errors of the pure extraction pipeline (reading, extracting, the model call).

Two families, because the job machinery treats them differently:

- ``SheetError``: the input itself is the problem (unreadable, refused by a
  limit, or not an item list). Permanent: retrying the same bytes gives the
  same answer, so the job goes to ``needs_attention`` at once.
- ``ExtractionError``: the model-backed extractor failed. ``transient`` says
  whether the job's retry policy may try again (timeouts, connection errors,
  429, 5xx) or not (other 4xx, a refusal, output that breaks the schema).

Every error carries ``.reason``: one sentence an operator can act on.
"""

from __future__ import annotations


class SheetError(Exception):
    """The sheet cannot be turned into items; permanent."""

    transient = False

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnreadableSheet(SheetError):
    """The bytes are not a readable CSV/TSV/XLSX, or a safety limit refused them."""


class NotAnItemList(SheetError):
    """The sheet reads fine but holds no item list (price matrix, rate card, empty)."""


class ExtractionError(Exception):
    """The model-backed extractor failed; ``transient`` decides whether to retry."""

    transient = False

    def __init__(self, reason: str, *, request_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.request_id = request_id


class ProviderTransientError(ExtractionError):
    """Timeout, connection error, 429 or 5xx: worth another attempt later."""

    transient = True


class ProviderRejectedError(ExtractionError):
    """Other 4xx, a refusal, or an answer that breaks the schema: do not retry."""

    transient = False
