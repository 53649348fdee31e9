"""schemathesis, an outside API tester, generates requests from
/api/openapi.json (valid and invalid ones) and sends them to a live server
on 127.0.0.1 with a full token: with every check, a fixed seed and a bounded
number of examples per operation, it finds nothing. So the document and the
server agree on every limit, every status and every body."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accounts.services import apitoken_create

# The live server listens on loopback only.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 20261201
EXAMPLES_PER_OPERATION = 3


def schemathesis_command() -> str:
    return shutil.which("st", path=str(Path(sys.executable).parent)) or "st"


@pytest.mark.once
@pytest.mark.django_db(transaction=True)
def test_schemathesis_with_every_check_finds_nothing(live_server, reviewer, workspace, tmp_path, settings):
    assert live_server.url.startswith("http://127.0.0.1:")
    token = apitoken_create(user=reviewer)[1]
    settings.MEDIA_ROOT = tmp_path / "media"
    result = subprocess.run(
        [
            schemathesis_command(),
            "--config-file",
            str(CONFIG),
            "run",
            f"{live_server.url}/api/openapi.json",
            "--checks",
            "all",
            "--seed",
            str(SEED),
            "--max-examples",
            str(EXAMPLES_PER_OPERATION),
            "--workers",
            "2",
            "--header",
            f"Authorization: Bearer {token}",
            "--no-color",
            "--request-timeout",
            "20",
            "--generation-database",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
