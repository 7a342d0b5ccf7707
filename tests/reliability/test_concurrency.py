"""50 clients chatting into 10 conversations at once, through the API and a real worker:
per conversation, turns are answered in submission order, each turn sees every earlier
turn, and draft versions have no gap or duplicate."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Conversation, Message, Run
from drafts.models import Draft
from testbed.fake_openai import Turn, call
from tests.support.worker import wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CONVERSATIONS = 10
CLIENTS_PER_CONVERSATION = 5
MESSAGES_PER_CLIENT = 2


def director(body: dict) -> Turn:
    """Each turn: one music draft, then a final answer."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return Turn(tool_calls=(call("create_music_draft", {"prompt": last["content"]}),))
    return Turn(text="done")


def test_fifty_clients_ten_conversations(worker, fake_openai, user, make_ad, settings):
    # One user sends all 100 turns here; the per-user run throttle has its own test.
    settings.ADSTUDIO_RUN_RATE = "1000/minute"
    fake_openai.responder = director
    token = token_create(user=user)[1]
    ads = [make_ad(language="en", title=f"ad {n}") for n in range(CONVERSATIONS)]
    conversations = [Conversation.objects.create(ad=ad) for ad in ads]
    submitted: dict[str, list[str]] = defaultdict(list)  # conversation -> texts, in order
    lock = threading.Lock()
    errors: list[str] = []
    barrier = threading.Barrier(CONVERSATIONS * CLIENTS_PER_CONVERSATION)

    def client(n: int) -> None:
        conversation = conversations[n % CONVERSATIONS]
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        barrier.wait(timeout=30)
        try:
            for m in range(MESSAGES_PER_CLIENT):
                text = f"conversation {n % CONVERSATIONS} client {n} message {m}"
                with lock:  # the order requests reach the server is the submission order
                    response = api.post(
                        f"/api/ads/{conversation.ad_id}/chat",
                        {"message": text, "conversationId": str(conversation.pk)},
                        format="json",
                    )
                    submitted[str(conversation.pk)].append(text)
                    # Hand the connection back to the pool, as a server does when a request
                    # ends (the test client skips that): 50 threads holding one each while
                    # they wait for the lock would starve the pool of 20.
                    connection.close()
                if response.status_code != 202:
                    errors.append(f"{response.status_code} {response.content[:200]!r}")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=client, args=(n,))
        for n in range(CONVERSATIONS * CLIENTS_PER_CONVERSATION)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors

    total = CONVERSATIONS * CLIENTS_PER_CONVERSATION * MESSAGES_PER_CLIENT
    deadline = time.monotonic() + 120
    for run in Run.objects.all():
        wait_until_finished(run, timeout=max(0.0, deadline - time.monotonic()))
    assert Run.objects.filter(status="succeeded").count() == total

    for conversation in conversations:
        users = list(
            Message.objects.filter(conversation=conversation, role="user")
            .order_by("seq")
            .values_list("text", flat=True)
        )
        assert users == submitted[str(conversation.pk)]
        versions = sorted(
            Draft.objects.filter(ad_id=conversation.ad_id).values_list("version", flat=True)
        )
        assert versions == list(range(1, len(users) + 1))

    # each turn's first request carried every earlier user turn of its conversation
    for body in fake_openai.requests:
        if body["messages"][-1]["role"] != "user":
            continue
        seen = [m["content"] for m in body["messages"] if m["role"] == "user"]
        key = seen[-1].split(" client ")[0]
        history = next(texts for texts in submitted.values() if texts[0].startswith(key + " "))
        assert seen == history[: len(seen)]
