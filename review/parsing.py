"""The reviewer's edits as JSON (the API and the page post the same body),
read into `ReviewEdits`. Pure: no ORM, no request.

    {"version": N,
     "set": {"currency": "EUR", "unit": null},          # for every item; null: leave as is
     "scope": "all" | "missing" | "flagged",            # which items "set" reaches [all]
     "items": [{"index": 3, "set": {"unit_price": "1.10"}},
               {"index": 7, "omit": true}, {"index": 8, "omit": false}],
     "replace": [{"field": "unit", "find": "Stk", "replace": "pc", "whole": true}],
     "sets": [{"field": "unit", "value": "pc", "scope": "missing"}],   # several sheet values
     "omit": {"flag": CODE},                              # every item a filter picks
     "restore": {"flag": CODE, "field": "sku", "blocking": false}}
                                                         # CODE: a code of catalog/flags.py

A filter (`omit`, `restore`, and `where` in an entry of `sets`) picks the
items with a flag of code `flag`, on `field` ("row": about no one field),
blocking approval when `blocking` is true; a key left out matches any flag.
"""

from __future__ import annotations

from typing import Any

from catalog.flags import CODES
from review.edits import SCOPES, Replace, ReviewEdits, SheetSet
from review.selectors import EDITABLE_FIELDS, ItemFilter

MSG_NOT_OBJECT = "The body must be a JSON object."
MSG_VERSION = "`version` must be the job's version (a positive whole number) as you read it."
MSG_UNKNOWN_KEYS = "Unknown field(s) {keys}; send {allowed}."
MSG_SET = "`{where}set` must be an object of fields ({fields}) to values."
MSG_FIELD = "`{where}set` names {field!r}, which is not a field; fields are: {fields}."
MSG_VALUE = "`{where}set.{field}` must be a string, a number or null."
MSG_SCOPE = "`scope` must be one of {scopes}."
MSG_ITEMS = "`items` must be a list of objects with an `index`."
MSG_INDEX = "`items[{n}].index` must be a whole number from 0."
MSG_TWICE = "Item index {index} appears twice in `items`."
MSG_OMIT = "`items[{n}].omit` must be true or false."
MSG_REPLACE = (
    '`replace` must be a list of {{"field", "find", "replace", "whole"}} objects with a field name and texts.'
)

MSG_SETS = '`sets` must be a list of {{"field", "value", "scope"}} objects; scopes: {scopes}.'

MSG_FILTER = (
    '`{where}` must be a filter object {{"flag": code, "field": name or "row", "blocking": true or false}}.'
)

MSG_NOT_A_CODE = "{code!r}, which is not a flag code; codes are: {codes}."
MSG_FILTER_CODE = "`{where}.flag` is " + MSG_NOT_A_CODE

TOP_KEYS = ("version", "set", "scope", "sets", "items", "replace", "omit", "restore")
FILTER_KEYS = ("flag", "field", "blocking")
ITEM_KEYS = ("index", "set", "omit")


