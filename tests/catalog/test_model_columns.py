"""A role in doubt that the column model gives to another column is taken from the model's
column, still in doubt (columns._take_model_columns); a name the rules found no column for is
taken from the model's (columns._take_model_names); an item role no column holds is in doubt
where a column may hold it (columns._rules_absences). How sure the model is of the rules'
unit price (columns.agreement) depends on whether another column reads as a price. The only
column naming the items, holding codes under a header that does not name its role, is in doubt
(columns._code_names). A free column the model reads as the SKU or the description more likely
than the rules' column puts that role in doubt (columns._rivals), read again once the model
has moved a role off a column, as a second price is (columns._other_prices). A price under a
header that names it moves only to a column whose header names it too
(columns._named_price_stays)."""

import pytest

from catalog.extraction.assignment import Assignment, Column
from catalog.extraction.column_model import load_model
from catalog.extraction.columns import (
    _code_names,
    _rules_absences,
    _rivals,
    _take_model_columns,
    _take_model_names,
    _take_model_price,
    agreement,
    second_opinion,
)


def assignment(roles: dict[str, int], doubted: tuple[str, ...], width: int = 4) -> Assignment:
    by_col = {c: r for r, c in roles.items()}
    return Assignment(
        roles=dict(roles),
        columns=[Column(c, f"h{c}", by_col.get(c, "other"), 0.5, kind="other") for c in range(width)],
        doubts=[],
        other_prices=[3],
        doubted={r: (roles[r], "why") for r in doubted},
    )


FULL = {"filled": 1.0, "numeric": 1.0}
PROBS = [{"description": 0.4, "unit_price": 0.3}] * 4


def test_a_doubted_price_moves_to_the_models_column_and_stays_in_doubt():
    got = assignment({"description": 0, "unit_price": 2}, doubted=("unit_price",))
    _take_model_columns(got, {"description": 0, "unit_price": 3}, PROBS, [FULL] * 4)
    assert got.roles == {"description": 0, "unit_price": 3}
    assert got.moved == ["unit_price"]
    assert got.doubted["unit_price"][0] == 3
    assert "column D was taken as the unit price by the column model" in got.doubts[-1]
    by_col = {c.col: c for c in got.columns}
    assert (by_col[3].role, by_col[3].needs_confirmation) == ("unit_price", True)
    assert (by_col[2].role, by_col[2].needs_confirmation) == ("other", True)
    assert got.other_prices == [2]


@pytest.mark.parametrize(
    ("labels", "where"),
    [
        (["Name", "Price", "Weight"], 1),  # a price word over the rules' column only: it stays
        (["Name", "Price", "Price"], 2),  # both name the price: the model's column is taken
        (["Name", "", ""], 2),  # neither does
    ],
)
def test_a_price_under_a_header_that_names_it_moves_only_to_a_column_named_so_too(labels, where):
    probs = [{"description": 0.9}, {"unit_price": 0.3}, {"unit_price": 0.5}]
    got = assignment({"description": 0, "unit_price": 1}, doubted=("unit_price",), width=3)
    _take_model_columns(got, {"description": 0, "unit_price": 2}, probs, [FULL] * 3, labels=labels)
    assert got.roles["unit_price"] == where
    assert got.doubted["unit_price"][0] == where  # in doubt either way


def test_a_role_the_model_does_not_doubt_stays_where_the_rules_put_it():
    got = assignment({"description": 0, "unit_price": 2}, doubted=())
    _take_model_columns(got, {"description": 1, "unit_price": 3}, PROBS, [FULL] * 4)
    assert got.roles == {"description": 0, "unit_price": 2}
    assert got.moved == []


def test_no_move_onto_a_column_holding_another_item_role():
    got = assignment({"description": 0, "sku": 1, "unit_price": 2}, doubted=("description",))
    _take_model_columns(got, {"description": 1, "unit_price": 2}, PROBS, [FULL] * 4)
    assert got.roles == {"description": 0, "sku": 1, "unit_price": 2}


