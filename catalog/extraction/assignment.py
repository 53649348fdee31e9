"""The roles of a table's columns, as both readers give them: the
hand-weighted rules (``rules_columns``) and the fitted column model
(``columns``). One type for both, so the extractor, the columns report and
the reviewer's pages read either the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog.extraction.text import col_letter


@dataclass
class Column:
    col: int
    header: str
    role: str  # an item role, "quantity" (rules only), or "other"
    confidence: float
    evidence: list[str] = field(default_factory=list)
    # The column model's most likely role, item role or not (alt_price,
    # row_index...); None when only the rules read the column.
    kind: str | None = None
    needs_confirmation: bool = False

    def to_json(self) -> dict:
        out = {"column": col_letter(self.col), "header": self.header, "role": self.role}
        if self.kind is None:
            # The rules' score is a ranking, not a probability: two places say all it knows.
            out.update(confidence=round(self.confidence, 2), evidence="; ".join(self.evidence))
            return out
        out.update(
            kind=self.kind,
            confidence=round(self.confidence, 3),
            needs_confirmation=self.needs_confirmation,
            evidence="; ".join(self.evidence),
        )
        return out


@dataclass
class Assignment:
    roles: dict[str, int]  # role -> column
    columns: list[Column]
    doubts: list[str]
    other_prices: list[int] = field(default_factory=list)
    doubted: dict[str, tuple[int, str]] = field(default_factory=dict)  # item role in doubt -> (column, why)
    # Item roles taken from the column model's column instead of the rules' (always shown in doubt).
    moved: list[str] = field(default_factory=list)

    def get(self, role: str) -> int | None:
        return self.roles.get(role)
