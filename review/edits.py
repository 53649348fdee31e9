"""A reviewer's edits, applied and checked (pure: no ORM, no request).

What a reviewer changed (`ReviewEdits`) is applied to the staged items with
who set each value (`edits_apply`), the edited items are validated again
with the flags validation cannot check kept by the rules of the flag
registry (`items_recheck`), and a value that is not a value of its kind is
refused (`values_refused`). The decisions (review.decisions) store them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from typing import Any

from catalog.currencies import currency_error
from catalog.extraction import plain_decimal, typed_price
from catalog.flags import Clear, Code, UnknownFlag, codes_where, flag_type, is_blocking
from catalog.reading import Table
from catalog.validation import unit_problem, validate_items
from review.selectors import EDITABLE_FIELDS, ItemFilter, items_matching

MSG_BAD_CURRENCY = "Item {row}: {error}"
MSG_BAD_SHEET_CURRENCY = "The currency for the sheet: {error}"
MSG_BAD_SCOPE = "A value for the sheet applies to {scopes} items, not {value!r}."
MSG_BAD_PACK = "Item {row}: the pack size {value!r} is not a positive number."
MSG_BAD_PRICE = "Item {row}: the price {value!r} is not a positive decimal number (for example 1.10)."
MSG_BAD_ROW = "Item {row} does not exist in this job."
MSG_BAD_FIELD = "{field!r} is not a field a reviewer sets; fields are: {fields}."
MSG_BAD_VALUE = "Item {row}: {message}"
MSG_BAD_REPLACE = "Find and replace needs the text to find in {field}."
MSG_CHECK_PRICE = "{value!r} is not a price: type a positive decimal number (for example 1.10)."
MSG_CHECK_PACK = "{value!r} is not a pack size: type a positive number, or nothing."
MSG_CHECK_CURRENCY = "{value!r} is not a currency: pick an ISO 4217 code from the list (EUR, USD...)."

SCOPES = ("all", "missing", "flagged")
CURRENCY_SCOPES = SCOPES
# A value a reviewer set is checked for what it is by these codes of validation:
# the same rules the extractors' output meets (a known unit, a positive price,
# an active currency), never against the source row.
VALUE_CODES = codes_where(refuses_value=True)
# The fields a cell checks as it is committed (value_check), before saving.
CHECKED_FIELDS = ("unit", "pack_size", "unit_price", "currency")


class EditRejected(Exception):
    """An edit cannot be stored at all (not a value of its field's type)."""

    def __init__(self, errors: list[str]):
        self.message = " ".join(errors)
        super().__init__(self.message)
        self.errors = errors


@dataclass(frozen=True)
class SheetSet:
    """One value for a field of many items: every item (`all`), the items
    where the field is empty or flagged (`missing`), or every flagged item."""

    field: str
    value: Any
    scope: str = "all"
    where: ItemFilter | None = None  # only the items this filter picks


@dataclass(frozen=True)
class Replace:
    """Find and replace within one column. `whole`: only cells whose whole
    value is `find` (case and surrounding space ignored), as when a unit word
    is mapped once for the sheet ("Stk" to "pc"); else every occurrence."""

    field: str
    find: str
    replace: str
    whole: bool = False


@dataclass(frozen=True)
class ReviewEdits:
    """What a reviewer changed.

    Applied in this order, a later step winning: `sets` (and the page's
    sheet-wide `currency` for `currency_scope`, `unit` for the items whose
    unit is missing or flagged), `replace`, then each row's own values in
    `rows` (item index -> {field: value}), then `remove` (omit) and
    `restore`. A row value equal to the current one is not a change."""

    rows: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    remove: frozenset[int] = frozenset()
    restore: frozenset[int] = frozenset()
    currency: str = ""
    currency_scope: str = "missing"
    unit: str = ""
    sets: tuple[SheetSet, ...] = ()
    replace: tuple[Replace, ...] = ()
    # Omit or restore every item a filter picks (by the flags it has now).
    remove_where: tuple[ItemFilter, ...] = ()
    restore_where: tuple[ItemFilter, ...] = ()

    def resolved(self, items: list[dict]) -> ReviewEdits:
        """These edits with the filters turned into item indexes (pure)."""
        if not (self.remove_where or self.restore_where):
            return self
        remove = set(self.remove)
        restore = set(self.restore)
        for where in self.remove_where:
            remove.update(items_matching(items, where))
        for where in self.restore_where:
            restore.update(items_matching(items, where))
        return dataclass_replace(
            self,
            remove=frozenset(remove),
            restore=frozenset(restore - remove),
            remove_where=(),
            restore_where=(),
        )

    def all_sets(self) -> list[SheetSet]:
        out = list(self.sets)
        if (self.currency or "").strip():
            out.insert(0, SheetSet("currency", self.currency, self.currency_scope))
        if (self.unit or "").strip():
            out.insert(0, SheetSet("unit", self.unit, "missing"))
        return out


def _strip_flags(item: dict) -> dict:
    copy = {k: v for k, v in item.items() if k != "flags"}
    copy["source"] = dict(item.get("source") or {})
    return copy


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _parse(name: str, value: Any, row: int | None, errors: list[str]) -> Any:
    """A reviewer's value as the item stores it; what is not a value of its
    field's kind adds a sentence to `errors`."""
    text = _text(value)
    where = "for the sheet" if row is None else f"{row + 1}"
    if name in ("sku", "description"):
        return text
    if name == "unit":
        return text or None
    if name == "currency":
        code = text.upper()
        if not code:
            return None
        error = currency_error(code)
        if error:
            errors.append(
                MSG_BAD_SHEET_CURRENCY.format(error=error)
                if row is None
                else MSG_BAD_CURRENCY.format(row=where, error=error)
            )
            return None
        return code
    if name == "unit_price":
        price = typed_price(text)
        if price is None:
            errors.append(MSG_BAD_PRICE.format(row=where, value=text))
            return text
        return price
    if name == "pack_size":
        if not text:
            return None
        number = plain_decimal(text.replace(",", "."))
        if number is None or not number.is_finite() or number <= 0:
            errors.append(MSG_BAD_PACK.format(row=where, value=text))
            return None
        return int(number) if number == number.to_integral_value() else float(number)
    raise ValueError(name)


def value_check(*, name: str, value: Any, description: str = "") -> tuple[Any, str | None]:
    """One value a reviewer typed into a cell, checked as the cell is
    committed: (the value as it would be stored, None) or (None, why it is
    refused). The same rules as saving: a positive decimal price, an active
    ISO 4217 code, a known unit (for this item's description), a positive
    pack size (pure)."""
    if name not in EDITABLE_FIELDS:
        raise EditRejected([MSG_BAD_FIELD.format(field=name, fields=", ".join(EDITABLE_FIELDS))])
    errors: list[str] = []
    parsed = _parse(name, value, 0, errors)
    text = _text(value)
    if errors:
        return None, {"unit_price": MSG_CHECK_PRICE, "pack_size": MSG_CHECK_PACK}.get(
            name, MSG_CHECK_CURRENCY
        ).format(value=text)
    if name == "unit":
        problem = unit_problem(text, description)
        if problem:
            return None, problem
    return parsed, None


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "pack_size" and a is not None and b is not None:
        return _same_decimal(a, b)
    if name in ("sku", "description"):
        return _text(a) == _text(b)
    return a == b


def _field_flagged(item: dict, name: str) -> bool:
    return any(f.get("field") == name for f in item.get("flags") or [])


def _clearable_on(item: dict, name: str) -> bool:
    """Whether `item` carries, on field `name`, a flag a reviewer's value clears."""
    return any(f.get("field") == name and _cleared_by_edit(f) for f in item.get("flags") or [])


def _in_scope(item: dict, baseline: dict, name: str, scope: str, where: ItemFilter | None = None) -> bool:
    if where is not None and not where.matches(item):
        return False
    if scope == "all":
        return True
    if scope == "flagged":
        return bool(item.get("flags"))
    # Empty, or flagged: by validation now, or by a flag it cannot check that blocks.
    return (
        item.get(name) in (None, "")
        or _field_flagged(baseline, name)
        or any(
            f.get("field") == name and is_blocking(f) and _cleared_by_edit(f) for f in item.get("flags") or []
        )
    )


def _replaced(value: Any, rule: Replace) -> Any:
    text = _text(value)
    if rule.field == "unit_price" and _same_decimal(text, rule.find):
        return rule.replace  # "12.50" finds the price shown as 12.50 and stored as 12.5
    if rule.whole or rule.field not in ("sku", "description"):
        return rule.replace if text.casefold() == rule.find.strip().casefold() else value
    return text.replace(rule.find, rule.replace) if rule.find in text else value


def _same_decimal(a: Any, b: Any) -> bool:
    first, second = plain_decimal(str(a).strip()), plain_decimal(str(b).strip())
    return first is not None and second is not None and first == second


def _validate_fresh(items: list[dict], table: Table) -> list[dict]:
    """Validation's own verdict on the items (flags from earlier checks
    dropped). A value the reviewer set is the reviewer's, not the source
    row's: its unsupported-source flag is dropped, while it is still checked
    for what it is (currency, unit, price) like any value. Omitted items are
    not checked: they come back unchanged."""
    active = [n for n, item in enumerate(items) if not item.get("omitted")]
    checked = validate_items([_strip_flags(items[n]) for n in active], table)
    out = [dict(item) for item in items]
    for n, new in zip(active, checked, strict=True):
        own = set(items[n].get("provenance") or {})
        new["flags"] = [
            f
            for f in new["flags"]
            if not (f.get("code") == Code.UNSUPPORTED_SOURCE and f.get("field") in own)
        ]
        out[n] = new
    return out


def _kind(flag: Mapping[str, Any]):
    try:
        return flag_type(flag.get("code") or "")
    except UnknownFlag:
        return None


def _cleared_by_edit(flag: Mapping[str, Any]) -> bool:
    """A flag validation does not raise again that a reviewer's value for its
    field clears (catalog.flags: re-checked or acknowledged, not re-read)."""
    kind = _kind(flag)
    return kind is None or (not kind.validated and kind.clear is not Clear.REREAD)


def _kept(flag: dict, item: dict, old: dict, confirmed: Collection[str]) -> bool:
    """Whether an earlier flag stays on an edited item (catalog.flags):
    validation's own come back only if it raises them again; the others go
    when the reviewer set the field they are about (or confirmed its value),
    unless only a new read of the sheet clears them."""
    kind = _kind(flag)
    if kind is not None and kind.validated:
        return False
    name = flag.get("field")
    edited = name in EDITABLE_FIELDS and (
        name in set(item.get("provenance") or {}) or name in confirmed or item.get(name) != old.get(name)
    )
    return not edited or not _cleared_by_edit(flag)


def items_recheck(
    *,
    items: list[dict],
    before: list[dict],
    table: Table,
    confirmed: Mapping[int, Collection[str]] | None = None,
) -> list[dict]:
    """Validate edited items afresh (so a fixed field loses its flag), then
    keep the flags validation cannot check (the extractor's doubts, the
    model's values the sheet does not back) unless the reviewer set the
    field they are about, or confirmed its value (`confirmed`: item index ->
    fields)."""
    checked = _validate_fresh(items, table)
    confirmed = confirmed or {}
    for n, (item, old, new) in enumerate(zip(items, before, checked, strict=True)):
        if item.get("omitted"):
            continue
        fields = confirmed.get(n, ())
        new["flags"].extend(dict(flag) for flag in old.get("flags") or [] if _kept(flag, item, old, fields))
    return checked


def blocking_problems(checked: list[dict]) -> list[dict]:
    """What stops publication: every flag on an item to publish (`checked`:
    from `items_recheck`) that the flag registry says blocks approval. A
    doubt that does not block is answered by approving."""
    return [
        {"index": n, "sku": item.get("sku") or "", **flag}
        for n, item in enumerate(checked)
        if not item.get("omitted")
        for flag in item.get("flags") or []
        if is_blocking(flag)
    ]


def edits_apply(
    *, items: list[dict], edits: ReviewEdits, table: Table, by: str = "", at: str = ""
) -> tuple[list[dict], list[dict], dict]:
    """Apply `edits` to `items` (pure).

    Returns (edited items, the originals they came from, changes): changes
    hold field-level before/after per row, omitted and restored rows and the
    values set for the sheet. Each field the reviewer set records who set it
    and when, and the value the extractor gave (`provenance`)."""
    errors: list[str] = []
    edits = edits.resolved(items)
    sets = _checked_sets(edits, len(items), errors)
    needs_baseline = any(rule.scope == "missing" for rule, _ in sets)
    baseline = validate_items([_strip_flags(i) for i in items], table) if needs_baseline else items

    edited, rows = [], []
    marks: dict[str, list[dict]] = {"removed": [], "restored": [], "confirmed": []}
    applied: dict[tuple[str, str], list[int]] = {}
    for index, item in enumerate(items):
        confirmed: set[str] = set()
        new = _edited_item(index, item, baseline[index], sets, edits, applied, errors, confirmed)
        _mark_omission(index, item, new, edits, marks)
        changed = _record_provenance(item, new, by=by, at=at)
        row = {"index": index, "sku": item.get("sku"), "source": item.get("source")}
        if changed:
            rows.append({**row, "fields": changed})
        if confirmed - set(changed):
            marks["confirmed"].append({**row, "fields": sorted(confirmed - set(changed))})
        edited.append(new)
    if errors:
        raise EditRejected(sorted(set(errors), key=errors.index))
    changes: dict[str, Any] = {"rows": rows, **marks, "overrides": {}}
    for rule, value in sets:
        changes["overrides"][rule.field] = {
            "value": value,
            "scope": rule.scope,
            "rows": applied.get(("set", rule.field), []),
        }
    if edits.replace:
        changes["replaced"] = [
            {
                "field": r.field,
                "find": r.find,
                "replace": r.replace,
                "whole": r.whole,
                "rows": applied.get(("replace", r.field), []),
            }
            for r in edits.replace
        ]
    return edited, list(items), changes


def _checked_sets(edits: ReviewEdits, count: int, errors: list[str]) -> list[tuple[Any, Any]]:
    """The sheet-wide values to set, parsed; raises EditRejected naming every
    field, scope or row the edits name that does not exist."""
    sets = []
    for rule in edits.all_sets():
        if rule.field not in EDITABLE_FIELDS:
            errors.append(MSG_BAD_FIELD.format(field=rule.field, fields=", ".join(EDITABLE_FIELDS)))
        elif rule.scope not in SCOPES:
            errors.append(MSG_BAD_SCOPE.format(value=rule.scope, scopes=", ".join(SCOPES)))
        else:
            sets.append((rule, _parse(rule.field, rule.value, None, errors)))
    for rule in edits.replace:
        if rule.field not in EDITABLE_FIELDS:
            errors.append(MSG_BAD_FIELD.format(field=rule.field, fields=", ".join(EDITABLE_FIELDS)))
        elif not rule.find.strip():
            errors.append(MSG_BAD_REPLACE.format(field=rule.field))
    for index in set(edits.rows) | set(edits.remove) | set(edits.restore):
        if not 0 <= index < count:
            errors.append(MSG_BAD_ROW.format(row=index + 1))
    for values in edits.rows.values():
        errors.extend(
            MSG_BAD_FIELD.format(field=name, fields=", ".join(EDITABLE_FIELDS))
            for name in values
            if name not in EDITABLE_FIELDS
        )
    if errors:
        raise EditRejected(sorted(set(errors), key=errors.index))
    return sets


def _edited_item(
    index: int,
    item: dict,
    baseline: dict,
    sets,
    edits: ReviewEdits,
    applied: dict[tuple[str, str], list[int]],
    errors: list[str],
    confirmed: set[str],
) -> dict:
    """One item with the sheet-wide values, the replacements and its own row's
    values. A value equal to the current one changes nothing, but confirms it
    (into `confirmed`) when a flag an edit clears is on that field."""
    new = dict(item)
    new["source"] = dict(item.get("source") or {})
    for rule, value in sets:
        if _in_scope(item, baseline, rule.field, rule.scope, rule.where):
            if not _same(rule.field, new.get(rule.field), value):
                applied.setdefault(("set", rule.field), []).append(index)
            elif _clearable_on(item, rule.field):
                confirmed.add(rule.field)
            new[rule.field] = value
    for rule in edits.replace:
        value = _replaced(new.get(rule.field), rule)
        if value is not new.get(rule.field) and not _same(rule.field, value, new.get(rule.field)):
            new[rule.field] = _parse(rule.field, value, index, errors)
            applied.setdefault(("replace", rule.field), []).append(index)
    for name, value in (edits.rows.get(index) or {}).items():
        parsed = _parse(name, value, index, errors)
        if not _same(name, parsed, new.get(name)):
            new[name] = parsed  # a row's own value wins over the sheet's
        elif _clearable_on(item, name):
            confirmed.add(name)
    return new


def _mark_omission(
    index: int, item: dict, new: dict, edits: ReviewEdits, marks: dict[str, list[dict]]
) -> None:
    row = {"index": index, "sku": item.get("sku"), "source": item.get("source")}
    if index in edits.remove and not item.get("omitted"):
        new["omitted"] = True
        marks["removed"].append(row)
    elif index in edits.restore and item.get("omitted"):
        new.pop("omitted", None)
        marks["restored"].append(row)


def _record_provenance(item: dict, new: dict, *, by: str, at: str) -> dict:
    """The fields `new` changes from `item` (before/after); each set by the
    reviewer is recorded on `new` with who, when and what was extracted."""
    changed = {
        name: {"before": item.get(name), "after": new.get(name)}
        for name in EDITABLE_FIELDS
        if not _same(name, new.get(name), item.get(name))
    }
    if not changed:
        return changed
    provenance = {k: dict(v) for k, v in (item.get("provenance") or {}).items()}
    for name, values in changed.items():
        extracted = provenance.get(name, {}).get("extracted", values["before"])
        if _same(name, values["after"], extracted):
            provenance.pop(name, None)  # back to what the extractor read
        else:
            provenance[name] = {"by": by, "at": at, "extracted": extracted}
    if provenance:
        new["provenance"] = provenance
    else:
        new.pop("provenance", None)
    return changed


def values_refused(*, checked: list[dict], changes: dict) -> list[str]:
    """Sentences for the values the reviewer set in this edit that are not
    values of their kind (an unknown unit, a price that is no price...)."""
    errors = []
    for row in changes["rows"]:
        item = checked[row["index"]]
        if item.get("omitted"):
            continue
        for flag in item.get("flags") or []:
            if (
                flag.get("code") in VALUE_CODES
                and flag.get("field") in row["fields"]
                and row["fields"][flag["field"]]["after"] not in (None, "")
            ):
                errors.append(MSG_BAD_VALUE.format(row=row["index"] + 1, message=flag["message"]))
    return errors


def items_recheck_or_refuse(
    *, edited: list[dict], before: list[dict], changes: dict, table: Table
) -> list[dict]:
    """`items_recheck` of the edited items; EditRejected when a value the
    reviewer set is not a value of its kind."""
    confirmed = {row["index"]: row["fields"] for row in changes.get("confirmed") or []}
    checked = items_recheck(items=edited, before=before, table=table, confirmed=confirmed)
    refused = values_refused(checked=checked, changes=changes)
    if refused:
        raise EditRejected(refused)
    return checked


def has_changes(changes: dict) -> bool:
    return bool(changes["rows"] or changes["removed"] or changes["restored"] or changes.get("confirmed"))
