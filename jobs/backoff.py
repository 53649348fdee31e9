"""The one backoff of the job machinery: how long a failed job attempt, an
expired lease and a failed webhook delivery wait before the next try."""

import random


def backoff_seconds(attempt: int, *, base: float, cap: float, jitter: float = 1.0) -> float:
    """Exponential backoff with jitter: the ceiling min(cap, base * 2^(attempt-1))
    less a random share of it, up to `jitter`. `jitter=1` is full jitter
    (uniform in [0, ceiling]: retries that failed together spread out the
    most); `jitter=0.5` is equal jitter (in [ceiling/2, ceiling]: none
    comes back at once)."""
    ceiling = min(cap, base * 2 ** max(attempt - 1, 0))
    return ceiling * (1 - jitter * random.random())
