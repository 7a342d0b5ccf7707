"""One conversation per ad at a time, kept by the database: parallel first messages land
in one conversation."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from conversations.models import Conversation, Run
from conversations.run_request import RunRequest
from conversations.services import chat_message_send

PARALLEL = 16


@pytest.mark.django_db(transaction=True)
def test_parallel_first_messages_make_one_conversation(user, make_ad, monkeypatch):
    ad = make_ad()
    # The runs are not what this is about: queued, not executed.
    monkeypatch.setattr("conversations.services.run_enqueue", lambda run_id: None)
    all_looked = threading.Barrier(PARALLEL, timeout=20)
    errors: list[BaseException] = []

    def first_message(n: int) -> None:
        try:
            all_looked.wait()  # each request found no conversation (the view passes None)
            chat_message_send(
                request=RunRequest(user=user, ad=ad, conversation=None, text=f"message {n}")
            )
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first_message, args=(n,)) for n in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors, errors
    conversation = Conversation.objects.get(ad=ad)
    assert Run.objects.filter(conversation=conversation).count() == PARALLEL


@pytest.mark.django_db
def test_the_database_refuses_a_second_current_conversation(make_ad):
    ad = make_ad()
    Conversation.objects.create(ad=ad)

    with (
        pytest.raises(IntegrityError, match="conversation_one_current_per_ad"),
        transaction.atomic(),
    ):
        Conversation.objects.create(ad=ad)
