"""The conversation and run pages as staff read them: a transcript of turns and tool cards
under run headers, paginated in a fixed number of queries; the lists that find and
summarise them; and nothing that edits or deletes the history."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from conversations.models import Conversation, Message, Run, RunStatus
from conversations.record.messages import draft_call_key
from conversations.staff.transcript import TRANSCRIPT_PAGE_SIZE, conversation_transcript
from drafts.services import draft_create
from tests.support.versions import music

pytestmark = pytest.mark.django_db


def conversation_page(client, conversation, **params) -> str:
    url = reverse("admin:conversations_conversation_change", args=[conversation.pk])
    response = client.get(url, params)
    assert response.status_code == 200
    return response.content.decode()


def text_of(html: str) -> str:
    """The page's words without tags, whitespace collapsed, as a reader sees them."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def conversation(ad):
    """A run that searched, wrote music v1 and answered, one of whose calls failed."""
    conversation = Conversation.objects.create(ad=ad)
    run = Run.objects.create(
        conversation=conversation,
        input_text="Tea shop",
        status=RunStatus.SUCCEEDED,
        provider="openai",
        model="gpt-4.1-mini",
        rounds=3,
        prompt_tokens=4321,
        cached_tokens=1024,
        completion_tokens=210,
        cost=Decimal("0.012345"),
        cost_exact=True,
        started_at=timezone.now() - timedelta(seconds=12.5),
        finished_at=timezone.now(),
    )
    rows = [
        {"role": "user", "text": "Brief: a <script>alert(1)</script> tea shop"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_s",
                    "name": "search_voices",
                    "arguments": {"language": "th", "gender": "female"},
                    "raw_arguments": '{"language":"th","gender":"female"}',
                },
                {
                    "id": "call_m",
                    "name": "create_music_draft",
                    "arguments": {"musicPrompt": "calm piano", "duration": 30},
                    "raw_arguments": '{"musicPrompt":"calm piano","duration":30}',
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_s", "name": "search_voices", "text": '{"n":0}'},
        {
            "role": "tool",
            "tool_call_id": "call_m",
            "name": "create_music_draft",
            "text": '{"error": "duration: must be at most 120"}',
            "is_error": True,
        },
        {"role": "assistant", "text": "Music v1 is ready."},
    ]
    for seq, row in enumerate(rows, start=1):
        Message.objects.create(conversation=conversation, seq=seq, run=run, **row)
    draft_create(
        ad=ad,
        version=music("calm piano"),
        run_id=run.pk,
        tool_call_id=draft_call_key(2, "call_m"),
    )
    return conversation


def test_the_conversation_reads_as_a_transcript(admin_client, conversation):
    html = conversation_page(admin_client, conversation)
    text = text_of(html)

    run = conversation.runs.get()
    # The run's header: status, provider and model, rounds, tokens, cost, its drafts.
    assert f'href="{reverse("admin:conversations_run_change", args=[run.pk])}"' in html
    assert 'class="run-status status-succeeded"' in html
    assert "openai / gpt-4.1-mini" in text
    assert "3 rounds" in text
    assert "prompt 4,321 · cached 1,024 · completion 210" in text
    assert "$0.0123" in text
    assert "Drafts: music v1" in text
    # Turns in order, the tool calls as cards with pretty arguments and their results.
    assert text.index("Brief: a") < text.index("search_voices") < text.index("Music v1 is ready.")
    assert "&quot;gender&quot;: &quot;female&quot;" in html  # pretty-printed, one per line
    assert "raw_arguments" not in html and "{&quot;language&quot;:&quot;th&quot;" not in html
    assert html.count('class="tool-card"') == 1  # search_voices: no error
    assert html.count('class="tool-card error"') == 1  # create_music_draft failed
    assert html.count('class="tool-badge error-badge"') == 1
    assert "duration: must be at most 120" in text
    # Model and user text are text, never markup.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html


def test_a_long_conversation_is_paginated_in_a_fixed_number_of_queries(admin_client, make_ad):
    def make(n: int) -> Conversation:
        """Turns of four: user, assistant calling a tool, the tool's result, answer; each
        conversation of an ad of its own."""
        conversation = Conversation.objects.create(ad=make_ad(title=f"{n} messages"))
        run = Run.objects.create(conversation=conversation, input_text="x")
        call = {"id": "c", "name": "search_voices", "arguments": {}, "raw_arguments": "{}"}
        shapes = [
            {"role": "user"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "name": "search_voices"},
            {"role": "assistant"},
        ]
        Message.objects.bulk_create(
            Message(
                conversation=conversation,
                run=run,
                seq=seq,
                text=f"message number {seq}",
                **shapes[(seq - 1) % 4],
            )
            for seq in range(1, n + 1)
        )
        return conversation

    conversation_page(admin_client, make(1))  # the session and caches warm
    counts = []
    for n in (10, 1000):
        conversation = make(n)
        with CaptureQueriesContext(connection) as queries:
            html = conversation_page(admin_client, conversation, page=2 if n > 10 else 1)
        counts.append(len(queries))
        if n == 1000:
            assert "message number 51<" in html and "message number 100<" in html
            assert "message number 50<" not in html and "message number 101<" not in html
            assert "messages 51\N{EN DASH}100 of 1,000" in text_of(html)
            assert "?page=3#transcript" in html

    assert counts[0] == counts[1]
    assert TRANSCRIPT_PAGE_SIZE == 50


def test_a_result_on_the_next_page_stays_with_its_call(conversation):
    transcript = conversation_transcript(conversation_id=conversation.pk, per_page=2)

    (turn_call,) = [t for s in transcript.sections for t in s.turns if t.cards]
    search, make_music = turn_call.cards
    assert (search.result_on_next_page, search.is_error) == (True, False)
    assert (make_music.result_on_next_page, make_music.is_error) == (True, True)
    assert make_music.draft is not None and make_music.draft.label == "v1"

    page_2 = conversation_transcript(conversation_id=conversation.pk, page=2, per_page=2)
    results = [card for s in page_2.sections for t in s.turns for card in t.cards]
    assert [(c.name, c.called, c.is_error) for c in results] == [
        ("search_voices", False, False),
        ("create_music_draft", False, True),
    ]
    assert page_2.sections[0].continued


def test_a_queued_run_without_messages_is_shown_after_the_last_page(admin_client, conversation):
    Run.objects.create(conversation=conversation, input_text="make the music more upbeat")

    text = text_of(conversation_page(admin_client, conversation))

    assert "No messages stored for this run. Its input: make the music more upbeat" in text
    assert "2 runs: queued 1 succeeded 1" in text


def test_the_run_page_shows_its_own_messages(admin_client, conversation):
    run = conversation.runs.get()
    response = admin_client.get(reverse("admin:conversations_run_change", args=[run.pk]))
    html = response.content.decode()

    assert 'class="transcript"' in html
    assert "Music v1 is ready." in html
    assert 'class="tool-card error"' in html


@pytest.mark.parametrize("model", ["conversation", "run"])
def test_the_history_cannot_be_edited_added_or_deleted(admin_client, conversation, model):
    obj = conversation if model == "conversation" else conversation.runs.get()
    change = reverse(f"admin:conversations_{model}_change", args=[obj.pk])

    html = admin_client.get(change).content.decode()
    posted = admin_client.post(change, {})
    deleted = admin_client.post(
        reverse(f"admin:conversations_{model}_delete", args=[obj.pk]), {"post": "yes"}
    )
    added = admin_client.get(reverse(f"admin:conversations_{model}_add"))
    changelist = admin_client.get(reverse(f"admin:conversations_{model}_changelist"))

    assert 'name="_save"' not in html and "deletelink" not in html
    assert posted.status_code == 403
    assert deleted.status_code == 403
    assert added.status_code == 403
    assert 'value="delete_selected"' not in changelist.content.decode()
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_the_conversation_list_shows_what_runs_used_and_finds_by_id(
    admin_client, conversation, make_ad
):
    other = Conversation.objects.create(ad=make_ad(title="Another ad"))
    url = reverse("admin:conversations_conversation_changelist")

    listing = text_of(admin_client.get(url).content.decode())
    by_id = admin_client.get(url, {"q": str(conversation.pk)}).content.decode()
    by_short_id = admin_client.get(url, {"q": str(other.pk)[:8]}).content.decode()

    assert "openai / gpt-4.1-mini" in listing  # the conversation's own fields are empty
    assert conversation.provider == ""
    assert "1 result" in text_of(by_id) and str(conversation.pk)[:8] in by_id
    assert "1 result" in text_of(by_short_id) and str(other.pk)[:8] in by_short_id


def test_the_runs_list_is_short_cells(admin_client, conversation):
    run = conversation.runs.get()
    html = admin_client.get(reverse("admin:conversations_run_changelist")).content.decode()
    text = text_of(html)

    assert str(run.pk)[:8] in text and str(run.pk) not in text
    assert 'class="run-status status-succeeded"' in html
    assert "4,321 / 210" in text
    assert "$0.0123" in text
