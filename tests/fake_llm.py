"""A local OpenAI-compatible server for tests and the chaos soak.

It answers POST /v1/chat/completions. Each request takes the next entry of
`script`, a list of (status, answer-or-body, delay) tuples; with the script
empty it answers `default(request_body)`, which by default derives the items
the honest way: it rebuilds the rows from the prompt and runs the built-in
extractor over them. Only 127.0.0.1 is used.
"""

import json
import random
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROW = re.compile(r"^row (\d+): (.*)$")


def completion(answer, refusal=None, request_number: int = 1) -> dict:
    return {
        "id": f"chatcmpl-{request_number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": None if refusal else json.dumps(answer),
                    "refusal": refusal,
                },
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def derive_answer(body: dict) -> dict:
    """Items for the rows marked EXTRACT in the prompt, by the built-in extractor."""
    from catalog.extraction import extract_items
    from catalog.errors import SheetError
    from catalog.reading import Sheet, Table

    prompt = body["messages"][-1]["content"]
    name = prompt.splitlines()[0].removeprefix("Sheet: ").strip()
    rows: dict[int, list[str]] = {}
    extract_from = None
    for line in prompt.splitlines():
        if line.startswith("EXTRACT:"):
            extract_from = 0
        match = ROW.match(line)
        if match:
            number = int(match.group(1))
            rows[number] = match.group(2).split(" | ")
            if extract_from == 0:
                extract_from = number
    if not rows:
        return {"items": []}
    table = Table(sheets=[Sheet(name=name, rows=[rows.get(n, []) for n in range(1, max(rows) + 1)])])
    try:
        items = extract_items(table).items
    except SheetError:
        return {"items": []}
    keys = ("sku", "description", "unit", "pack_size", "unit_price", "currency")
    # A model answers the item schema only: its source is {sheet, row}.
    return {
        "items": [
            {
                **{key: item[key] for key in keys},
                "source": {"sheet": item["source"]["sheet"], "row": item["source"]["row"]},
            }
            for item in items
            if extract_from is None or item["source"]["row"] >= extract_from
        ]
    }


class FakeProvider:
    def __init__(self, default: Callable[[dict], dict] = derive_answer):
        self.script: list[tuple[int, object, float]] = []
        self.requests: list[dict] = []
        self.default = default
        self.chaos: dict | None = None  # {"error_rate", "timeout_rate", "max_delay"}
        self.release = threading.Event()
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with provider._lock:
                    provider.requests.append(body)
                    number = len(provider.requests)
                    entry = provider.script.pop(0) if provider.script else None
                status, payload, delay = entry or provider._unscripted(body)
                if delay:
                    provider.release.wait(delay)
                if status == 200 and not (isinstance(payload, dict) and "choices" in payload):
                    payload = completion(payload, request_number=number)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("x-request-id", f"req_{number}")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _unscripted(self, body: dict) -> tuple[int, object, float]:
        chaos = self.chaos
        if chaos:
            roll = random.random()
            delay = random.uniform(0, chaos.get("max_delay", 0))
            if roll < chaos.get("error_rate", 0):
                return random.choice([500, 502, 503, 429]), {"error": {"message": "chaos"}}, delay
            if roll < chaos.get("error_rate", 0) + chaos.get("timeout_rate", 0):
                return 200, self.default(body), chaos.get("timeout_delay", 30)
            return 200, self.default(body), delay
        return 200, self.default(body), 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
