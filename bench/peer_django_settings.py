"""Django settings of the django-tasks-db peer in bench/peer_drain.py (the peers' virtualenv only)."""

import os

from django_tasks import task
from psycopg.conninfo import conninfo_to_dict

_conn = conninfo_to_dict(os.environ["PEER_DSN"])

SECRET_KEY = "bench-peer-only"
USE_TZ = True
INSTALLED_APPS = ["django_tasks", "django_tasks_db"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _conn["dbname"],
        "USER": _conn.get("user", ""),
        "PASSWORD": _conn.get("password", ""),
        "HOST": _conn.get("host", ""),
        "PORT": _conn.get("port", ""),
        # django-tasks-db's advice: keep connections, or every worker loop reconnects.
        "CONN_MAX_AGE": 600,
    }
}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@task()
def noop() -> None:
    return None
