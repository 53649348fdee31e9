"""The embedded PostgreSQL used when DATABASE_URL is unset.

`pgserver` ships the server binaries in a wheel. The cluster lives in a
project-local folder and keeps running after the process that started it
exits, so the web server, the workers and the test suite's subprocesses all
share one server (`make stop-db` stops it).
"""

import logging
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

DATABASE_NAME = "pricesheet"


def database_url(data_dir: Path) -> str:
    """Start (or reuse) the embedded cluster and return a URL for Django."""
    # pgserver's platformdirs warns about an unset XDG_RUNTIME_DIR; it does not use it.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    try:
        import pgserver  # imported lazily: only the embedded default needs it
    except ImportError as exc:
        raise ImproperlyConfigured(
            "DATABASE_URL is not set and the embedded PostgreSQL (the pgserver "
            "package, which has wheels for Python 3.11 and 3.12) is not installed: "
            "set DATABASE_URL=postgres://USER@HOST:PORT/DBNAME"
        ) from exc

    # pgserver logs every process exit at INFO; only its problems matter here.
    logging.getLogger("pgserver").setLevel(logging.WARNING)

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode=None)
    exists = server.psql(
        f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';"
    )
    if "1 row" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    # django-environ reads a Unix-socket directory from the `host` query
    # parameter (it does not decode a percent-encoded host).
    return f"postgres://postgres@/{DATABASE_NAME}?host={data_dir}"
