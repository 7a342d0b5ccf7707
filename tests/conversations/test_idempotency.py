"""An Idempotency-Key starts one run, however many requests carry it at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from conversations.models import Conversation, Run
from conversations.run_request import RunRequest
from conversations.services import IdempotencyKeyReused, run_once_per_key


@pytest.mark.django_db(transaction=True)
def test_two_racing_requests_with_one_key_make_one_run(user, ad):
    conversation = Conversation.objects.create(ad=ad)
    both_looked = threading.Barrier(2, timeout=10)
    results: list[tuple[Run, bool]] = []
    errors: list[Exception] = []

    def start() -> Run:
        both_looked.wait()  # each request has looked for the key's run and found none
        return Run.objects.create(
            conversation=conversation,
            requested_by=user,
            idempotency_key="k",
            idempotency_fingerprint="same request",
        )

    def request() -> None:
        try:
            results.append(
                run_once_per_key(
                    request=RunRequest(
                        user=user, idempotency_key="k", idempotency_fingerprint="same request"
                    ),
                    start=start,
                )
            )
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors
    assert len({run.pk for run, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, True]
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_a_key_sent_with_another_request_is_refused(user, ad):
    conversation = Conversation.objects.create(ad=ad)

    def start() -> Run:
        return Run.objects.create(
            conversation=conversation,
            requested_by=user,
            idempotency_key="k",
            idempotency_fingerprint="first",
        )

    run, created = run_once_per_key(
        request=RunRequest(user=user, idempotency_key="k", idempotency_fingerprint="first"),
        start=start,
    )
    assert created
    assert run_once_per_key(
        request=RunRequest(user=user, idempotency_key="k", idempotency_fingerprint="first"),
        start=start,
    ) == (run, False)
    with pytest.raises(IdempotencyKeyReused, match="'k'"):
        run_once_per_key(
            request=RunRequest(user=user, idempotency_key="k", idempotency_fingerprint="second"),
            start=start,
        )
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_a_duplicated_key_on_the_first_run_only(user, ad):
    """Runs two racing requests made before the constraint existed: the first keeps the
    key (a retry finds it), the later ones lose it, and the constraint can be added."""
    before = [("conversations", "0003_run_event_notify")]
    after = [("conversations", "0004_run_unique_idempotency_key")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old_apps = executor.loader.project_state(before).apps
        old_run = old_apps.get_model("conversations", "Run")
        conversation = old_apps.get_model("conversations", "Conversation").objects.create(
            ad_id=ad.pk
        )
        first, second, third, other = (
            old_run.objects.create(
                conversation_id=conversation.pk, requested_by_id=user.pk, idempotency_key=key
            )
            for key in ("k", "k", "k", "other")
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        keys = dict(Run.objects.values_list("pk", "idempotency_key"))
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    assert keys == {first.pk: "k", second.pk: "", third.pk: "", other.pk: "other"}
