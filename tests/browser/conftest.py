"""Real Chromium (Debian's package) driven by Playwright against a live server.

Without a browser the tests are skipped with a message, unless
REQUIRE_BROWSER=1 (set by .ci/run), where a missing browser fails."""

import os
import shutil

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# Playwright's sync API runs an event loop in this thread; Django's async
# safety check would otherwise refuse the ORM calls the tests make.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# The live server listens on loopback only.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def _chromium():
    path = chromium_path()
    if path is None:
        message = (
            "Chromium not found: install Debian's `chromium` package "
            "(apt-get install chromium) or set CHROMIUM=/path/to/chromium"
        )
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = []

        def connected():
            """The session's Chromium; launched again when an earlier test lost it,
            so a crash fails that test and not every one after it."""
            if not launched or not launched[-1].is_connected():
                launched.append(playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS))
            return launched[-1]

        yield connected
        if launched and launched[-1].is_connected():
            launched[-1].close()


@pytest.fixture
def browser(_chromium):
    return _chromium()


@pytest.fixture
def screenshot_path(tmp_path):
    """Where a test saves its page: docs/ (linked from the README) when
    SAVE_SCREENSHOTS=1, else a temporary folder, so a test run leaves the
    work tree as it was."""
    from tests.helpers import ROOT

    folder = ROOT / "docs" if os.environ.get("SAVE_SCREENSHOTS") == "1" else tmp_path
    return lambda name: folder / name


@pytest.fixture
def new_context(browser):
    """Fresh browser contexts (no shared cookies), closed after the test."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()
