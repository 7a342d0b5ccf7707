"""The AI SDK's side of the API: a conversation as UIMessages and ModelMessages, and the
chat transport that stores a message and streams its run as the UI message stream.

The shapes are checked here by structure; tests/clients runs the real `ai` package's
validators and transport against a live server."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Conversation, Run, RunEvent
from conversations.run_request import RunRequest
from conversations.services import (
    NothingToRegenerate,
    brief_send,
    chat_regenerate,
    run_cancel,
    send_message,
)
from conversations.web.ui_types import ModelMessagePage, UIMessagePage
from drafts.models import Draft
from testbed.fake_openai import call, turn

pytestmark = pytest.mark.django_db(transaction=True)  # runs start when their row commits


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


@pytest.fixture
def conversation(fake_providers, en_ad, voices):
    """Generate (voices, music), then a chat with a failed tool call, then music v2."""
    jack = str(voices[0].pk)
    fake_providers.script(
        turn(tool_calls=[call("search_voices", {"language": "en", "count": 2})]),
        turn(
            "Writing.",
            tool_calls=[
                call("create_voice_draft", {"tracks": [{"voiceId": jack, "text": "Hello!"}]}),
                call("create_music_draft", {"prompt": "calm piano"}),
            ],
        ),
        turn("Voices v1 and music v1."),
        turn(
            tool_calls=[call("create_voice_draft", {"tracks": [{"voiceId": "999", "text": "Hi"}]})]
        ),
        turn("That voice does not exist."),
        turn(tool_calls=[call("create_music_draft", {"prompt": "upbeat pop"})]),
        turn("Music v2 is more upbeat."),
    )
    run = brief_send(request=RunRequest(ad=en_ad))
    send_message(request=RunRequest(conversation=run.conversation, text="Use voice 999"))
    send_message(
        request=RunRequest(conversation=run.conversation, text="Make the music more upbeat")
    )
    return Conversation.objects.get(pk=run.conversation_id)


def test_the_conversation_as_ui_messages(api, conversation):
    body = api.get(f"/api/conversations/{conversation.pk}/messages/ui/").json()

    UIMessagePage.model_validate(body)  # the operation's declared schema, exactly
    older = api.get(f"/api/conversations/{conversation.pk}/messages/?format=ui").json()
    assert older == body
    assert api.get(f"/api/ads/{conversation.ad_id}/conversation/ui").json() == body

    messages = body["results"]
    # The generation is its user turn (the brief as the director was given it) and its
    # reply; the two chat messages are the person's, as they wrote them.
    assert body["count"] == len(messages) == 6
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    runs = list(Run.objects.filter(conversation=conversation).order_by("created_at"))
    assert [m["id"] for m in messages[1::2]] == [f"run-{run.pk}" for run in runs]
    assert [m["id"] for m in messages[0::2]] == [f"user-{run.pk}" for run in runs]
    assert messages[0]["parts"] == [{"type": "text", "text": runs[0].input_text}]
    assert runs[0].input_text.startswith("Brief\n")
    messages = messages[1:]  # from the first reply on, as before
    first = messages[0]["parts"]
    assert [p["type"] for p in first] == [
        "data-brief",
        "step-start",
        "tool-search_voices",
        "step-start",
        "text",
        "tool-create_voice_draft",
        "tool-create_music_draft",
        "data-draft",  # after their tool parts, as the stream builds the message
        "data-draft",
        "step-start",
        "text",
    ]
    assert first[0] == {"type": "data-brief", "id": "brief", "data": runs[0].brief}
    assert runs[0].brief["language"] == "en" and "durationSeconds" in runs[0].brief
    music = first[6]
    assert music["state"] == "output-available"
    assert music["input"] == {"prompt": "calm piano"}
    assert music["output"]["versionId"] == "v1"
    draft = Draft.objects.get(kind="music", version=1)
    assert first[8] == {
        "type": "data-draft",
        "id": "draft-music-v1",
        "data": {
            "kind": "music",
            "version": "v1",
            "id": str(draft.pk),
            "toolCallId": music["toolCallId"],
        },
    }
    usage = messages[0]["metadata"]["usage"]
    assert messages[0]["metadata"]["status"] == "succeeded"
    assert usage["inputTokens"] == runs[0].prompt_tokens > 0
    failed = messages[2]["parts"][1]
    assert failed["type"] == "tool-create_voice_draft" and failed["state"] == "output-error"
    assert failed["errorText"].startswith("Unknown or unavailable voiceId(s): 999.")
    assert "output" not in failed
    assert messages[3]["parts"] == [{"type": "text", "text": "Make the music more upbeat"}]


def test_the_conversation_as_model_messages(api, conversation):
    body = api.get(f"/api/conversations/{conversation.pk}/messages/model/").json()

    ModelMessagePage.model_validate(body)
    assert api.get(f"/api/conversations/{conversation.pk}/messages/?format=model").json() == body
    assert api.get(f"/api/ads/{conversation.ad_id}/conversation/model").json() == body

    messages = body["results"]
    assert [m["role"] for m in messages[:5]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert messages[0]["content"].startswith("Brief\n")
    calls = messages[3]["content"]
    assert calls[0] == {"type": "text", "text": "Writing."}
    assert [c["toolName"] for c in calls[1:]] == ["create_voice_draft", "create_music_draft"]
    results = messages[4]["content"]  # two results of one assistant message: one message
    assert [r["output"]["type"] for r in results] == ["json", "json"]
    failed = next(
        m
        for m in messages
        if m["role"] == "tool" and m["content"][0]["output"]["type"] == "error-json"
    )
    assert failed["content"][0]["output"]["value"]["error"].startswith("Unknown or unavailable")


def _user_turns(api, conversation) -> tuple[list[str], list[str]]:
    """The user turns of the UI history and of the model history, as their texts."""
    ui = api.get(f"/api/conversations/{conversation.pk}/messages/ui/").json()["results"]
    model = api.get(f"/api/conversations/{conversation.pk}/messages/model/").json()["results"]
    return (
        [m["parts"][0]["text"] for m in ui if m["role"] == "user"],
        [m["content"] for m in model if m["role"] == "user"],
    )


def test_a_generation_is_the_same_user_turn_in_both_histories(api, fake_providers, en_ad):
    fake_providers.script(turn("Here is a first idea."))
    run = brief_send(request=RunRequest(ad=en_ad))  # the brief, and no message of anyone's

    ui, model = _user_turns(api, run.conversation)

    assert ui == model == [Run.objects.get(pk=run.pk).input_text]
    assert ui[0].startswith("Brief\nClient: ")


def test_a_message_cancelled_while_queued_is_in_neither_history(api, conversation):
    before = _user_turns(api, conversation)
    queued = Run.objects.create(conversation=conversation, input_text="Never mind this one")
    assert queued.status == "queued"
    shown = api.get(f"/api/conversations/{conversation.pk}/messages/ui/").json()["results"]
    assert shown[-1]["parts"] == [{"type": "text", "text": "Never mind this one"}]  # queued

    run_cancel(run=queued)

    queued.refresh_from_db()
    assert queued.status == "cancelled" and queued.started_at is None
    assert queued.events.exists()  # its stream said it ended; still no turn of its own
    ui, model = _user_turns(api, conversation)
    assert ui == model and (ui, model) == before
    ids = [
        m["id"] for m in api.get(f"/api/ads/{conversation.ad_id}/conversation/ui").json()["results"]
    ]
    assert f"run-{queued.pk}" not in ids and f"user-{queued.pk}" not in ids


def test_the_default_shape_is_unchanged_and_an_unknown_format_is_refused(api, conversation):
    default = api.get(f"/api/ads/{conversation.ad_id}/conversation").json()["results"]
    assert default[1]["parts"][0]["type"] == "tool-call"
    assert api.get(f"/api/ads/{conversation.ad_id}/conversation?format=ui").status_code == 200
    assert api.get(f"/api/ads/{conversation.ad_id}/conversation?format=xml").status_code == 404


def stream_chunks(response) -> tuple[list[dict], str]:
    """The UI message stream's chunks, and what came after the last one."""
    body = b"".join(response.streaming_content).decode()
    events = [e for e in body.split("\n\n") if e.strip()]
    chunks = []
    for event in events[:-1]:
        data = [line[6:] for line in event.splitlines() if line.startswith("data: ")]
        if data:
            chunks.append(json.loads(data[0]))
    return chunks, events[-1]


