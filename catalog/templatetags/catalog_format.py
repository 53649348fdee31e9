"""Number formats of the catalog pages, the same as the exports use."""

from django import template

from catalog.export import item_price_text, number_text, price_text

register = template.Library()


@register.filter
def price(value, places=None) -> str:
    """A published price with the decimals the supplier gave: 12.500000 with
    places 2 -> "12.50"; without places, at least two."""
    return price_text(value, places)


@register.filter
def item_price(item) -> str:
    """An extracted item's price (a dict of the job's output), shown the same way."""
    return item_price_text(item)


@register.filter
def number(value) -> str:
    """12.000 -> "12", None -> ""."""
    return number_text(value)


@register.inclusion_tag("catalog/_set_mark.html")
def set_mark(item, name: str) -> dict:
    """The mark beside a value a reviewer set: who and when, also for screen readers."""
    entry = (item.provenance or {}).get(name) if isinstance(item.provenance, dict) else None
    return {"entry": entry if isinstance(entry, dict) else None}
