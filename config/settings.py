"""Settings. Everything that differs between machines comes from the
environment (django-environ); a `.env` file in the project folder is read
when present.

This is the one module that reads the environment: every other module uses
`settings.NAME`, never `os.environ` or a default of its own
(tests/config/test_settings.py holds them to it). Each variable is read once,
through `config.env`, which refuses a value that does not parse and names
the variable. The settings are grouped by concern, in this order: the site
and its secrets, the application, the database, accounts, static files,
storage, uploads and request bounds,
throttling, jobs, the worker's connections, extraction, parsing limits,
review, webhooks and the outbox, operations, HTTPS and browser security,
sign-in throttling, logging. README's "Settings" table lists every variable."""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import Environment

BASE_DIR = Path(__file__).resolve().parent.parent

env = Environment(BASE_DIR / ".env")

# --- The site and its secrets: debug, key, hosts ---------------------------------
DEBUG = env.bool("DEBUG", default=False)

# The development key is public (it is in this file): it is refused whenever
# DEBUG is off, embedded database or not. `make run` and the tests set a key
# of their own for local use.
DEVELOPMENT_SECRET_KEY = "django-insecure-development-key-not-for-production"
SECRET_KEY = env.str("SECRET_KEY", default="")
# Django's own deploy check asks for at least 50 characters: a shorter key
# can be guessed offline from one signed cookie.
SECRET_KEY_MIN_LENGTH = 50
if not SECRET_KEY or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set (to a long random value) when DEBUG is off; "
            "`make run` sets one for local use, and DEBUG=true allows the development key"
        )
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
elif len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH and not DEBUG:
    raise ImproperlyConfigured(
        f"SECRET_KEY is {len(SECRET_KEY)} characters long; use a random value of at least "
        f"{SECRET_KEY_MIN_LENGTH} (python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- The application: apps, middleware, templates (the same on every machine) -----
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "accounts",
    "jobs",
    "catalog",
    "review",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything can read a request body: 411/413 on the declared length.
    "config.middleware.bounded_api_bodies",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.middleware.no_store_when_private",
    # Last, as django-axes asks: it turns a lockout into the answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- The database: a server's URL, or the embedded PostgreSQL -------------------
EMBEDDED_DATABASE = not env.is_set("DATABASE_URL")
if EMBEDDED_DATABASE:
    from config.embedded import database_url

    DATABASE_URL = database_url(BASE_DIR / ".pgdata")
else:
    DATABASE_URL = env.str("DATABASE_URL")
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
# Workers run a loop of short transactions: reconnecting each turn (Django's
# default of 0) costs about 3x in throughput.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME", default="") or None}
# The statements every API request runs are prepared once per connection
# (config.prepared); false for a transaction-mode pooler that cannot keep them.
DATABASE_PREPARED_STATEMENTS = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Accounts: passwords and sign-in pages ---------------------------------------
# Checked by the admin's password forms and `addmember --password`.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # Refuses a sign-in while its account or client address is locked out.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "jobs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (collected by `make setup`, served by WhiteNoise) ---------------
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

# --- Storage: uploaded files -------------------------------------------------------
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(BASE_DIR / "media")))

# Uploaded sheets go through the `sheets` storage: a folder under MEDIA_ROOT
# by default, or any S3-compatible object store (django-storages with boto3),
# so that web and worker machines need no shared disk. Credentials come from
# boto3's own chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or a role).
SHEETS_STORAGE = env.str("SHEETS_STORAGE", default="filesystem", choices=("filesystem", "s3"))
if SHEETS_STORAGE == "filesystem":
    # No `location`: the storage follows MEDIA_ROOT.
    _sheets_storage = {"BACKEND": "catalog.storage.SyncedFileSystemStorage"}
elif SHEETS_STORAGE == "s3":
    _sheets_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env.str("SHEETS_S3_BUCKET"),
            "endpoint_url": env.str("SHEETS_S3_ENDPOINT_URL", default="") or None,
            "region_name": env.str("SHEETS_S3_REGION", default="") or None,
            "location": env.str("SHEETS_S3_PREFIX", default=""),
            "default_acl": None,  # the bucket's own policy: private
            "file_overwrite": True,  # names are content hashes: same name, same bytes
        },
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Each file under a name holding its content's hash, with a gzip copy
    # beside it (`collectstatic`, run by `make setup`): WhiteNoise
    # serves them compressed and cacheable for ever.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    "sheets": _sheets_storage,
}

