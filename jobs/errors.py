"""Errors a job handler raises to tell the worker how a failure should be
treated. Anything else a handler raises counts as transient."""


class TransientError(Exception):
    """Another attempt may succeed (a timeout, a 429, a 5xx)."""


class PermanentError(Exception):
    """Another attempt cannot help (unreadable input, rejected output)."""


class InsufficientStorage(Exception):
    """There is no room to store the request's data right now (a full disk
    or quota): nothing was kept, and the client may try again later."""
