"""`jobs` is a library: it knows nothing of the product above it, and a job
kind is registered once."""

import re
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from jobs import registry

ROOT = Path(__file__).resolve().parents[2]
# Where the job machinery lives: its package and its own templates.
LIBRARY = [
    ROOT / "jobs",
    ROOT / "templates" / "admin" / "jobs",
    ROOT / "templates" / "ops",
    ROOT / "templates" / "api",
]

# A word that starts with one of these stems is the product's vocabulary
# ("concurrency" and "occurrence" are not: the stem must start the word).
STEMS = ("sku", "price", "sheet", "supplier", "catalog", "currenc", "extractor")
WORD = re.compile(r"(?<![a-z])(" + "|".join(STEMS) + ")", re.IGNORECASE)
# The product's own pages, by address or by URL name.
PRODUCT_PATHS = re.compile(r"""/(review|catalog)/|["'](review|catalog):""")


def _library_files() -> list[Path]:
    files = []
    for folder in LIBRARY:
        files += [
            p
            for p in folder.rglob("*")
            if p.suffix in (".py", ".html", ".txt") and "__pycache__" not in p.parts
        ]
    return sorted(files)


def vocabulary_in(text: str) -> list[str]:
    found = [m.group(0) for m in WORD.finditer(text)]
    found += [m.group(0) for m in PRODUCT_PATHS.finditer(text)]
    return found


def test_the_vocabulary_check_finds_product_words_and_passes_generic_ones():
    assert vocabulary_in('label = "SKU"; total_price = 1; PriceSheet; supplier_id') == [
        "SKU",
        "price",
        "Price",
        "supplier",
    ]
    assert vocabulary_in('f"/review/{job.pk}/"; reverse("review:detail")') == ["/review/", '"review:']
    assert vocabulary_in("concurrency, occurrence, awaiting_review, job.review_required") == []


def test_no_product_vocabulary_in_the_job_library():
    files = _library_files()
    assert any(p.name == "services.py" for p in files)
    offending = [
        f"{path.relative_to(ROOT)}:{number}: {', '.join(words)}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (words := vocabulary_in(line))
    ]
    assert offending == []


def test_registering_a_kind_twice_is_an_error():
    def first(ctx):
        ctx.accept({})

    registry.register("twice")(first)
    try:
        with pytest.raises(registry.KindAlreadyRegistered) as raised:
            registry.register("twice")(lambda ctx: None)
        assert isinstance(raised.value, ImproperlyConfigured)
        assert registry.get_handler("twice") is first
    finally:
        registry.unregister("twice")
    assert registry.get_kind("twice") is None


def test_a_kind_of_an_installed_app_is_known_once_with_its_pieces():
    # The product's kind: registered by its app, with what the generic views need.
    kind = registry.get_kind("parse_sheet")
    assert kind is not None
    assert kind.status_fields and kind.items and kind.review_link and kind.admin_output
    with pytest.raises(registry.KindAlreadyRegistered):
        registry.register("parse_sheet")(lambda ctx: None)
    assert registry.get_kind("parse_sheet") is kind
