"""Where uploaded sheets are kept: the `sheets` storage of Django's storage
API (settings.STORAGES). By default a folder under MEDIA_ROOT; with
`SHEETS_STORAGE=s3`, a bucket of any S3-compatible object store, so web and
worker machines share no disk.

A sheet is stored under `sheets/<sha256>` of its bytes: the stored input
never changes, and identical uploads share one object.
"""

import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

STORAGE_ALIAS = "sheets"
SPOOL_BYTES = 1024 * 1024


class UploadTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the upload is larger than {limit} bytes")
        self.limit = limit


class SyncedFileSystemStorage(FileSystemStorage):
    """Django's file system storage, with each saved file flushed to disk
    before `save` returns: the row naming it commits only afterwards."""

    def _save(self, name, content):
        name = super()._save(name, content)
        with open(self.path(name), "rb") as saved:
            os.fsync(saved.fileno())
        return name


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
