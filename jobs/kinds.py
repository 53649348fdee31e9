"""Job kinds that belong to the job machinery itself."""

import time

from jobs.errors import PermanentError
from jobs.registry import register


@register("noop")
def noop(ctx) -> None:
    """Accept at once: health checks and queue benchmarks."""
    ctx.accept({"ok": True})


@register("sleep")
def sleep(ctx) -> None:
    """Diagnostics: hold a job for `seconds`, then accept who ran it.

    With `"cooperative": true` it checks between short naps, so a lost lease
    or a stopping worker interrupts it; otherwise it blocks like a long remote
    call. `attempt_seconds` ({"1": 30}) sets the time per attempt. With
    `"progress": true` it first reports progress 0 of 1, so whoever watches
    the job knows its handler is running. Used to rehearse pauses, crashes
    and cancellation."""
    by_attempt = ctx.payload.get("attempt_seconds", {})
    seconds = float(by_attempt.get(str(ctx.attempt), ctx.payload.get("seconds", 1.0)))
    if ctx.payload.get("progress"):
        ctx.heartbeat(done=0, total=1)
    deadline = time.monotonic() + seconds
    if ctx.payload.get("cooperative"):
        while time.monotonic() < deadline:
            ctx.check()
            time.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
    else:
        time.sleep(seconds)
    ctx.accept({"worker_id": ctx.claim.worker_id, "attempt": ctx.attempt})


@register("fail")
def fail(ctx) -> None:
    """Diagnostics: always fail, transiently unless `"permanent": true`."""
    message = ctx.payload.get("message", "failing on purpose")
    if ctx.payload.get("permanent"):
        raise PermanentError(message)
    raise RuntimeError(message)
