"""Reading CSV/TSV/XLSX into a Table: encodings, delimiters, limits, hostile files."""

import json
import zipfile

import openpyxl
import pytest

from catalog.errors import UnreadableSheet
from catalog.reading import ReadLimits, Sheet, Table, read_table
from tests.catalog.sheets import ENTITY_BOMB_SHEET, minimal_xlsx


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def xlsx(tmp_path, rows, name="sheet.xlsx", title="Prices", formats=None):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(row)
    for (r, c), fmt in (formats or {}).items():
        ws.cell(row=r, column=c).number_format = fmt
    path = tmp_path / name
    wb.save(path)
    return path


def test_utf8_csv_reads_rows_as_text(tmp_path):
    path = write(tmp_path, "a.csv", "SKU,Name,Price\nA1,Äpfel,1.50\n".encode())
    table = read_table(path, filename="a.csv")
    assert table.sheets == [Sheet(name="Sheet1", rows=[["SKU", "Name", "Price"], ["A1", "Äpfel", "1.50"]])]


def test_utf8_bom_is_removed(tmp_path):
    path = write(tmp_path, "a.csv", b"\xef\xbb\xbfSKU;Price\nA;1\n")
    assert read_table(path, filename="a.csv").sheets[0].rows[0] == ["SKU", "Price"]


def test_cp1251_csv_is_detected(tmp_path):
    text = "Код;Наименование;Цена\n768;Бананы свежие из Эквадора;88.00\n778;Киви зелёные;130.90\n"
    path = write(tmp_path, "ru.csv", text.encode("cp1251"))
    rows = read_table(path, filename="ru.csv").sheets[0].rows
    assert rows[1] == ["768", "Бананы свежие из Эквадора", "88.00"]


def test_cp1252_csv_is_detected(tmp_path):
    text = "Artikel;Bezeichnung;Preis\n1;Größe L Äpfel süß;1,50 €\n"
    path = write(tmp_path, "de.csv", text.encode("cp1252"))
    rows = read_table(path, filename="de.csv").sheets[0].rows
    assert rows[1] == ["1", "Größe L Äpfel süß", "1,50 €"]


@pytest.mark.parametrize(
    ("encoding", "rows"),
    [
        (
            "cp949",
            [
                ["품번", "품명", "단가"],
                ["K-01", "스테인리스 볼트 10mm", "1500"],
                ["K-02", "육각 너트", "320"],
            ],
        ),
        (
            "gb18030",
            [["编号", "品名", "单价"], ["Z-01", "不锈钢螺栓 10毫米", "1.50"], ["Z-02", "六角螺母", "0.32"]],
        ),
        ("cp950", [["編號", "品名", "單價"], ["T-01", "不鏽鋼螺栓 10毫米", "15"], ["T-02", "六角螺帽", "3"]]),
        (
            "cp932",
            [
                ["品番", "品名", "単価"],
                ["J-01", "ステンレスボルト 10mm", "150"],
                ["J-02", "六角ナット", "32"],
            ],
        ),
    ],
)
def test_east_asian_code_pages_are_detected(tmp_path, encoding, rows):
    """A spreadsheet saved as CSV on a Korean, Chinese or Japanese Windows."""
    body = rows + [[f"{rows[1][0]}{n}", f"{rows[1][1]} {n}", rows[1][2]] for n in range(40)]
    text = "\n".join(",".join(r) for r in body) + "\n"
    path = write(tmp_path, "sheet.csv", text.encode(encoding))
    assert read_table(path, filename="sheet.csv").sheets[0].rows[:3] == rows