# --- Uploads and request bounds: what a request may carry -----------------------
# Uploads above this size are refused with 413 before they are buffered.
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=20 * 1024 * 1024, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# The review grid posts one field per cell.
DATA_UPLOAD_MAX_NUMBER_FIELDS = env.int("DATA_UPLOAD_MAX_NUMBER_FIELDS", default=20_000, minimum=1)
# JSON bodies of the API above this size are refused with 413 before they are read.
API_JSON_MAX_BYTES = env.int("API_JSON_MAX_BYTES", default=1024 * 1024, minimum=1)

# --- Throttling: uploads per workspace (sign-ins: AXES_* below) ------------------
# Uploads admitted per workspace in any minute (POST /api/jobs); more get 429.
UPLOAD_RATE_PER_MINUTE = env.int("UPLOAD_RATE_PER_MINUTE", default=60, minimum=1)

# --- Jobs: leases, attempts, backoff, wake-ups, prefetch -------------------------
# The product's name where the job machinery shows it: the metric names
# (`pricesheet_jobs`), the NOTIFY channel, the webhooks' User-Agent.
JOBS_PRODUCT = "pricesheet"
JOB_LEASE_SECONDS = env.float("JOB_LEASE_SECONDS", default=60.0, above=0)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=5, minimum=1)
# The most attempts that failures not charged to a job (a lock wait that
# timed out, a lost connection) and reviewers' requeues (a column mapping)
# can extend a job's budget to; past it each requeue allows one attempt.
JOB_MAX_TOTAL_ATTEMPTS = env.int("JOB_MAX_TOTAL_ATTEMPTS", default=20, minimum=1)
JOB_RECOVERY_INTERVAL_SECONDS = env.float(
    "JOB_RECOVERY_INTERVAL_SECONDS", default=JOB_LEASE_SECONDS / 4, above=0
)
JOB_BACKOFF_BASE_SECONDS = env.float("JOB_BACKOFF_BASE_SECONDS", default=2.0, minimum=0)
JOB_BACKOFF_MAX_SECONDS = env.float("JOB_BACKOFF_MAX_SECONDS", default=300.0, minimum=0)
# Idle workers wake on LISTEN/NOTIFY and poll at this interval as a fallback.
JOB_POLL_INTERVAL_SECONDS = env.float("JOB_POLL_INTERVAL_SECONDS", default=2.0, above=0)
JOB_NOTIFY = env.bool("JOB_NOTIFY", default=True)
# A worker started without --prefetch claims several jobs per statement, but
# only of kinds whose recent run time in that worker is below the threshold,
# and only when the oldest claimable job is of such a kind: a long job is
# never held behind prefetched ones.
JOB_PREFETCH_MAX = env.int("JOB_PREFETCH_MAX", default=10, minimum=1)
JOB_PREFETCH_SHORT_SECONDS = env.float("JOB_PREFETCH_SHORT_SECONDS", default=0.05, minimum=0)

# --- The worker's connections: server-side limits of its sessions ----------------
# Session limits of worker, relay and recovery connections (0: off). Far
# above any normal statement of theirs (milliseconds; a large checkpoint
# write takes seconds): they stop a runaway statement or a wait behind a
# lock from hanging a worker, not ordinary work.
JOB_STATEMENT_TIMEOUT_MS = env.int("JOB_STATEMENT_TIMEOUT_MS", default=60_000, minimum=0)
JOB_LOCK_TIMEOUT_MS = env.int("JOB_LOCK_TIMEOUT_MS", default=10_000, minimum=0)
# A transaction of theirs idle this long (the process paused or cut off
# between two statements) is ended by the server, with its locks.
JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS = env.int("JOB_IDLE_IN_TRANSACTION_TIMEOUT_MS", default=30_000, minimum=0)
# Recovery ends the database session still holding the row of a job whose
# lease expired this many leases ago (a worker stalled inside a transaction).
JOB_STALLED_LEASES = env.float("JOB_STALLED_LEASES", default=2.0, above=0)

# --- Extraction: which extractor, and the model endpoint it may call -------------
# The names of catalog.extractors.EXTRACTORS.
EXTRACTOR_CHOICES = ("builtin", "openai")
EXTRACTOR = env.str("EXTRACTOR", default="builtin", choices=EXTRACTOR_CHOICES)
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0, above=0)

