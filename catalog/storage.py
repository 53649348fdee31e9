"""Where uploaded sheets are kept: the `sheets` storage of Django's storage
API (settings.STORAGES). By default a folder under MEDIA_ROOT; with
`SHEETS_STORAGE=s3`, a bucket of any S3-compatible object store, so web and
worker machines share no disk.

A sheet is stored under `sheets/<sha256>` of its bytes: the stored input
never changes, and identical uploads share one object.
"""

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

from jobs.errors import InsufficientStorage

STORAGE_ALIAS = "sheets"
SPOOL_BYTES = 1024 * 1024


class UploadTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the upload is larger than {limit} bytes")
        self.limit = limit


MSG_NO_ROOM = "the server has no room to store the upload right now; try again later"
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


class SyncedFileSystemStorage(FileSystemStorage):
    """Django's file system storage, with each file written whole or not
    at all: the bytes go to a temporary name in the same folder, are
    flushed to disk, and only then renamed into place (the rename itself
    made durable by a flush of the folder), so a full disk or a crash never
    leaves a cut-short file under a sheet's content-addressed name. A full
    disk raises InsufficientStorage, with nothing left behind."""

    def _save(self, name, content):
        full_path = self.path(name)
        directory = os.path.dirname(full_path)
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in content.chunks():
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if self.file_permissions_mode is not None:
                os.chmod(temporary, self.file_permissions_mode)
            while True:
                try:
                    # link() refuses an existing name, as Django's O_EXCL does.
                    os.link(temporary, full_path)
                    break
                except FileExistsError:
                    name = self.get_available_name(name)
                    full_path = self.path(name)
            _sync_directory(directory)
        except OSError as exc:
            if exc.errno in _NO_ROOM:
                raise InsufficientStorage(MSG_NO_ROOM) from exc
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        return os.path.relpath(full_path, self.location).replace("\\", "/")


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class StoredFile:
    name: str  # the storage name, e.g. "sheets/<sha256>"
    sha256: str
    size: int


def sheets_storage() -> Storage:
    return storages[STORAGE_ALIAS]


def sheet_file_store(chunks: Iterable[bytes], *, max_bytes: int | None = None) -> StoredFile:
    """Stream an upload into the sheets storage under the sha256 of its bytes.

    The bytes are spooled (in memory, then a local temporary file) while
    their digest is computed, then saved under `sheets/<sha256>`. An object
    already there with the same size is the same upload and is reused; one
    of another size (a write cut short) is left alone and the upload is
    saved beside it under a name the storage picks."""
    digest = hashlib.sha256()
    size = 0
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        for chunk in chunks:
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise UploadTooLarge(max_bytes)
            digest.update(chunk)
            spool.write(chunk)
        sha = digest.hexdigest()
        name = f"sheets/{sha}"
        storage = sheets_storage()
        if storage.exists(name) and storage.size(name) == size:
            return StoredFile(name=name, sha256=sha, size=size)
        spool.seek(0)
        saved = storage.save(name, File(spool, name=sha))
    return StoredFile(name=saved, sha256=sha, size=size)


def sheet_read_bytes(name: str) -> bytes:
    """The bytes of a stored sheet, from whichever storage holds it."""
    with sheets_storage().open(name, "rb") as stored:
        return stored.read()