def test_no_move_that_would_lose_items():
    sparse = {"filled": 0.5, "numeric": 1.0}
    texts = {"filled": 1.0, "numeric": 0.5}  # half its cells are no number: no price there
    for feats in ([FULL, FULL, FULL, sparse], [FULL, FULL, FULL, texts]):
        got = assignment({"description": 0, "unit_price": 2}, doubted=("unit_price",))
        _take_model_columns(got, {"description": 0, "unit_price": 3}, PROBS, feats)
        assert got.roles["unit_price"] == 2
    got = assignment({"description": 0, "unit_price": 2}, doubted=("description",))
    _take_model_columns(got, {"description": 1, "unit_price": 2}, PROBS, [FULL, sparse, FULL, FULL])
    assert got.roles["description"] == 0


def test_no_move_onto_a_column_the_model_reads_as_the_role_less_likely_than_the_rules_one():
    """The model's roles are one column each: a name column it reads as the SKU leaves the
    description to whichever column is left, which is no reason to move it there."""
    probs = [{"sku": 0.67, "description": 0.32}, {"unit_price": 0.9}, {"other": 0.8, "description": 0.04}]
    got = assignment({"description": 0, "unit_price": 1}, doubted=("description",), width=3)
    _take_model_columns(got, {"sku": 0, "description": 2, "unit_price": 1}, probs, [FULL] * 3)
    assert got.roles == {"description": 0, "unit_price": 1}
    assert got.moved == []


def test_a_price_taken_by_its_values_moves_to_a_column_the_model_reads_more_surely_as_a_price():
    """Under a header that says nothing of it, the rules' price (a column of category numbers) is
    a unit price to the model a little more likely (0.20) than the column it chose (0.17), which
    it reads as a price of some kind far more surely (0.88 against 0.42): the price moves
    there, in doubt. Under a header that names it, the price stays: which of two price columns
    is the unit price is not the model's to settle."""
    probs = [
        {"description": 0.9},
        {"alt_price": 0.71, "unit_price": 0.17},
        {"other": 0.41, "alt_price": 0.22, "unit_price": 0.2},
    ]
    for unnamed, where in (({0, 1, 2}, 1), ((), 2)):
        got = assignment({"description": 0, "unit_price": 2}, doubted=("unit_price",), width=3)
        _take_model_columns(got, {"description": 0, "unit_price": 1}, probs, [FULL] * 3, unnamed=unnamed)
        assert got.roles["unit_price"] == where
        assert got.moved == (["unit_price"] if where == 1 else [])


def test_an_sku_the_model_reads_less_likely_than_a_free_column_is_in_doubt_on_its_field():
    probs = [
        {"sku": 0.74, "other": 0.2},
        {"sku": 0.68, "other": 0.3},
        {"description": 0.9},
        {"unit_price": 0.9},
    ]
    got = assignment({"sku": 1, "description": 2, "unit_price": 3}, doubted=())
    assert _rivals(got, probs)["sku"] == (
        1,
        "column B was taken as the SKU; the column model reads column A as the SKU more likely",
    )
    probs[0] = {"sku": 0.6, "other": 0.4}  # less likely than the SKU taken: no rival
    assert _rivals(got, probs) == {}
    probs[0] = {"sku": 0.7, "barcode": 0.8}  # read as something else first: no rival
    assert _rivals(got, probs) == {}


def test_a_description_the_model_reads_less_likely_than_a_free_column_is_in_doubt_on_its_field():
    """The same rival for the description: a note beside the name, read without a header."""
    probs = [
        {"sku": 0.9},
        {"description": 0.62, "other": 0.3},
        {"description": 0.81, "other": 0.18},
        {"unit_price": 0.9},
    ]
    got = assignment({"sku": 0, "description": 1, "unit_price": 3}, doubted=())
    assert _rivals(got, probs) == {
        "description": (
            1,
            "column B was taken as the description; the column model reads column C as the "
            "description more likely",
        )
    }
    probs[2] = {"other": 0.82, "description": 0.09}  # read as something else first: no rival
    assert _rivals(got, probs) == {}
    got = assignment({"sku": 0, "description": 1, "unit_price": 3}, doubted=("description",))
    probs[2] = {"description": 0.81, "other": 0.18}
    assert _rivals(got, probs) == {}  # the rules' own doubt stands


def test_a_column_a_role_left_may_be_a_rival_of_the_sku():
    """The rules took a column of codes as the description and another as the SKU; once the
    model moves the description away, the codes it left rival the SKU."""
    probs = [{"sku": 0.74, "description": 0.09}, {"sku": 0.68}, {"description": 0.61}, {"unit_price": 0.9}]
    got = assignment({"description": 0, "sku": 1, "unit_price": 3}, doubted=("description",))
    _take_model_columns(got, {"sku": 0, "description": 2, "unit_price": 3}, probs, [FULL] * 4)
    assert got.roles == {"description": 2, "sku": 1, "unit_price": 3}
    assert got.doubted["sku"][0] == 1
    assert {c.col: c.needs_confirmation for c in got.columns}[1] is True


