"""The file system storage of the files the product makes (scratch tracks), with files that
appear whole or not at all: each is written under a temporary name beside its own, flushed
to disk, then renamed. A crash or a full disk mid-write leaves no half-written file under
a name a row could point at; ``renders.files`` removes the temporary ones left behind."""

from __future__ import annotations

import os
import secrets

from django.core.files import File
from django.core.files.storage import FileSystemStorage

PART_SUFFIX = ".part"  # a file still being written: ``<name>.<random>.part``


class _Written(File):
    """A file written whole at a temporary path, which ``FileSystemStorage._save`` moves
    into place (a rename in the same directory) instead of copying."""

    def temporary_file_path(self) -> str:
        return self.name


class WholeFileSystemStorage(FileSystemStorage):
    def _save(self, name: str, content: File) -> str:
        final = self.path(name)
        directory = os.path.dirname(final)
        os.makedirs(directory, exist_ok=True)
        temporary = f"{final}.{secrets.token_hex(6)}{PART_SUFFIX}"
        # Created as Django creates files (0o666 less the umask), so the web processes of
        # another user read what a worker wrote.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in content.chunks():
                    out.write(chunk if isinstance(chunk, bytes) else chunk.encode())
                out.flush()
                os.fsync(out.fileno())  # on disk before its name says it is whole
            return super()._save(name, _Written(None, name=temporary))
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