def transport_body(text: str, message_id: str = "msg-1", chat_id: str = "chat-1") -> dict:
    """What DefaultChatTransport posts for useChat's sendMessage."""
    return {
        "id": chat_id,
        "messages": [
            {"id": "old", "role": "user", "parts": [{"type": "text", "text": "earlier"}]},
            {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]},
        ],
        "trigger": "submit-message",
    }


def test_the_transport_stores_the_message_and_streams_its_run(api, fake_providers, conversation):
    fake_providers.script(
        turn(tool_calls=[call("create_music_draft", {"prompt": "bright synth pop"})]),
        turn("Music v3 is brighter."),
    )

    response = api.post(
        f"/api/ads/{conversation.ad_id}/ui-chat",
        transport_body("Brighter music, please"),
        format="json",
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["X-Vercel-AI-UI-Message-Stream"] == "v1"
    chunks, end = stream_chunks(response)
    run = Run.objects.filter(conversation=conversation).order_by("-created_at").first()
    assert run.input_text == "Brighter music, please"  # the last message, not the history
    assert end == "data: [DONE]"
    types = [c["type"] for c in chunks]
    deltas = types.count("text-delta")  # the first words at once, the rest with the step
    assert types == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-output-available",
        "data-draft",
        "finish-step",
        "start-step",
        "text-start",
        *["text-delta"] * deltas,
        "text-end",
        "finish-step",
        "finish",
    ]
    assert deltas >= 1
    assert chunks[0]["messageId"] == f"run-{run.pk}"
    assert chunks[2]["toolName"] == "create_music_draft"
    assert chunks[2]["input"] == {"prompt": "bright synth pop"}
    assert chunks[3]["output"]["versionId"] == "v3"
    assert chunks[4]["data"]["kind"] == "music" and chunks[4]["data"]["version"] == "v3"
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "Music v3 is brighter."
    assert chunks[-1]["finishReason"] == "stop"
    assert chunks[-1]["messageMetadata"] == {
        "runId": str(run.pk),
        "status": "succeeded",
        "usage": {
            "inputTokens": run.prompt_tokens,
            "outputTokens": run.completion_tokens,
            "totalTokens": run.prompt_tokens + run.completion_tokens,
        },
    }