def test_a_column_an_sku_left_may_be_a_second_price():
    """The rules took a column of prices as the SKU (a header one column off) and a column of
    counts under the price word as the price; once the model moves the SKU away, the prices it
    left read as a price too, so the price is in doubt."""
    probs = [
        {"description": 0.9},
        {"unit_price": 0.85},
        {"other": 1.0},
        {"sku": 0.9},
        {"unit_price": 0.63, "sku": 0.01, "other": 0.36},
    ]
    got = assignment({"description": 0, "unit_price": 1, "sku": 4}, doubted=("sku",), width=5)
    _take_model_columns(got, {"description": 0, "unit_price": 1, "sku": 3}, probs, [FULL] * 5)
    assert got.roles == {"description": 0, "unit_price": 1, "sku": 3}
    assert got.doubted["unit_price"][0] == 1
    assert "the column model reads column E as a price too" in got.doubts[-1]
    assert {c.col: c.needs_confirmation for c in got.columns}[1] is True


def test_a_rules_role_that_is_not_an_item_role_gives_way():
    got = assignment({"description": 0, "unit_price": 2, "quantity": 1}, doubted=("description",))
    _take_model_columns(got, {"description": 1, "unit_price": 2}, PROBS, [FULL] * 4)
    assert got.roles == {"description": 1, "unit_price": 2}


def test_the_column_a_price_left_may_hold_the_sku_no_column_holds():
    # The rules took a column of codes (A) as the price; the model moves the price to C. The
    # SKU no column holds is then in doubt on A, which the model reads as the SKU.
    probs = [{"sku": 0.6, "unit_price": 0.01}, {"description": 0.9}, {"unit_price": 0.58}, {"other": 1.0}]
    got = assignment({"unit_price": 0, "description": 1}, doubted=("unit_price",))
    _take_model_columns(got, {"description": 1, "unit_price": 2, "sku": 0}, probs, [FULL] * 4)
    assert got.roles == {"unit_price": 2, "description": 1}
    assert got.doubted["sku"][0] == 0
    assert "column A may hold the sku" in got.doubts[-1]
    assert {c.col: c.needs_confirmation for c in got.columns}[0] is True


def test_a_quantity_column_and_a_column_in_the_rules_doubt_may_hold_an_absent_role():
    floor = load_model().rules_absent_floor["sku"]
    probs = [{"sku": floor + 0.1}, {"description": 0.9}, {"unit_price": 0.9}]
    columns = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"quantity": 0, "description": 1, "unit_price": 2}, columns=columns, doubts=[])
    assert _rules_absences(rules, probs)["sku"][0] == 0
    rules = Assignment(roles={"unit_price": 0, "description": 1}, columns=columns, doubts=[])
    assert "sku" not in _rules_absences(rules, probs)
    assert _rules_absences(rules, probs, in_doubt={0})["sku"][0] == 0


def test_a_name_column_the_rules_did_not_find_is_taken_from_the_model_in_doubt():
    probs = [{"description": 0.6}, {"unit_price": 0.5}, {"unit": 0.9}, {"other": 1.0}]
    got = assignment({"unit_price": 1}, doubted=())
    got.doubted["description"] = (0, "column A may hold the description (0.60); none was taken")
    got.doubts.append(got.doubted["description"][1])
    _take_model_names(got, {"description": 0, "unit_price": 1}, probs)
    assert got.roles == {"unit_price": 1, "description": 0}
    assert got.moved == ["description"]
    assert got.doubts == [
        "column A was taken as the description by the column model (0.60); the rules found no column naming the items"
    ]
    assert {c.col: (c.role, c.needs_confirmation) for c in got.columns}[0] == ("description", True)


def test_the_model_takes_no_name_when_the_rules_have_one_or_no_price():
    for roles in ({"unit_price": 1, "sku": 3}, {"sku": 3}):
        got = assignment(roles, doubted=())
        _take_model_names(got, {"description": 0, "unit_price": 1}, PROBS)
        assert got.roles == roles