@pytest.mark.parametrize(
    ("encoding", "rows"),
    [
        (
            "cp1253",
            [
                ["Κωδικός", "Περιγραφή", "Τιμή"],
                ["G-01", "Βίδα ανοξείδωτη", "1,50"],
                ["G-02", "Παξιμάδι", "0,32"],
            ],
        ),
        ("cp1255", [["קוד", "תיאור", "מחיר"], ["H-01", "בורג נירוסטה", "15"], ["H-02", "אום משושה", "3"]]),
        (
            "cp1256",
            [["الرمز", "الوصف", "السعر"], ["A-01", "برغي فولاذ", "15"], ["A-02", "صامولة سداسية", "3"]],
        ),
        ("cp874", [["รหัส", "รายการ", "ราคา"], ["T-01", "สกรูสแตนเลส", "15"], ["T-02", "น็อตหกเหลี่ยม", "3"]]),
        (
            "cp1257",
            [
                ["Kodas", "Aprašymas", "Kaina"],
                ["L-01", "Varžtas nerūdijantis", "1,50"],
                ["L-02", "Veržlė", "0,32"],
            ],
        ),
        (
            "cp1254",
            [
                ["Kod", "Açıklama", "Fiyat"],
                ["K-01", "PASLANMAZ CİVATA İNCE", "15"],
                ["K-02", "Altıgen somun", "3"],
            ],
        ),
        # "öß" is a Thai digit and the baht sign in cp874: signs inside a word, no letters.
        (
            "cp1252",
            [["Artikel", "Bezeichnung", "Preis"], ["D-01", "Größe Ø", "15"], ["D-02", "Größe Ø 8", "3"]],
        ),
        # "ö" is a Thai digit in cp874 and an Arabic mark in cp1256: inside a word, no letter.
        (
            "cp1252",
            [["Code", "Omschrijving", "Prijs"], ["N-01", "Wassen en föhnen", "15"], ["N-02", "Föhnen", "3"]],
        ),
    ],
)
def test_single_byte_code_pages_are_told_apart_by_their_language(tmp_path, encoding, rows):
    body = rows + [[f"{rows[1][0]}{n}", f"{rows[n % 2 + 1][1]} {n}", rows[1][2]] for n in range(40)]
    text = "\n".join(";".join(r) for r in body) + "\n"
    path = write(tmp_path, "sheet.csv", text.encode(encoding))
    assert read_table(path, filename="sheet.csv").sheets[0].rows[:3] == rows


@pytest.mark.parametrize("word", ["naïve", "Señor"])
def test_a_western_file_with_one_accented_word_is_not_read_as_chinese(tmp_path, word):
    # Its bytes decode in GB18030 too ("na鴳e"), and the detector prefers that reading.
    text = word + "\n" + "\n".join(f"SKU{n},Stainless bolt M{n % 20},{n}.37" for n in range(3000)) + "\n"
    path = write(tmp_path, "sheet.csv", text.encode("cp1252"))
    assert read_table(path, filename="sheet.csv").sheets[0].rows[0] == [word]


def test_a_stray_byte_after_the_sample_costs_one_character_not_the_file(tmp_path):
    from catalog.codepages import SAMPLE_BYTES

    words = ["편지", "봉투", "대형", "볼트", "너트", "스테인리스", "육각", "소형"]
    lines, size = [], 0
    while size <= SAMPLE_BYTES:
        n = len(lines)
        lines.append(f"{words[n % 8]} {words[n // 8 % 8]} {n},{500 + n}\n".encode("cp949"))
        size += len(lines[-1])
    data = b"".join(lines) + b"\x80,1\n"
    path = write(tmp_path, "sheet.csv", data)
    rows = read_table(path, filename="sheet.csv").sheets[0].rows
    assert rows[0] == ["편지 편지 0", "500"]
    assert rows[-1] == ["\ufffd", "1"]


def test_semicolon_delimiter_is_sniffed(tmp_path):
    path = write(tmp_path, "a.csv", b"SKU;Name;Price\nA;Apple, red;1,50\nB;Pear;2,00\n")
    assert read_table(path, filename="a.csv").sheets[0].rows[1] == ["A", "Apple, red", "1,50"]


