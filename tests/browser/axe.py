"""axe-core (vendored, see vendor/README.md) run inside a page."""

from pathlib import Path

AXE_SOURCE = Path(__file__).parent / "vendor" / "axe.min.js"
BLOCKING_IMPACTS = ("serious", "critical")


def blocking_violations(page) -> list[str]:
    """The serious and critical axe violations of the page, one line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated through the DevTools protocol, so a strict CSP on the page does not block it.
        page.evaluate(AXE_SOURCE.read_text())
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:3])
        for v in result["violations"]
        if v["impact"] in BLOCKING_IMPACTS
    ]
