"""A role in doubt that the column model gives to another column is taken from the model's
column, still in doubt (columns._take_model_columns)."""

from catalog.extraction.assignment import Assignment, Column
from catalog.extraction.columns import _take_model_columns


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


def test_a_rules_role_that_is_not_an_item_role_gives_way():
    got = assignment({"description": 0, "unit_price": 2, "quantity": 1}, doubted=("description",))
    _take_model_columns(got, {"description": 1, "unit_price": 2}, PROBS, [FULL] * 4)
    assert got.roles == {"description": 1, "unit_price": 2}