def test_tsv_is_read_with_tabs(tmp_path):
    path = write(tmp_path, "a.tsv", b"SKU\tName\tPrice\nA\tApple, red\t1.50\n")
    assert read_table(path, filename="a.tsv").sheets[0].rows[1] == ["A", "Apple, red", "1.50"]


def test_trailing_empty_cells_and_rows_are_trimmed(tmp_path):
    path = write(tmp_path, "a.csv", b"SKU,Price,,\nA,1,,\n,,,\n")
    assert read_table(path, filename="a.csv").sheets[0].rows == [["SKU", "Price"], ["A", "1"]]


def test_empty_file_is_refused(tmp_path):
    path = write(tmp_path, "a.csv", b"")
    with pytest.raises(UnreadableSheet, match="empty"):
        read_table(path, filename="a.csv")


def test_text_named_xlsx_is_refused(tmp_path):
    path = write(tmp_path, "a.xlsx", b"SKU,Price\nA,1\n")
    with pytest.raises(UnreadableSheet, match="name says XLSX but the bytes are not"):
        read_table(path, filename="a.xlsx")


def test_png_named_csv_is_refused_naming_both(tmp_path):
    path = write(tmp_path, "a.csv", b"\x89PNG\r\n\x1a\n...")
    with pytest.raises(UnreadableSheet, match="PNG image.*name says CSV/TSV"):
        read_table(path, filename="a.csv")


def test_broken_pdf_named_csv_is_read_as_a_pdf(tmp_path):
    path = write(tmp_path, "a.csv", b"%PDF-1.4\n...")
    with pytest.raises(UnreadableSheet, match="^the PDF cannot be read"):
        read_table(path, filename="a.csv")