# --- Parsing limits: the child process that reads a sheet -------------------------
# Reading (and built-in extraction) runs in a child process with these
# limits; a sheet that breaks one needs attention at once, with the reason.
PARSE_MAX_MEMORY_MB = env.int("PARSE_MAX_MEMORY_MB", default=512, minimum=64)
PARSE_MAX_SECONDS = env.float("PARSE_MAX_SECONDS", default=120.0, above=0)
MAX_SHEETS = env.int("MAX_SHEETS", default=100, minimum=1)
# Pages read from one PDF price list; more is refused before any page is read.
MAX_PAGES = env.int("MAX_PAGES", default=100, minimum=1)
# What the child's result may expand to once written out (the table's cells
# with their text, the items with their fields): a cell repeated by reference
# costs the child little and everything after it its full text.
PARSE_MAX_OUTPUT_MB = env.int("PARSE_MAX_OUTPUT_MB", default=64, minimum=1)

# --- Review: what waits for a reviewer --------------------------------------------
# A price that moves by more than this share against the supplier's current
# catalog waits for a reviewer (0.5: more than 50% up or down).
PRICE_CHANGE_REVIEW_RATIO = env.float("PRICE_CHANGE_REVIEW_RATIO", default=0.5, above=0)

# --- Webhooks and the outbox relay ------------------------------------------------
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0, above=0)
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=8, minimum=1)
# Webhook URLs are https to public addresses only; development and tests,
# whose receivers listen on 127.0.0.1, turn these on.
WEBHOOK_ALLOW_INSECURE = env.bool("WEBHOOK_ALLOW_INSECURE", default=False)
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env.bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", default=False)
# After a secret is rotated the previous one also signs for this long.
WEBHOOK_SECRET_GRACE_SECONDS = env.int("WEBHOOK_SECRET_GRACE_SECONDS", default=24 * 3600, minimum=0)
# Endpoints posted to at once by one relay; each endpoint gets one POST at a
# time, so a slow endpoint holds one of these and delays only its own messages.
OUTBOX_CONCURRENCY = env.int("OUTBOX_CONCURRENCY", default=8, minimum=1)
# A reservation hides a message from other relays this long; keep it above
# (active endpoints per workspace) x WEBHOOK_TIMEOUT_SECONDS.
OUTBOX_VISIBILITY_SECONDS = env.float("OUTBOX_VISIBILITY_SECONDS", default=60.0, above=0)
OUTBOX_BATCH_SIZE = env.int("OUTBOX_BATCH_SIZE", default=10, minimum=1)
OUTBOX_POLL_INTERVAL_SECONDS = env.float("OUTBOX_POLL_INTERVAL_SECONDS", default=1.0, above=0)
OUTBOX_BACKOFF_BASE_SECONDS = env.float("OUTBOX_BACKOFF_BASE_SECONDS", default=10.0, minimum=0)
OUTBOX_BACKOFF_MAX_SECONDS = env.float("OUTBOX_BACKOFF_MAX_SECONDS", default=3600.0, minimum=0)

# --- Operations: the metrics endpoint ----------------------------------------------
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

# --- HTTPS and browser security ----------------------------------------------------
# HTTPS hardening is on whenever DEBUG is off. `HTTPS=false` is the one
# switch that turns the redirect, the secure cookies and HSTS off together,
# for plain-HTTP local use (`make run`) and tests; each stays settable.
HTTPS = env.bool("HTTPS", default=True) and not DEBUG
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=HTTPS)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=HTTPS)
# Django's defaults, stated: nosniff and a same-origin Referer.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts only from our own static
# files, never inline. Inline style attributes remain (progress bars).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- Sign-in throttling (django-axes) ---------------------------------------------
# Sign-in throttling (django-axes): failures are counted per account and
# address pair and per address. LOGIN_FAILURE_LIMIT failures for an account
# from one address lock that account from that address only (a stranger
# cannot lock anybody out of their own account); LOGIN_FAILURE_LIMIT failures
# from one address, for any accounts, lock that address. Both last
# LOGIN_LOCKOUT_MINUTES, with one answer whether the account exists or not.
# A success clears only the failures of that account from that address
# (accounts.services.signin_failures_clear): signing into another account
# never clears anything.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15.0, above=0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "config.middleware.lockout_response"
AXES_VERBOSE = False

# --- Logging ------------------------------------------------------------------------
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "filters": {"expected_client_errors": {"()": "config.log_filters.ExpectedClientErrors"}},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django.request": {"filters": ["expected_client_errors"]},
    },
}
