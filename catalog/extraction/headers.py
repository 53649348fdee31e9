"""Header words: what a column's label says about its role.

A label is evidence, never the whole answer: the column's values decide too
(``catalog.extraction.columns``), and a word missing from these lists never
makes a sheet "not an item list". Roles: ``sku``, ``description``, ``unit``,
``pack_size``, ``unit_price``, ``currency``, ``quantity``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from catalog.extraction.money import (
    AMBIGUOUS_RE,
    ISO_RE,
    PLAIN_NUMBER_RE,
    SYMBOL_RE,
    WORD_RE,
    ambiguous_currency_symbol,
    find_currencies,
)
from catalog.extraction.column_model import INFLECTION, inflection_stem, load_model
from catalog.extraction.text import fold

SKU_WORDS = (
    "sku",
    "sku id",
    "item code",
    "item no",
    "item nr",
    "item number",
    "item #",
    "item id",
    "article no",
    "article number",
    "art no",
    "art nr",
    "art.-nr",
    "art.-nr.",
    "art.nr",
    "artnr",
    "artikelnummer",
    "artikel-nr",
    "artikel-nr.",
    "artikelnr",
    "bestellnummer",
    "best.-nr",
    "code",
    "product code",
    "product id",
    "part number",
    "part no",
    "part #",
    "p/n",
    "pn",
    "reference",
    "ref",
    "réf",
    "ref.",
    "code article",
    "codigo",
    "código",
    "referencia",
    "cod",
    "codice",
    "codice articolo",
    "artikelcode",
    "artikel",
    "catalog number",
    "cat no",
    "артикул",
    "код",
    "код товара",
    "каталожный номер",
    "kod",
    "kod produktu",
    "indeks",
    "symbol",
    "numer katalogowy",
    "stok kodu",
    "urun kodu",
    "kodu",
    "ma hang",
    "mã hàng",
    "mã sp",
    "kode",
    "kode barang",
    "referência",
    "cód",
    "cód.",
    "kód",
    "katalogové číslo",
    "číslo zboží",
    "obj. číslo",
    "objednací číslo",
    "art",
    "art.",
    "clave",
    "sku code",
    "编号",
    "货号",
    "代码",
    "编码",
    "物料编码",
    "产品编号",
    "商品编号",
    "品番",
    "商品コード",
    "品目コード",
    "コード",
    "品號",
    "貨號",
)
# Barcode words (EAN, UPC, GTIN) name no SKU: every labeled development column under one is a
# barcode, beside the supplier's own code when the sheet has one.
SKU_WEAK_WORDS = (
    "model no",
    "модель",
    "mpn",
    "mfr part",
    "型号",
    "型番",
)
DESC_WORDS = (
    "description",
    "desc",
    "name",
    "product",
    "product name",
    "product description",
    "item name",
    "item description",
    "article",
    "designation",
    "désignation",
    "libellé",
    "bezeichnung",
    "artikelbezeichnung",
    "beschreibung",
    "produkt",
    "produktname",
    "ware",
    "warenbezeichnung",
    "descripción",
    "descripcion",
    "nombre",
    "producto",
    "artículo",
    "descrizione",
    "nome",
    "prodotto",
    "articolo",
    "omschrijving",
    "naam",
    "наименование",
    "наименование товара",
    "название",
    "номенклатура",
    "товар",
    "продукция",
    "назва",
    "найменування",
    "опис",
    "nazwa",
    "opis",
    "towar",
    "açıklama",
    "ürün",
    "ürün adı",
    "malzeme",
    "услуга",
    "услуги",
    "препарат",
    "component",
    "tên",
    "tên hàng",
    "mô tả",
    "nama",
    "nama barang",
    "deskripsi",
    "title",
    "nom",
    "produit",
    "descrição",
    "designação",
    "produto",
    "název",
    "popis",
    "zboží",
    "položka",
    "denominación",
    "品名",
    "名称",
    "产品名称",
    "商品名称",
    "描述",
    "说明",
    "商品名",
    "品目",
    "説明",
    "摘要",
    "名稱",
    "品項",
)
# Name-like columns that name someone else, not the item.
DESC_NOT_WORDS = (
    "shop name",
    "shop",
    "store",
    "supplier",
    "vendor",
    "brand",
    "manufacturer",
    "customer",
    "company",
    "city",
    "country",
    "страна",
    "город",
    "производитель",
    "поставщик",
    "бренд",
    "hersteller",
    "lieferant",
    "herkunft",
    "marca",
    "marcas",
    "marque",
    "fabricante",
    "výrobce",
    "značka",
    "品牌",
    "厂家",
    "メーカー",
    "ブランド",
)
DESC_WEAK_WORDS = (
    "category name",
    "kategorie",
    "группа",
    "тип",
    "kategorie",
    "类别",
    "分类",
    "カテゴリ",
)
PRICE_WORDS = (
    "price",
    "prices",
    "unit price",
    "unitprice",
    "list price",
    "listprice",
    "sale price",
    "selling price",
    "retail price",
    "net price",
    "rate",
    "cost",
    "unit cost",
    "preis",
    "preise",
    "einzelpreis",
    "listenpreis",
    "stückpreis",
    "vk",
    "vk-preis",
    "vk preis",
    "ek-preis",
    "nettopreis",
    "prix",
    "prix unitaire",
    "prix ht",
    "tarif",
    "precio",
    "precio unitario",
    "prezzo",
    "prezzo unitario",
    "prijs",
    "stukprijs",
    "цена",
    "цены",
    "стоимость",
    "ціна",
    "вартість",
    "cena",
    "cena netto",
    "cena brutto",
    "cena jedn.",
    "fiyat",
    "fiyatı",
    "liste fiyatı",
    "birim fiyat",
    "giá",
    "đơn giá",
    "harga",
    "presyo",
    "preço",
    "preço unitário",
    "valor unitário",
    "pvp",
    "p.v.p",
    "pvp.",
    "cena bez dph",
    "cena s dph",
    "jednotková cena",
    "单价",
    "价格",
    "售价",
    "零售价",
    "报价",
    "単価",
    "価格",
    "定価",
    "売価",
    "價格",
    "單價",
)
PRICE_STRONG_WORDS = (
    "unit price",
    "unitprice",
    "list price",
    "listprice",
    "einzelpreis",
    "listenpreis",
    "stückpreis",
    "prix unitaire",
    "precio unitario",
    "prezzo unitario",
    "stukprijs",
    "liste fiyatı",
    "birim fiyat",
    "đơn giá",
    "розница",
    "розничная",
    "роздріб",
    "retail",
    "cena jedn.",
    "price_unit",
    "preço unitário",
    "valor unitário",
    "jednotková cena",
    "单价",
    "単価",
    "單價",
)
PRICE_SECONDARY_WORDS = (
    "опт",
    "оптовая",
    "wholesale",
    "bulk",
    "dealer",
    "händler",
    "мелкий опт",
    "vip",
    "old",
    "alt",
    "previous",
    "прежняя",
    "старая",
    "批发价",
    "卸価格",
    "atacado",
    "mayorista",
)
# A price column with these words is not the unit price (totals, discounts, statistics).
PRICE_NOT_WORDS = (
    "extended",
    "ext",
    "total",
    "totals",
    "sum",
    "summe",
    "gesamt",
    "gesamtpreis",
    "amount",
    "subtotal",
    "итого",
    "сумма",
    "всего",
    "razem",
    "suma",
    "wartość",
    "toplam",
    "tutar",
    "montant",
    "importe",
    "importo",
    "bedrag",
    "discount",
    "rabatt",
    "remise",
    "descuento",
    "sconto",
    "korting",
    "скидка",
    "знижка",
    "rabat",
    "indirim",
    "commission",
    "margin",
    "marge",
    "min",
    "min.",
    "max",
    "max.",
    "мин",
    "мин.",
    "макс",
    "макс.",
    "average",
    "avg",
    "median",
    "средняя",
    "медиана",
    "mean",
    "чаще",
    "%",
    "celkem",
    "desconto",
    "合计",
    "总计",
    "金额",
    "合計",
    "金額",
    "折扣",
    "値引",
)
UNIT_WORDS = (
    "unit",
    "units",
    "uom",
    "u/m",
    "unit of measure",
    "unit of measurement",
    "measure",
    "einheit",
    "me",
    "mengeneinheit",
    "je",
    "unité",
    "unite",
    "unidad",
    "unità",
    "eenheid",
    "ед",
    "ед.",
    "ед. изм",
    "ед. изм.",
    "ед.изм",
    "ед.изм.",
    "единица",
    "единица измерения",
    "од",
    "од.",
    "од. вим",
    "од. вим.",
    "одиниця",
    "jm",
    "j.m.",
    "jednostka",
    "birim",
    "đvt",
    "dvt",
    "satuan",
    "per",
    "unidade",
    "und",
    "un",
    "ud",
    "uds",
    "jednotka",
    "mj",
    "m.j.",
    "单位",
    "単位",
    "單位",
)
PACK_WORDS = (
    "pack",
    "pack size",
    "package",
    "packing",
    "packaging",
    "case qty",
    "case pack",
    "qty/case",
    "qty per case",
    "pack qty",
    "inner",
    "ve",
    "vpe",
    "verpackungseinheit",
    "verpackung",
    "gebinde",
    "colisage",
    "conditionnement",
    "embalaje",
    "empaque",
    "confezione",
    "imballo",
    "verpakking",
    "упаковка",
    "в упаковке",
    "фасовка",
    "кратность",
    "упак",
    "пакування",
    "opakowanie",
    "ambalaj",
    "koli",
    "embalagem",
    "balení",
    "包装",
    "装箱数",
    "入数",
    "梱包",
)
CURRENCY_WORDS = (
    "currency",
    "curr",
    "cur",
    "ccy",
    "währung",
    "waehrung",
    "devise",
    "moneda",
    "divisa",
    "valuta",
    "munt",
    "валюта",
    "waluta",
    "para birimi",
    "döviz",
    "moeda",
    "měna",
    "币种",
    "货币",
    "通貨",
    "幣別",
)
QUANTITY_WORDS = (
    "qty",
    "quantity",
    "stock",
    "on hand",
    "available",
    "availability",
    "menge",
    "bestand",
    "lager",
    "cantidad",
    "existencia",
    "existencias",
    "quantité",
    "quantite",
    "quantità",
    "giacenza",
    "количество",
    "остаток",
    "наличие",
    "кількість",
    "залишок",
    "ilość",
    "stan",
    "miktar",
    "stok",
    "số lượng",
    "tồn kho",
    "moq",
    "min order",
    "quantidade",
    "qtd",
    "estoque",
    "množství",
    "sklad",
    "数量",
    "库存",
    "在庫",
    "庫存",
    "weight",
    "gewicht",
    "вес",
    "peso",
    "hmotnost",
    "waga",
)
TOTAL_ROW_WORDS = (
    "total",
    "subtotal",
    "итого",
    "всего",
    "summe",
    "gesamt",
    "razem",
    "toplam",
    "suma",
    "celkem",
    "合计",
    "总计",
    "合計",
    "totale",
    "totaal",
)
STATISTIC_WORDS = (
    "min",
    "max",
    "average",
    "avg",
    "median",
    "mean",
    "count",
    "std",
    "percentile",
    "минимальная",
    "максимальная",
    "средняя",
    "медиана",
    "число",
    "количество цен",
)
_VAT_WORDS = (
    "без пдв",
    "з пдв",
    "без ндс",
    "с ндс",
    "excl. vat",
    "excl vat",
    "incl. vat",
    "incl vat",
    "ex vat",
    "netto",
    "brutto",
    "ohne mwst",
    "inkl. mwst",
    "ht",
    "ttc",
    "bez dph",
    "s dph",
    "kdv hariç",
    "kdv dahil",
    "net",
    "gross",
    "sem iva",
    "con iva",
    "sin iva",
    "iva incluido",
)


def _is_cjk(text: str) -> bool:
    return any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in text)


_LATIN_END = re.compile(r"[a-z]$")


def _inflected(word: str) -> str:
    """A phrase also matches its plurals and simple inflections, as the column model's header
    words are normalized (``column_model.inflection_stem``): its last word's stem, then an
    ending of the letters stems drop, at most two letters longer than the one the word dropped
    ("prezzo" also "prezzi", "quantity" also "quantities", "precio" also "precios" but not
    "precieuse", "товар" also "товары", "наименование" also "наименования"). Unbounded, such
    endings named roles only in sentences and titles on the corpus ("précieuse", "pessoas").
    A last word of three letters or fewer, or not all letters, matches its plural in -s or
    -es ("eans", "codes")."""
    last = word.rpartition(" ")[2]
    if len(last) > 3 and last.isalpha():
        stem = inflection_stem(last)
        ending = len(last) - len(stem) + 2
        return re.escape(word[: len(word) - len(last)] + stem) + f"[{INFLECTION}]{{0,{ending}}}+"
    return re.escape(word) + ("(?:e?s)?" if _LATIN_END.search(word) else "")


def phrases(words) -> re.Pattern:
    """Whole-word match of alphabetic phrases (and their plurals in -s and -es); CJK phrases match
    as substrings."""
    latin = sorted({_inflected(fold(w)) for w in words if not _is_cjk(w)}, key=len, reverse=True)
    cjk = sorted({re.escape(fold(w)) for w in words if _is_cjk(w)}, key=len, reverse=True)
    parts = [r"(?<![\w])(?:" + "|".join(latin) + r")(?![\w])"] if latin else []
    if cjk:
        parts.append("(?:" + "|".join(cjk) + ")")
    return re.compile("|".join(parts) or "(?!)")  # no words: a pattern that never matches


# Every word list by the name its pattern goes by in ``RE``.
VOCABULARY = {
    "sku": SKU_WORDS,
    "sku_weak": SKU_WEAK_WORDS,
    "desc": DESC_WORDS,
    "desc_weak": DESC_WEAK_WORDS,
    "desc_not": DESC_NOT_WORDS,
    "price": PRICE_WORDS,
    "price_strong": PRICE_STRONG_WORDS,
    "price_secondary": PRICE_SECONDARY_WORDS,
    "price_not": PRICE_NOT_WORDS,
    "unit": UNIT_WORDS,
    "pack": PACK_WORDS,
    "currency": CURRENCY_WORDS,
    "quantity": QUANTITY_WORDS,
    "total_row": TOTAL_ROW_WORDS,
    "statistic": STATISTIC_WORDS,
    "vat": _VAT_WORDS,
}


@dataclass(frozen=True)
class Patterns:
    """A vocabulary compiled: one pattern per word list (``lists``, by its name in
    ``VOCABULARY``) and the long words that also match inside a longer token, by role."""

    lists: dict[str, re.Pattern]
    long_words: dict[str, list[str]]


_LONG_LISTS = {"description": "desc", "sku": "sku", "unit_price": "price", "quantity": "quantity"}


def compile_vocabulary(vocabulary: dict[str, tuple[str, ...]]) -> Patterns:
    """``vocabulary`` (lists by their names in ``VOCABULARY``; a list it lacks matches nothing)
    compiled for ``classify_header``."""
    return Patterns(
        lists={name: phrases(vocabulary.get(name, ())) for name in VOCABULARY},
        long_words={
            role: [fold(w) for w in vocabulary.get(name, ()) if len(w) >= 6 and not _is_cjk(w)]
            for role, name in _LONG_LISTS.items()
        },
    )


RE: dict[str, re.Pattern] = {}
# Long words also match inside a longer token ("Artikelbezeichnung"), by role.
_LONG_WORDS: dict[str, list[str]] = {}
# The whole vocabulary: these very dicts, which ``use_vocabulary`` fills.
ALL_WORDS = Patterns(RE, _LONG_WORDS)


def use_vocabulary(vocabulary: dict[str, tuple[str, ...]]) -> None:
    """Compile ``RE`` (and the long words) from ``vocabulary``, in place: the
    extractor's modules hold these very dicts. ``bench/corpus/vocabulary.py``
    scores the corpus with a smaller vocabulary through it."""
    compiled = compile_vocabulary(vocabulary)
    RE.clear()
    RE.update(compiled.lists)
    _LONG_WORDS.clear()
    _LONG_WORDS.update(compiled.long_words)


use_vocabulary(VOCABULARY)


@functools.lru_cache(maxsize=4)
def _compiled(words: tuple[tuple[str, tuple[str, ...]], ...]) -> Patterns:
    return compile_vocabulary(dict(words))


def backed_words() -> Patterns:
    """The words the development part backs, as ``make train`` kept them in the column model
    (``backed_words``: in the headers of their role in two files or more); the whole vocabulary
    with a model fitted before it kept them. A word outside them still proposes a role, but
    lowers no bar of the model's agreement and counts as no header for the floors of absent
    roles (``columns``)."""
    words = load_model().backed_words
    return ALL_WORDS if words is None else _compiled(words)


HEADER_CELL_MAX = 80  # a header label is short; long text is a title or a note
_WORD_SPLIT = re.compile(r"[^\w]++")


def is_currency_only(text: str, patterns: Patterns = ALL_WORDS) -> bool:
    """ " € без ПДВ", "руб.", "Euro": a label that is only a currency (and VAT words)."""
    if not (find_currencies(text) or ambiguous_currency_symbol(text)):
        return False
    rest = SYMBOL_RE.sub(" ", text)
    rest = ISO_RE.sub(" ", rest)
    rest = AMBIGUOUS_RE.sub(" ", rest)
    rest = WORD_RE.sub(" ", fold(rest))
    rest = patterns.lists["vat"].sub(" ", rest)
    return not any(ch.isalnum() for ch in rest)


def _price_strength(f: str, words: dict[str, re.Pattern]) -> int:
    if words["price_strong"].search(f):
        return 3
    if words["price_secondary"].search(f):
        return 1
    return 2


def _name_or_code(f: str, words: dict[str, re.Pattern]) -> tuple[str, int] | None:
    if words["desc_weak"].search(f) and not re.search(r"description|наименование|назва", f):
        return "description", 1
    sku, desc = words["sku"].search(f), words["desc"].search(f)
    if sku and desc:
        # "Item description" is a description, "Item code"/"Product code" a SKU.
        return ("description", 2) if len(desc.group(0)) > len(sku.group(0)) else ("sku", 2)
    if sku:
        return "sku", 2
    if desc:
        return "description", 2
    if words["sku_weak"].search(f):
        return "sku", 1
    return None


def classify_header(text: str, patterns: Patterns = ALL_WORDS) -> tuple[str, int] | None:
    """(role, strength) a header cell names, or None. Strength ranks columns of one role.
    ``patterns``: the words read (default the whole vocabulary)."""
    if not text or len(text) > HEADER_CELL_MAX:
        return None
    f = fold(text)
    if not f or PLAIN_NUMBER_RE.fullmatch(f):
        return None
    words = patterns.lists
    if words["price"].search(f):
        return None if words["price_not"].search(f) else ("unit_price", _price_strength(f, words))
    if is_currency_only(text, patterns):
        return "unit_price", 1  # a price column labelled by its currency
    checks = (
        ("currency", words["currency"].fullmatch),
        ("pack_size", words["pack"].search),
        ("quantity", words["quantity"].search),
    )
    for role, test in checks:
        if test(f):
            return role, 2
    if words["unit"].fullmatch(f.rstrip(":")) or (words["unit"].match(f) and len(f) <= 20):
        return "unit", 2
    if words["desc_not"].search(f):
        return None
    return _name_or_code(f, words) or _truncated(f, patterns.long_words)


def _truncated(f: str, long_words: dict[str, list[str]]) -> tuple[str, int] | None:
    """A label cut short ("DESCRIP", "QUANT"): weak evidence for the word it begins."""
    for word in _WORD_SPLIT.split(f):
        if len(word) < 5:
            continue
        for role, longs in long_words.items():
            if any(w.startswith(word) and w != word for w in longs):
                return role, 1
    return None


def header_says_not(text: str, role: str) -> bool:
    """True when the label rules ``role`` out (a brand column for a description...)."""
    if not text or len(text) > HEADER_CELL_MAX:
        return False
    f = fold(text)
    if role == "description":
        return bool(RE["desc_not"].search(f))
    if role == "unit_price":
        return bool(RE["price_not"].search(f) or RE["quantity"].search(f))
    return False