def test_regenerate_replaces_only_the_last_finished_reply(api, conversation):
    url = f"/api/ads/{conversation.ad_id}/ui-chat"
    last = Run.objects.filter(conversation=conversation).order_by("-created_at").first()
    body = {**transport_body("Make the music more upbeat"), "trigger": "regenerate-message"}

    older = api.post(url, {**body, "messageId": "run-not-the-last"}, format="json")
    assert older.status_code == 409
    assert older.json()["error"]["code"] == "nothing_to_regenerate"
    Run.objects.filter(pk=last.pk).update(status="running", finished_at=None)
    running = api.post(url, body, format="json")
    assert running.status_code == 409
    assert Run.objects.filter(conversation=conversation).count() == 3  # nothing started


def test_two_regenerates_at_once_make_one_run(fake_providers, conversation, user):
    """The second waits for the first's lock on the last run, then finds it replaced."""
    fake_providers.script(turn("Music v2, once more."))
    first_holds = threading.Event()
    outcomes: list[str] = []

    def second() -> None:
        first_holds.wait(10)
        try:
            chat_regenerate(conversation=conversation, user=user)
            outcomes.append("regenerated")
        except NothingToRegenerate as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    thread = threading.Thread(target=second)
    thread.start()
    with transaction.atomic():
        run = chat_regenerate(conversation=conversation, user=user)
        first_holds.set()
        time.sleep(0.5)  # the second is now waiting on the last run's lock
    thread.join(20)

    assert outcomes == ["This reply is being written again already."]
    assert Run.objects.filter(conversation=conversation, replaces__isnull=False).count() == 1
    assert Run.objects.get(pk=run.pk).replaces_id is not None


