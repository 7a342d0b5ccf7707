"""Claude through the real agent loop and the API, over HTTP against the local Messages API
server: generation and refinement, the web client story, a call cut off at max_tokens, a
refused request, failover from an OpenAI-style conversation and back, cache accounting."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Message, ModelCall, Run
from conversations.run_request import RunRequest
from conversations.services import brief_send, send_message
from drafts.models import Draft
from testbed.fake_anthropic import (
    ANTHROPIC_TEST_MODEL,
    FakeAnthropicServer,
    claude_error,
    claude_turn,
)
from testbed.fake_openai import FakeOpenAIServer, call, error_turn, turn
from tests.conversations.story import first_turn, run_of

pytestmark = pytest.mark.django_db(transaction=True)

FAST_RETRIES = {"max_attempts": 3, "max_total_seconds": 5.0, "base_delay": 0.001, "max_delay": 0.01}


@pytest.fixture
def claude(fake_anthropic: FakeAnthropicServer, settings) -> FakeAnthropicServer:
    """Only ``anthropic`` configured, pointed at the fake Messages API."""
    settings.ADSTUDIO_PROVIDERS = fake_anthropic.provider_settings()
    settings.ADSTUDIO_PROVIDER_FALLBACKS = []
    settings.ADSTUDIO_PROVIDER_RETRY = FAST_RETRIES
    settings.ADSTUDIO_PROVIDER_TIMEOUT = 5.0
    return fake_anthropic


def roles(request: dict) -> list[str]:
    return [m["role"] for m in request["messages"]]


def test_generation_then_refinement_on_claude(claude, en_ad, voices):
    claude.script(*first_turn(voices, claude_turn))
    run = run_of(brief_send(request=RunRequest(ad=en_ad, provider="anthropic")))

    assert run.status == "succeeded", run.error_message
    assert run.final_message == "Created voices v1, music v1 and sfx v1. Review and activate."
    assert (run.rounds, run.provider, run.model) == (3, "anthropic", ANTHROPIC_TEST_MODEL)
    assert sorted(Draft.objects.filter(ad=en_ad).values_list("kind", "version")) == [
        ("music", 1),
        ("sfx", 1),
        ("voices", 1),
    ]
    first_request = claude.requests[0]
    assert (
        "Client: Spotify Premium family plan" in first_request["messages"][0]["content"][0]["text"]
    )
    assert first_request["system"][0]["text"]  # the system prompt, as its own parameter
    assert [t["name"] for t in first_request["tools"]] == [
        "create_music_draft",
        "create_sfx_draft",
        "create_voice_draft",
        "get_current_state",
        "search_voices",
        "set_ad_length",
    ]

    claude.script(
        claude_turn(tool_calls=[call("create_music_draft", {"prompt": "upbeat pop, 120 bpm"})]),
        claude_turn("Music v2 is more upbeat."),
    )
    second = run_of(
        send_message(
            request=RunRequest(conversation=run.conversation, text="make the music more upbeat")
        )
    )

    assert second.status == "succeeded", second.error_message
    assert list(Draft.objects.filter(run_id=second.pk).values_list("kind", "version")) == [
        ("music", 2)
    ]
    request = claude.requests[3]
    # turn 1 replayed whole: three results in one user message, then the final answer
    assert roles(request) == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    results = request["messages"][4]["content"]
    assert [b["type"] for b in results] == ["tool_result"] * 3
    calls = [b for b in request["messages"][3]["content"] if b["type"] == "tool_use"]
    assert [b["tool_use_id"] for b in results] == [b["id"] for b in calls]
    assert request["messages"][-1]["content"][-1]["text"] == "make the music more upbeat"
    # the stable prefix is byte-identical across turns
    assert request["system"] == first_request["system"]
    assert request["tools"] == first_request["tools"]


def test_a_call_cut_off_at_max_tokens_ends_the_run_failed_without_a_draft(claude, en_ad, voices):
    claude.script(
        claude_turn(
            "Writing the music.",
            tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop, 95 bpm"})],
            truncate_json_at=15,
        )
    )
    run = run_of(brief_send(request=RunRequest(ad=en_ad, provider="anthropic")))

    assert run.status == "failed" and run.error_code == "max_tokens"
    assert "cut off at its token limit" in run.error_message
    assert not Draft.objects.exists()
    assistant = Message.objects.get(conversation=run.conversation, role="assistant")
    assert assistant.tool_calls == []  # not replayed to the model
    (dropped,) = assistant.provider_data["dropped_tool_calls"]
    assert dropped["raw_arguments"] == '{"prompt": "war' and "cut off" in dropped["parse_error"]
    assert not Message.objects.filter(conversation=run.conversation, role="tool").exists()


def test_a_refused_request_fails_the_run_with_the_providers_message(claude, en_ad):
    claude.script(
        claude_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000")
    )
    run = run_of(brief_send(request=RunRequest(ad=en_ad, provider="anthropic")))

    assert run.status == "failed" and run.error_code == "bad_request"
    assert "prompt is too long: 210000 tokens > 200000" in run.error_message
    assert ModelCall.objects.filter(run=run).count() == 1  # final: never retried


def test_cache_usage_reaches_the_model_call_and_the_run_once(claude, en_ad):
    claude.script(
        claude_turn(
            "Here is the plan.",
            usage={
                "input_tokens": 50,
                "cache_read_input_tokens": 3000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 40,
            },
        )
    )
    run = run_of(brief_send(request=RunRequest(ad=en_ad, provider="anthropic")))

    model_call = ModelCall.objects.get(run=run)
    assert (model_call.prompt_tokens, model_call.cached_tokens) == (3250, 3000)
    assert model_call.completion_tokens == 40 and model_call.usage_exact
    assert (run.prompt_tokens, run.cached_tokens, run.completion_tokens) == (3250, 3000, 40)
    # 50 x 3.00 + 3000 x 0.30 + 200 x 3.75 + 40 x 15.00 per million: each token billed once
    assert run.cost == Decimal("0.002400") and run.cost_exact


def test_a_conversation_on_openai_style_ids_fails_over_to_claude_and_back(
    fake_providers: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, settings, en_ad
):
    settings.ADSTUDIO_PROVIDERS = {
        **fake_providers.provider_settings(),
        **fake_anthropic.provider_settings(),
    }
    settings.ADSTUDIO_PROVIDER_FALLBACKS = ["anthropic"]
    # turn 1 on the OpenAI-compatible provider, with Kimi's ids (one reused across rounds)
    kimi_state = "functions.get_current_state:0"
    fake_providers.script(
        turn(tool_calls=[call("get_current_state", {}, id=kimi_state)]),
        turn(
            tool_calls=[
                call("create_music_draft", {"prompt": "calm piano"}, id="functions.music:1"),
                call("get_current_state", {}, id=kimi_state),
            ]
        ),
        turn("Music v1 is ready."),
    )
    first = run_of(brief_send(request=RunRequest(ad=en_ad)))
    assert first.status == "succeeded" and first.provider == "openai"

    # turn 2: the primary is down, Claude answers with the whole history replayed
    down = error_turn(503, {"error": {"message": "overloaded", "type": "server_error"}})
    fake_providers.script(*[down] * 6)
    fake_anthropic.script(
        claude_turn(tool_calls=[call("create_music_draft", {"prompt": "upbeat pop"})]),
        claude_turn("Music v2 is more upbeat."),
    )
    second = run_of(
        send_message(request=RunRequest(conversation=first.conversation, text="more upbeat"))
    )

    assert second.status == "succeeded", second.error_message
    assert second.provider == "anthropic"
    assert list(
        ModelCall.objects.filter(run=second, round=1).values_list("provider", "error_code")
    ) == [("openai", "transient")] * 3 + [("anthropic", "")]
    replay = fake_anthropic.requests[0]["messages"]
    wire_ids = [b["id"] for m in replay for b in m["content"] if b["type"] == "tool_use"]
    assert len(wire_ids) == 3 and len(set(wire_ids)) == 3  # the reused Kimi id made unique
    assert all(
        i.startswith(("functions_get_current_state_0_", "functions_music_1_")) for i in wire_ids
    )
    # the same history maps to the same ids on the next request (the cache prefix holds)
    assert fake_anthropic.requests[1]["messages"][:4] == [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in replay[:4]
    ]

    # turn 3: the primary is back; it gets the original ids and Claude's, byte for byte
    fake_providers.script(turn("Back on the primary."))
    third = run_of(send_message(request=RunRequest(conversation=first.conversation, text="thanks")))

    assert third.status == "succeeded" and third.provider == "openai"
    sent = fake_providers.requests[-1]["messages"]
    sent_ids = [c["id"] for m in sent for c in m.get("tool_calls") or []]
    assert sent_ids == [kimi_state, "functions.music:1", kimi_state, "toolu_fake_1_0"]
    music = Draft.objects.filter(ad=en_ad, kind="music").order_by("version")
    assert list(music.values_list("version", flat=True)) == [1, 2]


# --- the web client story --------------------------------------------------------------

BRIEF = {
    "clientDescription": "Spotify Premium family plan",
    "targetAudience": "Thai families",
    "format": "30s audio ad",
    "market": "TH",
    "language": "th",
}


def test_the_web_client_story_on_claude(claude, user, make_voice):
    thai = [
        make_voice(language="th", gender=gender, name=name)
        for gender, name in (("male", "Somchai"), ("female", "Malee"), ("female", "Ploy"))
    ]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    claude.script(*first_turn(thai, claude_turn, language="th"))

    ad = api.post("/api/ads/", {**BRIEF, "durationSeconds": 30}, format="json").json()
    generated = api.post(
        "/api/ai/generate?wait=5", {"adId": ad["id"], "provider": "anthropic"}, format="json"
    )
    assert generated.status_code == 200, generated.json()
    body = generated.json()
    assert body["status"] == "succeeded"
    assert body["drafts"] == {"voices": "v1", "music": "v1", "sfx": "v1"}
    assert body["message"] == "Created voices v1, music v1 and sfx v1. Review and activate."
    assert Run.objects.get(pk=body["runId"]).provider == "anthropic"

    claude.script(
        claude_turn(tool_calls=[call("create_music_draft", {"prompt": "upbeat luk thung pop"})]),
        claude_turn("Music v2 is more upbeat."),
    )
    chat = api.post(
        f"/api/ads/{ad['id']}/chat?wait=5",
        {"message": "make the music more upbeat", "conversationId": body["conversationId"]},
        format="json",
    )
    assert chat.status_code == 200, chat.json()
    assert chat.json()["drafts"] == {"music": "v2"}

    music_v2 = chat.json()["draftsCreated"][0]["id"]
    assert api.post(f"/api/drafts/{music_v2}/activate").status_code == 200
    state = api.get(f"/api/ads/{ad['id']}/state").json()
    assert state["music"]["active"] == "v2" and state["voices"]["latest"] == "v1"
    assert state["music"]["archived"] == ["v1"]

    events = api.get(f"/api/runs/{body['runId']}/events").json()
    started = [e["data"]["name"] for e in events["events"] if e["type"] == "tool_call.started"]
    assert started == [
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
    ]

    messages = api.get(f"/api/ads/{ad['id']}/conversation").json()["results"]
    assert [m["role"] for m in messages][:3] == ["user", "assistant", "tool"]
    tool_call, tool_result = messages[1]["parts"][0], messages[2]["parts"][0]
    assert tool_call["toolCallId"] == "toolu_fake_1_0" == tool_result["toolCallId"]
    assert {v["name"] for v in tool_result["result"]["voices"]} == {"Somchai", "Malee", "Ploy"}
    # what Claude was sent: the search results as a tool_result block
    sent_result = claude.requests[1]["messages"][2]["content"][0]
    assert sent_result["tool_use_id"] == "toolu_fake_1_0"
    assert "Somchai" in json.loads(sent_result["content"])["voices"][0]["name"] + "".join(
        v["name"] for v in json.loads(sent_result["content"])["voices"]
    )