def test_a_sheet_without_a_header_reads_absences_from_the_floors_fitted_without_headers():
    model = load_model()
    headed, headless = model.rules_absent_floor["sku"], model.rules_absent_floor_headless["sku"]
    assert headless < headed  # fitted: without a header, a free column of codes is less sure to read as one
    probs = [{"sku": (headed + headless) / 2}, {"description": 0.9}, {"unit_price": 0.9}]
    columns = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"description": 1, "unit_price": 2}, columns=columns, doubts=[])
    assert "sku" not in _rules_absences(rules, probs)
    assert _rules_absences(rules, probs, unnamed={0, 1, 2})["sku"][0] == 0


def test_on_a_sheet_without_a_header_row_any_free_column_that_may_hold_the_sku_puts_it_in_doubt():
    """A reviewer confirms such a sheet's columns anyway; the SKU is in doubt below the floor too,
    and only the SKU (a unit or a pack size keeps its floor)."""
    headless = load_model().rules_absent_floor_headless
    probs = [
        {"sku": headless["sku"] / 2, "unit": headless["unit"] / 2},
        {"description": 0.9},
        {"unit_price": 0.9},
    ]
    columns = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"description": 1, "unit_price": 2}, columns=columns, doubts=[])
    assert not _rules_absences(rules, probs, unnamed={0, 1, 2})
    got = _rules_absences(rules, probs, unnamed={0, 1, 2}, bare=True)
    assert set(got) == {"sku"} and got["sku"][0] == 0
    rules = Assignment(roles={"description": 1, "unit_price": 2}, columns=columns[1:], doubts=[])
    assert not _rules_absences(rules, probs, unnamed={0, 1, 2}, bare=True)  # no free column


def test_a_column_whose_header_names_nothing_known_reads_from_the_floors_fitted_without_headers():
    """The floor follows the column: another column's known header word tells nothing about it."""
    model = load_model()
    headed, headless = model.rules_absent_floor["sku"], model.rules_absent_floor_headless["sku"]
    probs = [{"sku": (headed + headless) / 2}, {"sku": (headed + headless) / 2}, {"unit_price": 0.9}]
    columns = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"unit_price": 2}, columns=columns, doubts=[])
    assert _rules_absences(rules, probs, unnamed={1})["sku"][0] == 1
    assert "sku" not in _rules_absences(rules, probs, unnamed={2})


def test_a_price_column_the_rules_did_not_find_is_taken_from_the_model_in_doubt():
    probs = [{"description": 0.9}, {"unit_price": 0.7}, {"other": 1.0}, {"other": 1.0}]
    got = assignment({"description": 0, "quantity": 1}, doubted=())
    _take_model_price(got, {"description": 0, "unit_price": 1}, probs)
    assert got.roles == {"description": 0, "unit_price": 1}
    assert got.moved == ["unit_price"]
    assert got.doubts == [
        "column B was taken as the unit price by the column model (0.70); the rules found no price column"
    ]
    assert {c.col: (c.role, c.needs_confirmation) for c in got.columns}[1] == ("unit_price", True)


def test_the_model_takes_no_price_onto_an_item_role_or_when_the_rules_have_one():
    for roles in ({"description": 0, "unit_price": 2}, {"description": 1}):
        got = assignment(roles, doubted=())
        _take_model_price(got, {"description": 0, "unit_price": 1}, PROBS)
        assert got.roles == roles and got.moved == []


def test_a_header_that_names_no_price_lets_the_model_take_the_price():
    """Prices written as text under no price word (no header, words no one knows, a region's
    name over each price column): the sheet goes to review with the model's price column in
    doubt, not refused, since nothing says it holds no prices."""
    from catalog.extraction import rules_columns

    body = [[f"Gear wheel {i}", f"IDR. {150 + i}.500.000"] for i in range(12)]
    for labels in (["", ""], ["qzxv", "bdfgh"], ["Product", "Remark"]):
        rules = rules_columns.assign_roles(rules_columns.profile_columns(body, 2), labels)
        assert "unit_price" not in rules.roles
        got = second_opinion(rules, body, 2, labels)
        assert got.roles["unit_price"] == 1, labels
        assert "unit_price" in got.doubted, labels


