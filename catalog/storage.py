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
FOLDER = "sheets"
SPOOL_BYTES = 1024 * 1024


class UploadTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the upload is larger than {limit} bytes")
        self.limit = limit


MSG_NO_ROOM = "the server has no room to store the upload right now; try again later"
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class StoredFile:
    name: str  # the storage name, e.g. "sheets/<sha256>"
    sha256: str
    size: int


class SyncedFileSystemStorage(FileSystemStorage):
    """Django's file system storage, with each file written whole or not
    at all: the bytes go to a temporary name in the same folder, are
    flushed to disk, and only then renamed into place (the rename itself
    made durable by a flush of the folder), so a full disk or a crash never
    leaves a cut-short file under a sheet's content-addressed name. A full
    disk raises InsufficientStorage, with nothing left behind."""

    def _save(self, name, content):
        with self._temporary_file(os.path.dirname(self.path(name))) as (out, temporary):
            for chunk in content.chunks():
                out.write(chunk)
            return self._link_durably(out, temporary, name)

    def save_by_content(
        self, chunks: Iterable[bytes], *, folder: str, max_bytes: int | None = None
    ) -> StoredFile:
        """Store an upload under `folder/<sha256>` of its bytes in one pass:
        written to a temporary name in the folder while hashed, then (unless
        a file of that name and size is there already) flushed and linked
        under its name. A spooled copy first would write every byte twice."""
        with self._temporary_file(self.path(folder)) as (out, temporary):
            sha, size = _write_hashed(chunks, out, max_bytes)
            name = f"{folder}/{sha}"
            if not (self.exists(name) and self.size(name) == size):
                name = self._link_durably(out, temporary, name)
        return StoredFile(name=name, sha256=sha, size=size)

    @contextlib.contextmanager
    def _temporary_file(self, directory: str):
        """A new file under a temporary name in `directory`, removed on the
        way out (linked under its own name by then, or abandoned); a full
        disk raises InsufficientStorage."""
        try:
            os.makedirs(directory, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=directory, prefix=".upload-")
            try:
                with os.fdopen(fd, "wb") as out:
                    yield out, temporary
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
        except OSError as exc:
            if exc.errno in _NO_ROOM:
                raise InsufficientStorage(MSG_NO_ROOM) from exc
            raise

    def _link_durably(self, out, temporary: str, name: str) -> str:
        """Flush the written file to disk, then give it `name` (or a free
        name beside it) and flush the folder, so the name survives a crash;
        returns the name."""
        out.flush()
        os.fsync(out.fileno())
        if self.file_permissions_mode is not None:
            os.chmod(temporary, self.file_permissions_mode)
        full_path = self.path(name)
        while True:
            try:
                # link() refuses an existing name, as Django's O_EXCL does.
                os.link(temporary, full_path)
                break
            except FileExistsError:
                name = self.get_available_name(name)
                full_path = self.path(name)
        _sync_directory(os.path.dirname(full_path))
        return os.path.relpath(full_path, self.location).replace("\\", "/")


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sheets_storage() -> Storage:
    return storages[STORAGE_ALIAS]


def sheet_file_store(chunks: Iterable[bytes], *, max_bytes: int | None = None) -> StoredFile:
    """Stream an upload into the sheets storage under the sha256 of its bytes.

    An object already under `sheets/<sha256>` with the same size is the same
    upload and is reused; one of another size (a write cut short) is left
    alone and the upload is saved beside it under a name the storage picks.
    The local folder writes the bytes once, hashing them on the way
    (`SyncedFileSystemStorage.save_by_content`); for any other storage they
    are spooled (in memory, then a local temporary file) while their digest
    is computed, then saved under their name."""
    storage = sheets_storage()
    if isinstance(storage, SyncedFileSystemStorage):
        return storage.save_by_content(chunks, folder=FOLDER, max_bytes=max_bytes)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        sha, size = _write_hashed(chunks, spool, max_bytes)
        name = f"{FOLDER}/{sha}"
        if storage.exists(name) and storage.size(name) == size:
            return StoredFile(name=name, sha256=sha, size=size)
        spool.seek(0)
        saved = storage.save(name, File(spool, name=sha))
    return StoredFile(name=saved, sha256=sha, size=size)


def _write_hashed(chunks: Iterable[bytes], out, max_bytes: int | None) -> tuple[str, int]:
    """Write ``chunks`` to ``out`` while hashing them: (sha256 hex digest, size). Past
    ``max_bytes`` raises UploadTooLarge."""
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise UploadTooLarge(max_bytes)
        digest.update(chunk)
        out.write(chunk)
    return digest.hexdigest(), size


def sheet_read_bytes(name: str) -> bytes:
    """The bytes of a stored sheet, from whichever storage holds it."""
    with sheets_storage().open(name, "rb") as stored:
        return stored.read()