class BadEdits(ValueError):
    """The body is not a valid edit; the message says what to send."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def version_from_json(data: Any) -> int:
    if not isinstance(data, dict):
        raise BadEdits(MSG_NOT_OBJECT)
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BadEdits(MSG_VERSION)
    return version


def _values(raw: Any, where: str) -> dict[str, Any]:
    fields = ", ".join(EDITABLE_FIELDS)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BadEdits(MSG_SET.format(where=where, fields=fields))
    for name, value in raw.items():
        if name not in EDITABLE_FIELDS:
            raise BadEdits(MSG_FIELD.format(where=where, field=name, fields=fields))
        if isinstance(value, bool) or not isinstance(value, (str, int, float, type(None))):
            raise BadEdits(MSG_VALUE.format(where=where, field=name))
    return dict(raw)


def _unknown(raw: dict, allowed: tuple[str, ...]) -> None:
    extra = sorted(set(raw) - set(allowed))
    if extra:
        raise BadEdits(MSG_UNKNOWN_KEYS.format(keys=", ".join(map(repr, extra)), allowed=", ".join(allowed)))


def filter_from_json(raw: Any, where: str = "filter") -> ItemFilter:
    """A filter object read into an ItemFilter; BadEdits when it is not one."""
    if not isinstance(raw, dict):
        raise BadEdits(MSG_FILTER.format(where=where))
    _unknown(raw, FILTER_KEYS)
    flag, name, blocking = raw.get("flag") or "", raw.get("field") or "", raw.get("blocking", False)
    if (
        not isinstance(flag, str)
        or not isinstance(name, str)
        or not isinstance(blocking, bool)
        or name not in ("", "row", *EDITABLE_FIELDS)
    ):
        raise BadEdits(MSG_FILTER.format(where=where))
    if flag and flag not in CODES:
        raise BadEdits(MSG_FILTER_CODE.format(where=where, code=flag, codes=", ".join(CODES)))
    return ItemFilter(flag=flag, field=name, blocking=blocking)


def _sheet_sets(raw: Any) -> list[SheetSet]:
    out = []
    for rule in raw or []:
        if not isinstance(rule, dict) or rule.get("scope", "all") not in SCOPES:
            raise BadEdits(MSG_SETS.format(scopes=", ".join(SCOPES)))
        _unknown(rule, ("field", "value", "scope", "where"))
        value = _values({rule.get("field"): rule.get("value")}, "sets[].").popitem()[1]
        where = filter_from_json(rule["where"], "sets[].where") if rule.get("where") is not None else None
        out.append(SheetSet(rule["field"], value, rule.get("scope", "all"), where))
    return out


def edits_from_json(data: Any) -> ReviewEdits:
    """The edits a body asks for; BadEdits says what is wrong with it."""
    if not isinstance(data, dict):
        raise BadEdits(MSG_NOT_OBJECT)
    _unknown(data, TOP_KEYS)
    scope = data.get("scope") or "all"
    if scope not in SCOPES:
        raise BadEdits(MSG_SCOPE.format(scopes=", ".join(SCOPES)))
    sets = tuple(
        SheetSet(name, value, scope)
        for name, value in _values(data.get("set"), "").items()
        if value is not None
    )

    sets += tuple(_sheet_sets(data.get("sets")))

    rows: dict[int, dict[str, Any]] = {}
    omit, restore = set(), set()
    items = data.get("items") or []
    if not isinstance(items, list):
        raise BadEdits(MSG_ITEMS)
    seen = set()
    for n, entry in enumerate(items):
        if not isinstance(entry, dict):
            raise BadEdits(MSG_ITEMS)
        _unknown(entry, ITEM_KEYS)
        index = entry.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise BadEdits(MSG_INDEX.format(n=n))
        if index in seen:
            raise BadEdits(MSG_TWICE.format(index=index))
        seen.add(index)
        values = _values(entry.get("set"), f"items[{n}].")
        if values:
            rows[index] = values
        if "omit" in entry:
            if not isinstance(entry["omit"], bool):
                raise BadEdits(MSG_OMIT.format(n=n))
            (omit if entry["omit"] else restore).add(index)

    replace = []
    for rule in data.get("replace") or []:
        if (
            not isinstance(rule, dict)
            or rule.get("field") not in EDITABLE_FIELDS
            or not isinstance(rule.get("find"), str)
            or not isinstance(rule.get("replace"), str)
        ):
            raise BadEdits(MSG_REPLACE)
        replace.append(Replace(rule["field"], rule["find"], rule["replace"], bool(rule.get("whole"))))
    return ReviewEdits(
        rows=rows,
        remove=frozenset(omit),
        restore=frozenset(restore),
        sets=sets,
        replace=tuple(replace),
        remove_where=_filters(data.get("omit"), "omit"),
        restore_where=_filters(data.get("restore"), "restore"),
    )


def _filters(raw: Any, where: str) -> tuple[ItemFilter, ...]:
    if raw is None:
        return ()
    return (filter_from_json(raw, where),)
