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

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from speech.base import SpeechRequest

logger = logging.getLogger(__name__)

FOLDER = "speech"


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