def test_the_same_message_id_sent_again_streams_the_same_run(api, fake_providers, conversation):
    fake_providers.script(turn("Noted."))
    url = f"/api/ads/{conversation.ad_id}/ui-chat"
    first = api.post(url, transport_body("Note this", message_id="m-42"), format="json")
    again = api.post(url, transport_body("Note this", message_id="m-42"), format="json")
    other = api.post(url, transport_body("Something else", message_id="m-42"), format="json")

    first_chunks, _ = stream_chunks(first)
    again_chunks, _ = stream_chunks(again)
    assert again_chunks == first_chunks
    assert Run.objects.filter(conversation=conversation, input_text="Note this").count() == 1
    assert other.status_code == 400 and "messages" in other.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("messages", "status"),
    [
        ([], 400),
        ([{"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}], 400),
        ([{"id": "a", "role": "user", "parts": [{"type": "file", "url": "x"}]}], 400),
        ([{"id": "a", "role": "user", "parts": "text"}], 400),
        ([{"id": "a", "role": "user", "parts": [{"type": "text", "text": "x" * 5000}]}], 413),
    ],
)
def test_a_body_that_is_not_a_users_message_is_refused(api, en_ad, messages, status):
    response = api.post(
        f"/api/ads/{en_ad.pk}/ui-chat", {"id": "c", "messages": messages}, format="json"
    )
    assert response.status_code == status
    assert not Run.objects.exists()


def test_another_users_ad_is_404(other_user, en_ad):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=other_user)[1]}")
    response = client.post(f"/api/ads/{en_ad.pk}/ui-chat", transport_body("hi"), format="json")
    assert response.status_code == 404
    assert not Run.objects.exists()


def test_resume_replays_the_run_in_progress_and_answers_204_without_one(api, en_ad):
    conversation = Conversation.objects.create(ad=en_ad)
    url = f"/api/ads/{en_ad.pk}/ui-chat/{conversation.pk}/stream"
    assert api.get(url).status_code == 204  # nothing in progress

    run = Run.objects.create(conversation=conversation, input_text="hi", status="running")
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, seq=1, type="run.started", data={"resumed": False}),
            RunEvent(run=run, seq=2, type="model_call.started", data={"round": 1}),
            RunEvent(run=run, seq=3, type="text", data={"delta": "Hel"}),
        ]
    )

    def finish_later() -> None:  # as a run's finish does: its last event with its status
        time.sleep(0.5)
        try:
            with transaction.atomic():
                RunEvent.objects.bulk_create(
                    [
                        RunEvent(run=run, seq=4, type="text", data={"delta": "lo"}),
                        RunEvent(
                            run=run,
                            seq=5,
                            type="run.finished",
                            data={
                                "status": "succeeded",
                                "stopCause": "final_answer",
                                "errorCode": "",
                            },
                        ),
                    ]
                )
                Run.objects.filter(pk=run.pk).update(status="succeeded", finished_at=timezone.now())
        finally:
            # This thread's pooled connection, handed back: left checked out, it outlived
            # the session and the test database could not be dropped.
            connection.close()

    finisher = threading.Thread(target=finish_later)
    finisher.start()
    chunks, end = stream_chunks(api.get(url))
    finisher.join()

    assert end == "data: [DONE]"
    assert [c["type"] for c in chunks] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == "Hello"
    assert api.get(url).status_code == 204  # finished: nothing to resume


