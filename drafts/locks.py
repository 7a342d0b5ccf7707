"""Row locks for the Ad aggregate.

Every service that changes an ad's drafts takes the ad's row lock first, so version
numbering and activation of one ad are serialised while different ads never wait on
each other.
"""

from __future__ import annotations

import uuid

from drafts.models import Ad


def ad_lock(*, ad_id: uuid.UUID) -> None:
    """Lock the ad's row (``Ad.DoesNotExist`` if there is none); must be called inside
    ``transaction.atomic()``. It reads nothing but the lock: callers that need the ad
    have it."""
    if not Ad.objects.select_for_update().filter(pk=ad_id).values_list("pk").exists():
        raise Ad.DoesNotExist(f"Ad {ad_id} does not exist.")
