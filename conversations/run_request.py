"""A user turn as it is asked for, in one value: built where the request is read (the
generate and chat views, the terminal chat, the evaluations runner) and handed whole to
the service that starts the run, so that what is only passed along (the idempotency key,
its fingerprint, the client's message id, the provider) is not a keyword of every
function on the way down to the run row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from conversations.models import Conversation
    from drafts.models import Ad


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """What a send needs. Who may send it is the caller's check (``workspaces.access``);
    the services take it as it is."""

    # who asks: the run's ``requested_by`` (None: nobody's, as in benchmarks and tests)
    user: AbstractBaseUser | None = None
    # the ad the turn is about; None only for generate's new ad, which it makes
    ad: Ad | None = None
    # the conversation to send into; None: the ad's current one, started if it has none
    conversation: Conversation | None = None
    # the user's words; a first turn sends them after the brief
    text: str = ""
    # asked for explicitly (it must be configured, and becomes the conversation's);
    # None: the routing chooses
    provider: str | None = None
    # the client's key for retries ("" without one): one run per user and key
    idempotency_key: str = ""
    # the request's digest, stored with its run: the key sent again with another
    # request is refused rather than answered with a run it did not ask for
    idempotency_fingerprint: str = ""
    # the id the web client gave the message, which the history keeps
    client_message_id: str = ""
