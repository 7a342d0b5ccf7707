"""Row locks for the Ad aggregate.

Activation and a draft written on its own take the ad's row lock first, so they are
serialised per ad while different ads never wait on each other. A tool call's draft is
numbered without it: the unique version constraint refuses a number taken meanwhile
(``drafts.services.draft_create``).
"""

from __future__ import annotations

import uuid

from django.db import connection

from drafts.models import Ad


def ad_lock(*, ad_id: uuid.UUID) -> None:
    """Lock the ad's row (``Ad.DoesNotExist`` if there is none); must be called inside
    ``transaction.atomic()``. It reads nothing but the lock: callers that need the ad
    have it."""
    # Plain SQL: it runs in every draft-writing tool call, and compiling the queryset cost
    # more than the lock.
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {Ad._meta.db_table} WHERE id = %s{lock}",
            [Ad._meta.pk.get_db_prep_value(ad_id, connection)],
        )
        if cursor.fetchone() is None:
            raise Ad.DoesNotExist(f"Ad {ad_id} does not exist.")
