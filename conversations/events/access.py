"""Whether the reader of an open stream or long poll may still read its run: checked when
it opens, and again at a wake-up only after an access change was heard for that reader
(``run_wakeups.access_generation``: a dictionary read per wake-up, a query only then). A
member removed from the workspace, or an account deactivated, loses an open stream at
its next wake-up, which the change itself causes."""

from __future__ import annotations

import uuid

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from adstudio.db.connection import release_connection
from conversations.events.wakeups import run_wakeups
from conversations.selectors import runs_for

REVOKED_MESSAGE = "You may no longer read this run."


class ReaderAccess:
    def __init__(self, user, run_id: uuid.UUID) -> None:
        self.user_id = user.pk
        self.run_id = run_id
        self.seen = run_wakeups.access_generation(user.pk)

    def changed(self) -> bool:
        """An access change was heard for this reader since the last check (a wait on
        the run's events ends, for the check)."""
        return run_wakeups.access_generation(self.user_id) != self.seen

    def _unchanged(self) -> bool:
        now = run_wakeups.access_generation(self.user_id)
        if now == self.seen:
            return True
        self.seen = now
        return False

    def allowed(self) -> bool:
        return self._unchanged() or _may_read(self.user_id, self.run_id)

    async def aallowed(self) -> bool:
        if self._unchanged():
            return True
        return await sync_to_async(_may_read, thread_sensitive=False)(self.user_id, self.run_id)


def _may_read(user_id, run_id: uuid.UUID) -> bool:
    """The reader, as the database holds them now, may see the run."""
    try:
        user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
        return user is not None and runs_for(user).filter(pk=run_id).exists()
    finally:
        release_connection()
