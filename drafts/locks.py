"""Row locks for the Ad aggregate.

Every service that changes an ad's drafts takes the ad's row lock first, so version
numbering and activation of one ad are serialised while different ads never wait on
each other.
"""

from __future__ import annotations

import uuid

from drafts.models import Ad


def ad_lock(*, ad_id: uuid.UUID) -> Ad:
    """Lock and return the ad; must be called inside ``transaction.atomic()``."""
    return Ad.objects.select_for_update().get(pk=ad_id)