def test_only_a_price_word_over_values_says_where_the_prices_are():
    from catalog.extraction.columns import _price_named_over_values

    filled, empty = {"filled": 1.0}, {"filled": 0.0}
    assert _price_named_over_values(["Product", "Price"], [filled, filled])
    assert not _price_named_over_values(["Product", "Price"], [filled, empty])  # a header off its values
    assert not _price_named_over_values(["Product", "Price"], [filled])  # a word over no column
    assert not _price_named_over_values(["Product", "Remark"], [filled, filled])


NAME = {"description": 0.9, "other": 0.1}
PRICE = {"unit_price": 0.55, "alt_price": 0.35, "other": 0.1}


def test_the_only_price_column_is_as_sure_a_unit_price_as_it_is_a_price():
    # The empty column reads as nothing.
    assert agreement([NAME, PRICE, None], 1, "unit_price") == pytest.approx(0.9)
    assert agreement([NAME, PRICE], 0, "description") == 0.9
    assert agreement([NAME, PRICE, None], 2, "unit_price") == 0.0  # an empty column agrees with nothing


def test_beside_another_price_column_the_unit_price_is_only_as_sure_as_its_own_probability():
    assert agreement([NAME, PRICE, PRICE], 1, "unit_price") == 0.55
    other_price = {"alt_price": 0.6, "unit_price": 0.3, "other": 0.1}
    assert agreement([NAME, other_price, PRICE], 1, "unit_price") == 0.0  # read as the other price
    assert agreement([NAME, other_price], 1, "unit_price") == pytest.approx(0.9)  # alone, the price
    assert agreement([NAME, PRICE], 1, "alt_price") == 0.0  # only the unit price is read as a price at all


CODES = [[str(i), f"IPC-HDW{1230 + i}C-A", f"{500 + 10 * i}.00"] for i in range(1, 13)]
CODES[3][1] += " (PoE)"  # a note after the code: the first word is still a code


def names(roles: dict[str, int], width: int = 3) -> Assignment:
    columns = [Column(c, "", "other", 0.5, kind="other") for c in range(width)]
    return Assignment(roles=dict(roles), columns=columns, doubts=[])


def test_the_only_name_column_holding_codes_is_in_doubt_unless_its_header_names_its_role():
    for role in ("description", "sku"):
        rules = names({role: 1, "unit_price": 2})
        got = _code_names(rules, CODES, ["", "", ""], {})
        assert got[role][0] == 1 and "SKUs or names" in got[role][1]
        assert _code_names(rules, CODES, ["", "Code" if role == "sku" else "Name", "Price"], {}) == {}


def test_words_a_second_confident_name_or_a_role_already_in_doubt_raise_no_code_doubt():
    words = [[r[0], f"Brass valve {r[0]} inch", r[2]] for r in CODES]
    assert _code_names(names({"description": 1, "unit_price": 2}), words, [""] * 3, {}) == {}
    both = names({"sku": 0, "description": 1, "unit_price": 2})
    assert _code_names(both, CODES, [""] * 3, {}) == {}
    # The other name taken in doubt (numbers read as codes) leaves this one the only sure name.
    assert "description" in _code_names(both, CODES, [""] * 3, {"sku": (0, "why")})
    assert _code_names(both, CODES, [""] * 3, {"description": (1, "why")}) == {}


def test_a_column_the_model_reads_as_another_role_may_hold_the_role_no_column_holds(monkeypatch):
    """The rules took a column of codes as the price under a title read as its header; the model
    reads it as the SKU, which no column holds: the SKU is in doubt on that column, read with the
    floor fitted on the columns the rules leave free."""
    from catalog.extraction import columns as module

    probs = [{"sku": 0.9, "unit_price": 0.02, "other": 0.08}, {"description": 0.95}, {"other": 1.0}]
    monkeypatch.setattr(module, "column_probabilities", lambda *a, **k: [(p, {}, dict(FULL)) for p in probs])
    cols = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"unit_price": 0, "description": 1}, columns=cols, doubts=[])
    got = second_opinion(rules, [["1"] * 3], 3, ["Prices of the week", "Name", ""])
    assert got.doubted["sku"] == (0, "column A may hold the sku (0.90); none was taken")
    assert got.doubted["unit_price"][0] == 0
    assert {c.col: c.needs_confirmation for c in got.columns}[0] is True


def use_model(monkeypatch, model) -> None:
    """``model`` read as the column model by the columns and the header words."""
    from catalog.extraction import columns, headers

    for module in (columns, headers):
        monkeypatch.setattr(module, "load_model", lambda: model)


