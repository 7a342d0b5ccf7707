"""Refusals raised by the domain (services and access checks) that every interface turns
into its own answer: the API into 403 or 409 with the ``code``, the admin and the
terminal chat into a message. The domain stays free of HTTP."""

from __future__ import annotations


class Refusal(Exception):
    code = "refused"


class NotAllowed(Refusal):
    """The caller may see the object, but may not do this to it."""

    code = "not_allowed"


class StateConflict(Refusal):
    """The object's state forbids the change (archived, the last admin, ...)."""

    code = "conflict"
