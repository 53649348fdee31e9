"""Number formats of the catalog pages, the same as the exports use."""

from django import template

from catalog.export import number_text, price_text

register = template.Library()


@register.filter
def price(value) -> str:
    """12.500000 -> "12.50", 0.125000 -> "0.125"."""
    return price_text(value)


@register.filter
def number(value) -> str:
    """12.000 -> "12", None -> ""."""
    return number_text(value)
