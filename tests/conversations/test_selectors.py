"""Reads that wait: a long poll on a run's events."""

from __future__ import annotations

import pytest
from django.db import connection

from conversations import selectors
from conversations.models import Conversation, Run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_long_poll_waits_without_holding_a_database_connection(ad, monkeypatch):
    # given a queued run with no events yet
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")
    holding: list[bool] = []
    monkeypatch.setattr(selectors.time, "sleep", lambda _: holding.append(connection.connection))

    # when a client long-polls its events
    events = selectors.run_events(run=run, after=0, wait=0.05, poll=0.01)

    # then it got none, and each wait happened with the connection back in the pool
    assert events == []
    assert holding and all(held is None for held in holding)
