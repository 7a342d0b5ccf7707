"""The move to workspaces on a database of ads owned by users, and back."""

from __future__ import annotations

import pytest

from tests.support.migrations import migrate_to, migrate_to_latest

BEFORE = [
    ("drafts", "0006_reviewers_group"),
    ("conversations", "0007_run_resumes_and_enqueued_at"),
]
AFTER = [
    ("drafts", "0007_workspaces_archive_and_protected_records"),
    ("conversations", "0008_one_conversation_per_ad_and_protected_records"),
]


@pytest.mark.django_db(transaction=True)
def test_every_user_gets_a_personal_workspace_with_their_ads_and_back(django_user_model):
    alice = django_user_model.objects.create_user(username="alice")
    bob = django_user_model.objects.create_user(username="bob")
    django_user_model.objects.create_user(username="carol")  # owns no ad: a workspace too
    old = migrate_to(BEFORE)
    try:
        old_ad = old.get_model("drafts", "Ad")
        old_conversation = old.get_model("conversations", "Conversation")
        brief = {"client": "c", "language": "th", "duration_s": 30}
        alices = [old_ad.objects.create(owner_id=alice.pk, title=f"a{n}", **brief) for n in (1, 2)]
        bobs = old_ad.objects.create(owner_id=bob.pk, title="b", **brief)
        older = old_conversation.objects.create(ad_id=alices[0].pk)
        newer = old_conversation.objects.create(ad_id=alices[0].pk)

        # Read with the models as they were there: today's have columns added since.
        new = migrate_to(AFTER)
        workspaces = {
            w.personal_for.username: w
            for w in new.get_model("workspaces", "Workspace").objects.select_related("personal_for")
        }
        owned = {
            ad.title: ad.workspace.name
            for ad in new.get_model("drafts", "Ad").objects.select_related("workspace")
        }
        roles = set(
            new.get_model("workspaces", "Membership").objects.values_list(
                "user__username", "workspace__name", "role"
            )
        )
        superseded = dict(
            new.get_model("conversations", "Conversation").objects.values_list(
                "pk", "superseded_at"
            )
        )

        migrate_to(BEFORE)
        ads_after_reverse = set(old_ad.objects.values_list("title", "owner_id"))
    finally:
        migrate_to_latest()

    assert set(workspaces) == {"alice", "bob", "carol"}
    assert owned == {"a1": "alice's workspace", "a2": "alice's workspace", "b": "bob's workspace"}
    assert roles == {(name, f"{name}'s workspace", "admin") for name in ("alice", "bob", "carol")}
    assert superseded[older.pk] is not None and superseded[newer.pk] is None
    assert ads_after_reverse == {("a1", alice.pk), ("a2", alice.pk), ("b", bobs.owner_id)}