def test_only_a_header_word_the_development_part_backs_lowers_the_bar_of_the_models_agreement(monkeypatch):
    """A word of the rules' dictionary that the model file does not keep as backed still names
    its role for the rules, but the model must then agree as surely as under a header that
    names nothing; a model fitted before it kept the backed words reads every word."""
    import dataclasses

    from catalog.extraction import columns as module
    from catalog.extraction.headers import classify_header

    model = load_model()
    use_model(monkeypatch, dataclasses.replace(model, backed_words=(("sku", ("sku",)),)))
    assert classify_header("Artikelnummer") == ("sku", 2)
    assert module.header_names("SKU", "sku") and not module.header_names("Artikelnummer", "sku")
    assert not module.header_names("Code", "sku")  # backed in the project's model, not in this one
    assert module.agreement_threshold("Artikelnummer", "sku") == model.agree_threshold
    assert module.agreement_threshold("SKU", "sku") == model.agree_named_threshold
    use_model(monkeypatch, dataclasses.replace(model, backed_words=None))
    assert module.header_names("Artikelnummer", "sku")


def test_a_header_word_the_development_part_does_not_back_reads_absences_as_no_header(monkeypatch):
    """A free column under a dictionary word the model file does not keep as backed (and the
    model does not know) is read with the floors fitted without headers, as under no header."""
    import dataclasses

    from catalog.extraction import columns as module

    model = load_model()
    headed, headless = model.rules_absent_floor["sku"], model.rules_absent_floor_headless["sku"]
    probs = [{"sku": (headed + headless) / 2, "other": 0.5}, {"description": 0.95}, {"unit_price": 0.95}]
    monkeypatch.setattr(module, "column_probabilities", lambda *a, **k: [(p, {}, dict(FULL)) for p in probs])
    cols = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"description": 1, "unit_price": 2}, columns=cols, doubts=[])
    labels = ["Menge", "Name", "Price"]
    assert not model.knows("Menge")
    use_model(monkeypatch, dataclasses.replace(model, backed_words=None))
    assert "sku" not in module.second_opinion(rules, [["1"] * 3], 3, labels).doubted
    narrow = (("desc", ("name",)), ("price", ("price",)))
    use_model(monkeypatch, dataclasses.replace(model, backed_words=narrow))
    assert module.second_opinion(rules, [["1"] * 3], 3, labels).doubted["sku"][0] == 0


def test_a_role_the_model_reads_alike_but_not_surely_enough_says_the_bar_it_missed(monkeypatch):
    from catalog.extraction import columns as module

    probs = [{"sku": 0.8, "other": 0.2}, {"description": 0.99}, {"unit_price": 0.99}]
    monkeypatch.setattr(module, "column_probabilities", lambda *a, **k: [(p, {}, dict(FULL)) for p in probs])
    cols = [Column(c, "", "other", 0.5, kind="other") for c in range(3)]
    rules = Assignment(roles={"sku": 0, "description": 1, "unit_price": 2}, columns=cols, doubts=[])
    got = module.second_opinion(rules, [["1"] * 3], 3, ["", "Name", "Price"])
    bar = load_model().agree_threshold  # column A's header names nothing
    assert got.doubted == {
        "sku": (
            0,
            f"column A was taken as the sku; the column model reads it as sku (0.80), below the {bar:.2f} that confirms it",
        )
    }


def test_a_column_of_one_code_on_every_row_is_not_taken_but_may_hold_the_sku():
    """A constant column is no SKU, so the rules take none; but a short list can repeat one code
    on every row read, and the SKU no column holds is in doubt there, not on the column the
    model reads as the SKU only for want of it (columns._absence_readings)."""
    from catalog.extraction import rules_columns

    body = [["KR-20417", f"Wall paint white {n} l", f"{n * 3}.50"] for n in (1, 2, 5, 10, 20)]
    for labels in (["", "", ""], ["qzxv", "bdfgh", "prtk"]):
        rules = rules_columns.assign_roles(rules_columns.profile_columns(body, 3), labels)
        assert "sku" not in rules.roles
        got = second_opinion(rules, body, 3, labels)
        assert "sku" not in got.roles, labels
        col, why = got.doubted["sku"]
        assert col == 0 and why.startswith("column A may hold the sku"), labels
        assert {c.col: c.needs_confirmation for c in got.columns}[0] is True
