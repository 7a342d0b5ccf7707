"""Which music makers are configured, and the maker for a name: one adapter per
configuration, kept (each holds a connection pool). The settings are
``ADSTUDIO_MUSIC_PROVIDERS``, read from the environment by ``speech.configuration``."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings

from speech.mubert import MubertMusic

# Maker name (the drafts' ``musicProvider``) -> its adapter class.
MAKERS = {"mubert": MubertMusic}
# The settings an entry must hold for its maker to work.
REQUIRED = {"mubert": ("customer_id", "access_token")}


def music_entry(name: str) -> dict[str, Any]:
    return dict((getattr(settings, "ADSTUDIO_MUSIC_PROVIDERS", {}) or {}).get(name) or {})


def is_configured(name: str) -> bool:
    """Whether ``name`` has an adapter and every credential it needs is set."""
    entry = music_entry(name)
    return name in MAKERS and all(entry.get(field) for field in REQUIRED[name])


def music_maker(name: str) -> MubertMusic | None:
    """The maker for ``name`` as configured now, or None when it is not configured (the
    render keeps its placeholder bed)."""
    if not is_configured(name):
        return None
    entry = music_entry(name)
    return _maker(name, tuple(sorted((k, str(v)) for k, v in entry.items() if v)))


@cache
def _maker(name: str, entry: tuple[tuple[str, str], ...]) -> MubertMusic:
    return MAKERS[name](**dict(entry))
