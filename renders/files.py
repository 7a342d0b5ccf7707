"""A render's files in the project's storage (the file system, or S3 through
django-storages): ``renders/<render id>/<claim>.<format>``, so each claim of a render writes
names of its own and a task that lost its claim cannot touch the files of the one that took
it. A file is named in its row only once it is whole; the files no row names are removed
(``prune``, after each change of a render's state, and ``prune_renders_gone``)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Iterator

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from adstudio import observability
from adstudio.file_storage import PART_SUFFIX

logger = logging.getLogger(__name__)

FOLDER = "renders"
# The mix as Ogg/Opus, broadcast WAV and MP3, and a stem per kind (float WAV).
CONTENT_TYPES = {
    "ogg": "audio/ogg",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "voices.wav": "audio/wav",
    "music.wav": "audio/wav",
    "sfx.wav": "audio/wav",
}
FORMATS = tuple(CONTENT_TYPES)
_ANY_FORMAT = "|".join(re.escape(fmt) for fmt in FORMATS)
# <claim>.<format>, or a temporary file of one being written: <claim>.<format>.<hex>.part
_IN_RENDER = re.compile(rf"^(\d+)\.({_ANY_FORMAT})(\.[0-9a-f]+{re.escape(PART_SUFFIX)})?$")
# Renders made before names carried their claim: renders/<render id>.<format>
_FLAT = re.compile(r"^([0-9a-f-]{36})\.(ogg|wav)$")


class StorageFailed(Exception):
    """The audio could not be stored (a full or unwritable disk, an unreachable bucket);
    nothing of it is left in storage."""


def name_of(render_id: uuid.UUID | str, claim: int, fmt: str) -> str:
    return f"{FOLDER}/{render_id}/{claim}.{fmt}"


def write(render_id: uuid.UUID | str, claim: int, audio: dict[str, bytes]) -> dict[str, str]:
    """Store each format's bytes whole under this claim's names: ``{format: name}``. On any
    failure, what was stored is removed and ``StorageFailed`` says why."""
    written: dict[str, str] = {}
    try:
        for fmt, data in audio.items():
            written[fmt] = default_storage.save(name_of(render_id, claim, fmt), ContentFile(data))
    except Exception as exc:
        remove(written.values())
        raise StorageFailed(f"The audio could not be stored: {_described(exc)}") from exc
    return written


def _described(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def remove(names: Iterable[str]) -> int:
    """Delete these files, as far as storage lets: a file already gone is no error, and
    one that cannot be deleted now is left to the next prune. The count deleted."""
    removed = 0
    for name in names:
        try:
            default_storage.delete(name)
            removed += 1
        except Exception as exc:
            logger.warning("could not remove %s: %s", name, exc)
    return removed


def _files_of(render_id: uuid.UUID | str) -> list[str]:
    try:
        _, files = default_storage.listdir(f"{FOLDER}/{render_id}")
    except FileNotFoundError:  # the file system, before its first file
        return []
    return files


def _listed(render_id: uuid.UUID | str) -> list[str]:
    """The render's files, or none when storage cannot list them now (a prune is a
    tidy-up: a later one finds what this one could not)."""
    try:
        return _files_of(render_id)
    except Exception as exc:
        logger.warning("could not list the files of render %s: %s", render_id, exc)
        return []


def prune(render_id: uuid.UUID | str, *, below: int, keep: Iterable[str] = ()) -> int:
    """Remove the render's files of claims older than ``below`` that are not in ``keep``
    (the names its row holds): files of tasks that lost their claim or died mid-write.
    Files of a claim at or after ``below`` may still be being written; they are left."""
    kept = set(keep)
    stale = []
    for file in _listed(render_id):
        match = _IN_RENDER.match(file)
        name = f"{FOLDER}/{render_id}/{file}"
        if match and int(match.group(1)) < below and name not in kept:
            stale.append(name)
    removed = remove(stale)
    observability.render_files_removed(removed, "stale_claim")
    return removed


def prune_renders_gone(
    existing: Callable[[set[uuid.UUID]], set[uuid.UUID]], named: Callable[[], set[str]]
) -> int:
    """Remove the files of renders that no longer exist: one listing of the renders folder.
    ``existing(ids)`` answers which of ``ids`` are renders still; ``named()`` the names of
    files rows hold in the folder itself (renders made before per-render folders)."""
    try:
        folders, files = default_storage.listdir(FOLDER)
    except FileNotFoundError:  # the file system, before its first render
        return 0
    except Exception as exc:  # storage out of reach: the next prune finds what this did not
        logger.warning("could not list the renders folder: %s", exc)
        return 0
    ids = {_uuid(folder) for folder in folders} - {None}
    kept = existing(ids)  # type: ignore[arg-type]
    stale = [
        f"{FOLDER}/{folder}/{file}"
        for folder in folders
        if _uuid(folder) in ids - kept
        for file in _files_of(folder)
    ]
    flat = [f"{FOLDER}/{file}" for file in files if _FLAT.match(file)]
    if flat:
        held = named()
        stale += [name for name in flat if name not in held]
    removed = remove(stale)
    observability.render_files_removed(removed, "render_gone")
    return removed


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def opened(name: str):
    """The file opened for reading, and its size in bytes (read with the opening: one
    request to a bucket); ``FileNotFoundError`` when storage does not have it."""
    stream = default_storage.open(name, "rb")
    return stream, stream.size


def chunks(stream, start: int, length: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    """``length`` bytes of the opened file from ``start``, a chunk at a time; the file is
    closed once they are read (or the response is closed)."""
    with stream:
        stream.seek(start)
        left = length
        while left > 0:
            data = stream.read(min(chunk, left))
            if not data:
                return
            left -= len(data)
            yield data