def test_broken_ole2_container_is_refused_as_a_damaged_xls(tmp_path):
    path = write(tmp_path, "a.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512)
    with pytest.raises(UnreadableSheet, match="^the XLS workbook cannot be read"):
        read_table(path, filename="a.xls")


def test_zip_that_is_not_a_workbook_is_refused(tmp_path):
    path = tmp_path / "a.xlsx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(UnreadableSheet, match="not an XLSX workbook"):
        read_table(path, filename="a.xlsx")


def test_xlsx_cells_are_display_text(tmp_path):
    path = xlsx(tmp_path, [["SKU", "Price", "Qty"], ["A1", 926.6400000000001, 3], ["B2", 12.0, None, "x"]])
    rows = read_table(path, filename="a.xlsx").sheets[0].rows
    assert rows == [["SKU", "Price", "Qty"], ["A1", "926.64", "3"], ["B2", "12", "", "x"]]


def test_xlsx_formula_uses_cached_value_only(tmp_path):
    # openpyxl writes no cached values, so a formula reads as empty, never as "=A1*2".
    path = xlsx(tmp_path, [["SKU", "Price"], ["A", "=1+1"]])
    assert read_table(path, filename="a.xlsx").sheets[0].rows[1] == ["A"]


def test_xlsx_reads_every_sheet_by_name(tmp_path):
    wb = openpyxl.Workbook()
    wb.active.title = "One"
    wb.active.append(["a"])
    wb.create_sheet("Two").append(["b"])
    path = tmp_path / "a.xlsx"
    wb.save(path)
    assert [s.name for s in read_table(path, filename="a.xlsx").sheets] == ["One", "Two"]


def test_xlsx_currency_number_format_is_kept_per_cell(tmp_path):
    path = xlsx(
        tmp_path,
        [["Name", "Price"], ["Tea", 8.99], ["Rice", 12.5], ["Salt", 1]],
        formats={(2, 2): '"£"#,##0.00', (3, 2): '"£"#,##0.00', (4, 2): "0.00"},
    )
    sheet = read_table(path, filename="a.xlsx").sheets[0]
    assert (sheet.format_currency(2, 1), sheet.format_currency(3, 1), sheet.format_currency(4, 1)) == (
        "GBP",
        "GBP",
        None,
    )


def test_xlsx_locale_dollar_format_names_the_dollar(tmp_path):
    path = xlsx(tmp_path, [["Name", "Price"], ["Tea", 1.5]], formats={(2, 2): "[$$-1009]#,##0.00"})
    assert read_table(path, filename="a.xlsx").sheets[0].format_currency(2, 1) == "CAD"


def test_table_round_trips_through_json(tmp_path):
    path = xlsx(tmp_path, [["Name", "Price"], ["Tea", 8.99]], formats={(2, 2): "#,##0.00 [$€-407]"})
    table = read_table(path, filename="a.xlsx")
    again = Table.from_json(json.loads(json.dumps(table.to_json())))
    assert again == table and again.sheets[0].format_currency(2, 1) == "EUR"


def test_csv_with_too_many_rows_is_refused(tmp_path):
    data = b"SKU,Price\n" + b"".join(b"A%d,1.00\n" % i for i in range(200_000))
    path = write(tmp_path, "big.csv", data)
    with pytest.raises(UnreadableSheet, match="more than 150000 rows"):
        read_table(path, filename="big.csv")


def test_xlsx_with_too_many_rows_is_refused(tmp_path):
    path = xlsx(tmp_path, [["SKU", "Price"]] + [[f"A{i}", 1] for i in range(30)])
    with pytest.raises(UnreadableSheet, match="more than 20 rows"):
        read_table(path, filename="a.xlsx", limits=ReadLimits(max_rows=20))


def test_too_many_columns_is_refused(tmp_path):
    path = write(tmp_path, "a.csv", b",".join(b"c%d" % i for i in range(50)) + b"\n")
    with pytest.raises(UnreadableSheet, match="limit 10 columns"):
        read_table(path, filename="a.csv", limits=ReadLimits(max_columns=10))


def test_hand_written_minimal_xlsx_reads(tmp_path):
    path = tmp_path / "a.xlsx"
    minimal_xlsx(
        path,
        b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>SKU</t></is></c><c r="B1"><v>2.5</v></c></row></sheetData></worksheet>',
    )
    assert read_table(path, filename="a.xlsx").sheets[0].rows == [["SKU", "2.5"]]


def test_xml_entity_bomb_is_refused_not_expanded(tmp_path):
    path = tmp_path / "bomb.xlsx"
    minimal_xlsx(path, ENTITY_BOMB_SHEET)
    with pytest.raises(UnreadableSheet, match="DTD"):
        read_table(path, filename="bomb.xlsx")


def test_zip_bomb_member_ratio_is_refused(tmp_path):
    path = tmp_path / "bomb.xlsx"
    minimal_xlsx(path, b"<worksheet/>", extra={"xl/media/zeros.bin": b"\0" * (50 * 1024 * 1024)})
    with pytest.raises(UnreadableSheet, match="zip bomb"):
        read_table(path, filename="bomb.xlsx")


def test_zip_total_uncompressed_size_is_refused(tmp_path):
    path = tmp_path / "big.xlsx"
    minimal_xlsx(path, b"<worksheet/>", extra={"xl/media/zeros.bin": b"\0" * 4096})
    with pytest.raises(UnreadableSheet, match="bytes uncompressed \\(limit 1000\\)"):
        read_table(path, filename="big.xlsx", limits=ReadLimits(max_uncompressed_bytes=1000))


def test_zip_with_too_many_members_is_refused(tmp_path):
    path = tmp_path / "many.xlsx"
    minimal_xlsx(path, b"<worksheet/>", extra={f"xl/media/{i}.bin": b"x" for i in range(20)})
    with pytest.raises(UnreadableSheet, match="25 zip members \\(limit 10\\)"):
        read_table(path, filename="many.xlsx", limits=ReadLimits(max_zip_members=10))
