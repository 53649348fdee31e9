"""The parse child: a pure call in another process, stopped by its memory,
CPU and wall-clock limits or by the caller, with a reason an uploader reads."""

import os

import pytest

from catalog.errors import UnreadableSheet
from catalog.reading import ReadLimits
from catalog import sandbox
from catalog.sandbox import ParseLimitExceeded, ParseLimits, run_parse

CLEAN_CSV = b"SKU,Description,Unit,Price,Currency\nA-1,Apples,kg,1.50,EUR\n"


def request(data: bytes, filename: str = "sheet.csv", extract: bool = True) -> dict:
    return {
        "data": data,
        "filename": filename,
        "table": None,
        "extractor": "builtin" if extract else None,
        "read_limits": ReadLimits(),
    }


def big_csv(rows: int, cols: int) -> bytes:
    header = ",".join(
        ["SKU", "Description", "Unit", "Price", "Currency"] + [f"Note {i}" for i in range(cols - 5)]
    )
    lines = [header] + [
        ",".join([f"S-{r}", f"Item {r}", "kg", f"{r}.50", "EUR"] + [f"n{r}x{c}" for c in range(cols - 5)])
        for r in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie counts as gone.
    with open(f"/proc/{pid}/status") as f:
        return "zombie" not in f.read()


def test_the_child_reads_extracts_and_validates_in_another_process():
    result = run_parse(request(CLEAN_CSV), limits=ParseLimits())
    assert sandbox.last_report.pid not in (None, os.getpid())
    assert result["table"]["sheets"][0]["rows"][1] == ["A-1", "Apples", "kg", "1.50", "EUR"]
    assert [(i["sku"], i["flags"]) for i in result["items"]] == [("A-1", [])]


def test_a_checkpointed_table_is_extracted_without_the_bytes():
    table = run_parse(request(CLEAN_CSV, extract=False), limits=ParseLimits())["table"]
    result = run_parse(
        {
            "data": None,
            "filename": "sheet.csv",
            "table": table,
            "extractor": "builtin",
            "read_limits": ReadLimits(),
        },
        limits=ParseLimits(),
    )
    assert result["table"] is None
    assert [i["sku"] for i in result["items"]] == ["A-1"]


def test_unreadable_input_is_a_sheet_error_with_its_reason():
    with pytest.raises(UnreadableSheet, match="the file is a PNG image"):
        run_parse(request(b"\x89PNG\r\n\x1a\n not a sheet"), limits=ParseLimits())


def test_a_child_over_its_memory_limit_is_stopped_with_a_memory_reason():
    with pytest.raises(ParseLimitExceeded) as caught:
        run_parse(request(big_csv(60_000, 40)), limits=ParseLimits(max_memory_mb=160))
    assert caught.value.reason == (
        "this sheet needs more than 160 MB to read; split it into smaller files "
        "or remove empty sheets, rows and columns"
    )
    assert not alive(sandbox.last_report.pid)


def test_a_child_over_its_time_limit_is_stopped_with_a_time_reason():
    with pytest.raises(ParseLimitExceeded) as caught:
        run_parse(request(big_csv(100_000, 8)), limits=ParseLimits(max_seconds=0.5))
    assert caught.value.reason.startswith("this sheet takes longer than 0.5 s to read")
    assert not alive(sandbox.last_report.pid)


class Cancelled(Exception):
    pass


def test_the_caller_stopping_kills_the_child_at_once():
    polls = []

    def should_stop():
        polls.append(sandbox.last_report)
        if len(polls) >= 2:
            raise Cancelled()

    with pytest.raises(Cancelled):
        run_parse(request(big_csv(140_000, 8)), limits=ParseLimits(), should_stop=should_stop)
    assert not alive(sandbox.last_report.pid)
    assert sandbox.last_report.seconds < 60  # well before the child could have finished


def test_a_result_over_the_output_budget_is_refused_with_a_plain_reason():
    from tests.catalog.hostile import shared_string_references_xlsx

    # 40 KB of workbook; 2,000 references to one 2,000-character string.
    data = shared_string_references_xlsx(rows=2_000, length=2_000)
    with pytest.raises(UnreadableSheet) as caught:
        run_parse({**request(data, "refs.xlsx"), "max_output_mb": 2}, limits=ParseLimits())
    assert caught.value.reason.startswith("this sheet expands to more than 2 MB of text once read")


def test_a_result_within_the_output_budget_is_returned():
    result = run_parse({**request(CLEAN_CSV), "max_output_mb": 1}, limits=ParseLimits())
    assert [i["sku"] for i in result["items"]] == ["A-1"]


def test_a_child_killed_from_outside_is_not_blamed_on_a_limit():
    import signal

    from catalog.sandbox import ParserKilled

    def kill_the_child():
        # As an OOM kill under a container limit would, well within the limits.
        os.kill(sandbox.last_report.pid, signal.SIGKILL)

    with pytest.raises(ParserKilled) as caught:
        run_parse(request(big_csv(140_000, 8)), limits=ParseLimits(), should_stop=kill_the_child)
    assert str(caught.value) == "the parser was killed (signal 9)"
    assert not isinstance(caught.value, ParseLimitExceeded)
    assert sandbox.last_report.outcome == "killed"


# --- the model extractor in the child ------------------------------------------------


def test_the_model_extractor_runs_and_is_validated_in_the_child_reporting_as_it_goes():
    from catalog.extractors import ModelEndpoint
    from tests.fake_llm import FakeProvider

    fake = FakeProvider()
    # The second item cites a row that does not hold its SKU or price.
    fake.script.append(
        (
            200,
            {
                "items": [
                    {
                        "sku": "A-1",
                        "description": "Apples",
                        "unit": "kg",
                        "pack_size": None,
                        "unit_price": "1.50",
                        "currency": "EUR",
                        "source": {"sheet": "Sheet1", "row": 2},
                    },
                    {
                        "sku": "Z-9",
                        "description": "Zucchini",
                        "unit": "kg",
                        "pack_size": None,
                        "unit_price": "9.99",
                        "currency": "EUR",
                        "source": {"sheet": "Sheet1", "row": 2},
                    },
                ]
            },
            0,
        )
    )
    events = []
    handlers = {
        name: (lambda *args, name=name: events.append((name, args)))
        for name in ("table", "before_call", "on_call", "progress")
    }
    try:
        endpoint = ModelEndpoint(base_url=fake.url, api_key="k", model="fake", timeout_seconds=5)
        result = run_parse(
            {**request(CLEAN_CSV), "extractor": "openai", "endpoint": endpoint},
            limits=ParseLimits(call_seconds=10),
            on_event=handlers,
        )
    finally:
        fake.close()
    assert sandbox.last_report.pid not in (None, os.getpid())
    assert [name for name, _args in events] == ["table", "before_call", "on_call", "progress"]
    assert events[2][1][0] == "req_1" and events[3][1] == (1, 1)
    assert result["table"] == events[0][1][0]
    assert result["extractor"] == "openai" and result["notes"] == ["extracted by model fake"]
    flags = {(i["sku"], f["code"]) for i in result["items"] for f in i["flags"]}
    # The model extractor's own check and the common validation, both in the child.
    assert flags == {("Z-9", "description_not_in_row"), ("Z-9", "unsupported_source")}


def test_a_failed_model_call_in_the_child_is_an_extraction_error_after_the_table():
    from catalog.errors import ProviderTransientError
    from catalog.extractors import ModelEndpoint
    from tests.fake_llm import FakeProvider

    fake = FakeProvider()
    fake.script.append((503, {"error": {"message": "busy"}}, 0))
    tables = []
    try:
        endpoint = ModelEndpoint(base_url=fake.url, api_key="k", model="fake", timeout_seconds=5)
        with pytest.raises(ProviderTransientError, match="503"):
            run_parse(
                {**request(CLEAN_CSV), "extractor": "openai", "endpoint": endpoint},
                limits=ParseLimits(call_seconds=10),
                on_event={"table": tables.append},
            )
    finally:
        fake.close()
    assert len(tables) == 1  # read and handed over before the call failed


GUARDED = """
import socket, sys
from catalog.sandbox import _network_only_to
_network_only_to(sys.argv[1])
for port in sys.argv[2:]:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
        print(port, "connected")
    except OSError as exc:
        print(port, type(exc).__name__, exc)
try:
    socket.getaddrinfo("example.com", 443)
    print("lookup done")
except OSError as exc:
    print("lookup", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("endpoint", ["model", "none"])
def test_the_child_reaches_only_the_model_endpoint(endpoint):
    import socket
    import subprocess
    import sys

    from tests.helpers import ROOT

    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    ports = [str(s.getsockname()[1]) for s in listeners]
    base_url = f"http://127.0.0.1:{ports[0]}/v1" if endpoint == "model" else ""
    try:
        done = subprocess.run(
            [sys.executable, "-c", GUARDED, base_url, *ports],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for listener in listeners:
            listener.close()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    refused = "PermissionError the parse child may reach only the model endpoint, not 127.0.0.1"
    first = f"{ports[0]} connected" if endpoint == "model" else f"{ports[0]} {refused}"
    assert lines == [
        first,
        f"{ports[1]} {refused}",
        "lookup PermissionError the parse child may reach only the model endpoint, not example.com",
    ]
