"""Every admin page renders for staff and is refused to everybody else."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from conversations.models import Conversation, Message, ModelCall, Run, RunEvent
from drafts.models import Draft, DraftStatus
from drafts.services import draft_create
from tests.support.versions import music
from voices.models import Voice

pytestmark = pytest.mark.django_db


@pytest.fixture
def objects(ad):
    voice = Voice.objects.create(
        provider="elevenlabs",
        provider_voice_id="v1",
        name="Somchai",
        language="th",
        gender="male",
        metadata={"labels": {"accent": "central"}},
    )
    draft, _ = draft_create(ad=ad, version=music("<b>upbeat</b> pop"))
    conversation = Conversation.objects.create(ad=ad, provider="demo", model="demo")
    run = Run.objects.create(conversation=conversation, input_text="make it upbeat")
    Message.objects.create(conversation=conversation, seq=1, role="user", text="hi", run=run)
    Message.objects.create(
        conversation=conversation,
        seq=2,
        role="assistant",
        run=run,
        tool_calls=[
            {
                "id": "call_1",
                "name": "search_voices",
                "arguments": {"language": "th"},
                "raw_arguments": '{"language":"th"}',
            }
        ],
    )
    Message.objects.create(
        conversation=conversation,
        seq=3,
        role="tool",
        tool_call_id="call_1",
        name="search_voices",
        text='{"voices": []}',
        run=run,
    )
    ModelCall.objects.create(run=run, round=1, provider="demo", model="demo")
    RunEvent.objects.create(run=run, seq=1, type="run.started", data={"x": 1})
    return {
        "voices_voice": voice,
        "drafts_ad": ad,
        "drafts_draft": draft,
        "conversations_conversation": conversation,
        "conversations_run": run,
    }


@pytest.mark.parametrize(
    "model",
    [
        "voices_voice",
        "drafts_ad",
        "drafts_draft",
        "conversations_conversation",
        "conversations_run",
    ],
)
def test_staff_see_changelist_and_change_view(client, staff_user, objects, model):
    client.force_login(staff_user)
    obj = objects[model]

    changelist = client.get(reverse(f"admin:{model}_changelist"))
    change = client.get(reverse(f"admin:{model}_change", args=[obj.pk]))

    assert changelist.status_code == 200
    assert change.status_code == 200
    assert str(obj.pk) in changelist.content.decode()


def test_the_draft_page_reads_the_payload_escaped(client, staff_user, objects):
    client.force_login(staff_user)
    draft_page = client.get(
        reverse("admin:drafts_draft_change", args=[objects["drafts_draft"].pk])
    ).content.decode()

    assert "&lt;b&gt;upbeat&lt;/b&gt; pop" in draft_page  # never raw HTML from a payload
    assert "<b>upbeat</b>" not in draft_page


@pytest.mark.parametrize(
    "model",
    [
        "voices_voice",
        "drafts_ad",
        "drafts_draft",
        "conversations_conversation",
        "conversations_run",
    ],
)
def test_non_staff_are_refused(client, user, objects, model):
    client.force_login(user)
    response = client.get(reverse(f"admin:{model}_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("admin:drafts_draft_changelist"))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


def test_activate_action_activates_and_reports(client, staff_user, ad):
    v1, _ = draft_create(ad=ad, version=music())
    v2, _ = draft_create(ad=ad, version=music())
    client.force_login(staff_user)
    url = reverse("admin:drafts_draft_changelist")

    client.post(url, {"action": "activate", "_selected_action": [str(v1.pk)]})
    response = client.post(
        url, {"action": "activate", "_selected_action": [str(v2.pk)]}, follow=True
    )

    assert "Activated music v2 (archived v1)." in response.content.decode()
    assert Draft.objects.get(pk=v2.pk).status == DraftStatus.ACTIVE
    assert Draft.objects.get(pk=v1.pk).status == DraftStatus.ARCHIVED


def test_activate_action_refuses_two_versions_of_one_kind(client, staff_user, ad):
    v1, _ = draft_create(ad=ad, version=music())
    v2, _ = draft_create(ad=ad, version=music())
    client.force_login(staff_user)

    response = client.post(
        reverse("admin:drafts_draft_changelist"),
        {"action": "activate", "_selected_action": [str(v1.pk), str(v2.pk)]},
        follow=True,
    )

    page = response.content.decode()
    assert "Activated music v2 (archived v1)." in page
    assert "Skipped" in page
    assert list(Draft.objects.filter(status="active").values_list("pk", flat=True)) == [v2.pk]


def test_voice_bulk_approve_and_unapprove(client, staff_user):
    voices = [
        Voice.objects.create(
            provider="p",
            provider_voice_id=str(uuid.uuid4()),
            name=f"V{i}",
            language="en",
            gender="female",
        )
        for i in range(3)
    ]
    client.force_login(staff_user)
    url = reverse("admin:voices_voice_changelist")
    ids = [str(v.pk) for v in voices[:2]]

    response = client.post(url, {"action": "approve", "_selected_action": ids}, follow=True)
    assert "Approved 2 voice(s)." in response.content.decode()
    assert set(Voice.objects.filter(approved=True).values_list("name", flat=True)) == {"V0", "V1"}

    client.post(url, {"action": "unapprove", "_selected_action": ids[:1]})
    assert set(Voice.objects.filter(approved=True).values_list("name", flat=True)) == {"V1"}


def test_draft_payload_cannot_be_edited_in_admin(client, staff_user, ad):
    draft, _ = draft_create(ad=ad, version=music("calm"))
    client.force_login(staff_user)
    url = reverse("admin:drafts_draft_change", args=[draft.pk])

    client.post(url, {"payload": '{"musicPrompt": "hacked"}', "status": "active"})

    draft.refresh_from_db()
    assert draft.payload["musicPrompt"] == "calm"
    assert draft.status == DraftStatus.DRAFT


def test_requeue_action_requeues_failed_runs_only(client, staff_user, ad, make_ad, settings):
    from django.utils import timezone

    from conversations.models import Conversation, Run

    conversation = Conversation.objects.create(ad=ad, prompt_tokens=100)
    failed = Run.objects.create(
        conversation=conversation,
        input_text="x",
        status="failed",
        finished_at=timezone.now(),
        error_code="transient",
        prompt_tokens=100,
    )
    done = Run.objects.create(
        conversation=Conversation.objects.create(ad=make_ad(title="Done")),
        input_text="y",
        status="succeeded",
        finished_at=timezone.now(),
    )
    client.force_login(staff_user)

    response = client.post(
        reverse("admin:conversations_run_changelist"),
        {"action": "requeue", "_selected_action": [str(failed.pk), str(done.pk)]},
        follow=True,
    )

    page = response.content.decode()
    assert "Requeued 1 run(s)." in page and "Skipped 1 run(s)" in page
    failed.refresh_from_db()
    assert failed.status == "queued" and failed.error_code == "" and failed.finished_at is None
    conversation.refresh_from_db()
    assert conversation.prompt_tokens == 0  # added back in full when the run finishes
    assert Run.objects.get(pk=done.pk).status == "succeeded"


def test_stats_page_renders_for_staff_only(client, staff_user, user, objects):
    client.force_login(staff_user)
    page = client.get(reverse("admin:agent-stats") + "?days=30")
    assert page.status_code == 200
    assert "Agent statistics, last 30 day(s)" in page.content.decode()
    assert "search_voices" in page.content.decode()
    assert "Argument repair rate" in page.content.decode()
    assert "Cost / conversation" in page.content.decode()

    client.force_login(user)
    assert client.get(reverse("admin:agent-stats")).status_code == 302


def test_staff_cannot_delete_a_draft(client, staff_user, ad):
    draft, _ = draft_create(ad=ad, version=music())
    client.force_login(staff_user)

    page = client.get(reverse("admin:drafts_draft_delete", args=[draft.pk]))
    bulk = client.post(
        reverse("admin:drafts_draft_changelist"),
        {"action": "delete_selected", "_selected_action": [str(draft.pk)], "post": "yes"},
    )

    assert page.status_code == 403
    assert bulk.status_code in (200, 302)  # the action is not offered: nothing happens
    assert Draft.objects.filter(pk=draft.pk).exists()


def test_every_list_finds_a_row_by_its_id(admin_client, objects):
    """A voice by the number drafts call its ``voiceId``; conversations and runs by their
    UUID (their lists' own tests cover short ids)."""
    voice = objects["voices_voice"]
    other = Voice.objects.create(
        provider="elevenlabs", provider_voice_id="v2", name="Araya", language="th", gender="female"
    )
    voices = admin_client.get(reverse("admin:voices_voice_changelist"), {"q": str(other.pk)})
    too_big = admin_client.get(reverse("admin:voices_voice_changelist"), {"q": "9" * 30})
    run = objects["conversations_run"]
    runs = admin_client.get(reverse("admin:conversations_run_changelist"), {"q": str(run.pk)})

    assert ">Araya<" in voices.content.decode() and ">Somchai<" not in voices.content.decode()
    assert too_big.status_code == 200 and "0 voices" in too_big.content.decode()
    assert str(run.pk)[:8] in runs.content.decode() and "1 run" in runs.content.decode()
    assert voice.pk != other.pk