def test_resume_with_last_event_id_continues_after_it(api, en_ad):
    conversation = Conversation.objects.create(ad=en_ad)
    run = Run.objects.create(conversation=conversation, input_text="hi", status="running")
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, seq=1, type="model_call.started", data={"round": 1}),
            RunEvent(run=run, seq=2, type="text", data={"text": "Done."}),
            RunEvent(
                run=run,
                seq=3,
                type="run.finished",
                data={"status": "failed", "stopCause": "error", "errorCode": "timeout"},
            ),
        ]
    )
    Run.objects.filter(pk=run.pk).update(error_message="The run took too long.")
    url = f"/api/ads/{en_ad.pk}/ui-chat/{conversation.pk}/stream"

    # The client had the first five chunks: start, start-step, and the text's three.
    chunks, _ = stream_chunks(api.get(url, HTTP_LAST_EVENT_ID="5"))

    metadata = {
        "runId": str(run.pk),
        "status": "failed",
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        "error": "The run took too long.",
    }
    assert chunks == [
        {"type": "finish-step"},
        # useChat reads nothing after an error: the message's metadata comes before it.
        {"type": "message-metadata", "messageMetadata": metadata},
        {"type": "error", "errorText": "The run took too long."},
        {"type": "finish", "finishReason": "error", "messageMetadata": metadata},
    ]


def numbered_chunks(response) -> list[tuple[int, str]]:
    """Each server-sent event of a UI message stream as (its id, its data); [DONE] as
    (0, "[DONE]")."""
    body = b"".join(response.streaming_content).decode()
    events = []
    for event in (e for e in body.split("\n\n") if e.strip()):
        lines = dict(line.split(": ", 1) for line in event.splitlines() if ": " in line)
        if "data" in lines:
            events.append((int(lines.get("id", 0)), lines["data"]))
    return events


def test_a_resume_after_any_chunk_continues_exactly_where_the_client_stopped(api, en_ad):
    """Every chunk has its own id, strictly increasing; for every cut point k, the chunks
    up to k and the stream resumed after k's id are the whole stream, chunk for chunk."""
    conversation = Conversation.objects.create(ad=en_ad)
    run = Run.objects.create(conversation=conversation, input_text="hi", status="running")
    kinds = [
        ("run.started", {"resumed": False}),
        ("model_call.started", {"round": 1}),
        ("text", {"delta": "I kept the "}),
        ("text", {}),  # a provider reset: the attempt's text ends
        ("model_call.started", {"round": 1}),
        ("text", {"delta": "Here "}),
        ("text", {"delta": "it is."}),
        (
            "tool_call.started",
            {"toolCallId": "c1", "name": "create_music_draft", "arguments": {"prompt": "pop"}},
        ),
        ("tool_call.finished", {"toolCallId": "c1", "isError": False, "result": {"ok": 1}}),
        ("draft.created", {"kind": "music", "version": 1, "draftId": 7, "toolCallId": "c1"}),
        (
            "tool_call.started",
            {"toolCallId": "c2", "name": "create_voice_draft", "arguments": {"tracks": []}},
        ),
        (
            "tool_call.finished",
            {"toolCallId": "c2", "isError": True, "result": {"error": "No tracks."}},
        ),
        ("model_call.started", {"round": 2}),
        ("text", {"text": "Music v1 is ready."}),
        ("run.finished", {"status": "succeeded", "stopCause": "final_answer", "errorCode": ""}),
    ]
    RunEvent.objects.bulk_create(
        [RunEvent(run=run, seq=n, type=kind, data=data) for n, (kind, data) in enumerate(kinds, 1)]
    )
    url = f"/api/ads/{en_ad.pk}/ui-chat/{conversation.pk}/stream"

    whole = numbered_chunks(api.get(url))
    ids = [chunk_id for chunk_id, _ in whole[:-1]]
    assert whole[-1] == (0, "[DONE]")
    assert ids == list(range(1, len(ids) + 1))  # each its own, strictly increasing
    assert len(ids) > len(kinds)  # events that make several chunks are cut inside too
    for k in range(len(ids) + 1):
        resumed = numbered_chunks(api.get(url, HTTP_LAST_EVENT_ID=str(k)))
        assert whole[:k] + resumed == whole, f"resumed after chunk {k}"
