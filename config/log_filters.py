"""Logging filters named in settings.LOGGING."""

import logging

# Answers a well-behaved server gives every day: a member without the role
# (403), an id that does not exist or is not theirs (404).
EXPECTED_STATUSES = frozenset({403, 404})


class ExpectedClientErrors(logging.Filter):
    """Keep the one-line warning of an expected 403 or 404 but drop its
    traceback: Django logs a PermissionDenied with the exception attached,
    which buries real errors under stack traces of ordinary refusals."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) in EXPECTED_STATUSES:
            record.exc_info = None
            record.exc_text = None
        return True
