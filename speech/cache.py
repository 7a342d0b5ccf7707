"""Lines already read, kept in the project's storage (the file system or S3) by what makes
them the same audio (``SpeechRequest.cache_key``), so a render that changes only the music
reads no line again and pays for none.

Each line is one file, ``speech/<key[:2]>/<key>.pcm``, written whole or not at all by the
storage (``adstudio.file_storage``; an S3 PUT is atomic), so a worker killed mid-write
leaves nothing a later render could take for a line. The cache is an optimisation: a read
or write that fails (full disk, storage out of reach) is logged and the line is read from
its provider as if it were not cached.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from adstudio.file_storage import PART_SUFFIX
from speech.base import SpeechRequest

logger = logging.getLogger(__name__)

FOLDER = "speech"
# Every folder of kept audio: the lines (here) and the music (``speech.music_reading``).
FOLDERS = (FOLDER, "music")
# A file still being written this long after it was begun was left by a dead process.
PART_GRACE = timedelta(hours=1)


def cache_name(request: SpeechRequest) -> str:
    key = request.cache_key()
    return f"{FOLDER}/{key[:2]}/{key}.pcm"


def cached_audio(request: SpeechRequest) -> bytes | None:
    """The line's audio (16-bit PCM at ``speech.base.SAMPLE_RATE``: the files carry no
    header, and the output format is in the key) when it was read before."""
    return cached_file(cache_name(request))


def cached_file(name: str) -> bytes | None:
    """The file kept under ``name``, or None (not kept, or the storage out of reach)."""
    try:
        with default_storage.open(name, "rb") as stored:
            return stored.read()
    except FileNotFoundError:
        return None
    except Exception as exc:  # a storage back end's own errors: a miss
        logger.warning("speech cache: %s could not be read (%s); reading the line again", name, exc)
        return None


def is_cached(request: SpeechRequest) -> bool:
    return is_kept(cache_name(request))


def is_kept(name: str) -> bool:
    try:
        return default_storage.exists(name)
    except Exception as exc:  # unknown counts as not kept: estimated at cost
        logger.warning("speech cache: could not check %s (%s)", name, exc)
        return False


def cache_store(request: SpeechRequest, audio: bytes) -> bool:
    """Keep ``audio`` for ``request``; False (logged) when storage refused it."""
    return store_file(cache_name(request), audio)


def store_file(name: str, data: bytes) -> bool:
    """Keep ``data`` under ``name`` (once: the name says what it holds); False (logged)
    when storage refused it."""
    try:
        if not default_storage.exists(name):
            default_storage.save(name, ContentFile(data))
        return True
    except Exception as exc:  # full disk, storage down: the render goes on
        logger.warning("speech cache: %s not kept (%s)", name, exc)
        return False


def cache_prune(*, keep_days: int) -> int:
    """Remove the lines and music kept more than ``keep_days`` days ago (0: keep them all),
    and the temporary files a process that died mid-write left; the count removed. A line
    removed is read, and billed, again the next time it is rendered. One listing of each
    folder, a modification time per file: for a large bucket, an S3 lifecycle rule on
    these prefixes does the same without the listing."""
    now = timezone.now()
    removed = 0
    for folder in FOLDERS:
        for name in _kept_files(folder):
            partial = name.endswith(PART_SUFFIX)
            if not (partial or keep_days):
                continue
            limit = PART_GRACE if partial else timedelta(days=keep_days)
            try:
                if now - default_storage.get_modified_time(name) <= limit:
                    continue
                default_storage.delete(name)
                removed += 1
            except Exception as exc:  # a file gone meanwhile, storage out of reach: later
                logger.warning("speech cache: could not prune %s (%s)", name, exc)
    if removed:
        logger.info("speech cache: %d file(s) pruned", removed)
    return removed


def _kept_files(folder: str) -> list[str]:
    """Every file under ``folder`` (its two-character subfolders), or none when storage
    cannot list it now."""
    try:
        shards, _ = default_storage.listdir(folder)
        return [
            f"{folder}/{shard}/{name}"
            for shard in shards
            for name in default_storage.listdir(f"{folder}/{shard}")[1]
        ]
    except FileNotFoundError:  # the file system, before the first file
        return []
    except Exception as exc:
        logger.warning("speech cache: could not list %s (%s)", folder, exc)
        return []
