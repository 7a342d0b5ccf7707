"""Generation and chat runs over the REST API with the offline demo director: the web
client's whole story, and every way a request can be wrong."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from conversations.models import Conversation, Message, Run
from drafts.models import Ad, Draft
from tests.support.api import api_for

pytestmark = pytest.mark.django_db

BRIEF = {
    "clientDescription": "Spotify Premium family plan",
    "targetAudience": "Thai families",
    "format": "30s audio ad",
    "market": "TH",
    "language": "th",
}


@pytest.fixture(autouse=True)
def demo_only(settings, make_voice):
    """No provider key: the router answers with the offline demo director."""
    settings.ADSTUDIO_PROVIDERS = {
        name: {**entry, "api_key": ""} for name, entry in settings.ADSTUDIO_PROVIDERS.items()
    }
    for gender, name in (("male", "Somchai"), ("female", "Malee"), ("female", "Ploy")):
        make_voice(language="th", locale="th-TH", gender=gender, name=name)


@pytest.fixture
def api(user):
    return api_for(user)


# Tests that need the run to execute use real transactions: tasks are eager in the test
# settings and run when the request's transaction commits, as they do in production.
runs_execute = pytest.mark.django_db(transaction=True)


@runs_execute
def test_the_web_client_story(api, user):
    # create the ad, then generate with wait
    ad = api.post("/api/ads/", {**BRIEF, "durationSeconds": 30}, format="json").json()
    generated = api.post("/api/ai/generate?wait=5", {"adId": ad["id"]})
    assert generated.status_code == 200, generated.json()
    body = generated.json()
    assert body["status"] == "succeeded"
    assert body["drafts"] == {"voices": "v1", "music": "v1", "sfx": "v1"}
    assert [(d["kind"], d["version"]) for d in body["draftsCreated"]] == [
        ("voices", "v1"),
        ("music", "v1"),
        ("sfx", "v1"),
    ]
    assert "demo director" in body["message"]
    conversation_id = body["conversationId"]

    # chat: make the music more upbeat -> music v2 only
    chat = api.post(
        f"/api/ads/{ad['id']}/chat?wait=5",
        {"message": "make the music more upbeat", "conversationId": conversation_id},
    )
    assert chat.status_code == 200, chat.json()
    assert chat.json()["drafts"] == {"music": "v2"}
    assert chat.json()["conversationId"] == conversation_id

    # activate music v2 -> state shows it active and v1 archived
    music_v2 = chat.json()["draftsCreated"][0]["id"]
    activated = api.post(f"/api/drafts/{music_v2}/activate")
    assert activated.status_code == 200 and activated.json()["archivedVersions"] == ["v1"]
    state = api.get(f"/api/ads/{ad['id']}/state").json()
    assert state["music"]["active"] == "v2" and state["music"]["archived"] == ["v1"]
    assert state["voices"]["active"] is None and state["voices"]["latest"] == "v1"

    # events of the first run show each tool call in order
    events = api.get(f"/api/runs/{body['runId']}/events").json()
    assert events["runStatus"] == "succeeded"
    seqs = [e["seq"] for e in events["events"]]
    assert seqs == list(range(1, len(seqs) + 1))
    started = [e["data"]["name"] for e in events["events"] if e["type"] == "tool_call.started"]
    assert started == [
        "search_voices",  # female and male voices of the market
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
    ]
    assert events["events"][-1]["type"] == "run.finished"

    # the conversation as typed parts, tool results as their own messages
    messages = api.get(f"/api/ads/{ad['id']}/conversation").json()["results"]
    roles = [m["role"] for m in messages]
    assert roles[:4] == ["user", "assistant", "tool", "tool"]
    call = messages[1]["parts"][0]
    result = messages[2]["parts"][0]
    assert call["type"] == "tool-call" and call["toolName"] == "search_voices"
    assert result == {
        "type": "tool-result",
        "toolCallId": call["toolCallId"],
        "toolName": "search_voices",
        "result": result["result"],
        "isError": False,
    }
    assert {v["name"] for v in result["result"]["voices"]} == {"Malee", "Ploy"}  # the women
    same = api.get(f"/api/conversations/{conversation_id}/messages/").json()["results"]
    assert same == messages


@runs_execute
def test_generate_creates_the_ad_from_the_brief(api, user):
    response = api.post("/api/ai/generate", {"brief": BRIEF, "provider": None})

    assert response.status_code == 200 or response.status_code == 202
    body = response.json()
    ad = Ad.objects.get(pk=body["adId"])
    assert ad.owner == user and ad.duration_s == 30 and ad.language == "th"
    assert Run.objects.get(pk=body["runId"]).requested_by == user


def test_without_wait_the_reply_is_202_with_a_location(api, user, ad):
    response = api.post("/api/ai/generate", {"adId": str(ad.pk)}, format="json")

    assert response.status_code == 202
    body = response.json()
    assert body == {
        "adId": str(ad.pk),
        "conversationId": body["conversationId"],
        "runId": body["runId"],
        "status": "queued",
    }
    assert response["Location"] == f"/api/runs/{body['runId']}"
    # the user's brief is stored before anything runs
    run = Run.objects.get(pk=body["runId"])
    assert "Client: Spotify Premium family plan" in run.input_text


def test_wait_that_runs_out_returns_202(api, ad):
    response = api.post("/api/ai/generate?wait=0.3", {"adId": str(ad.pk)}, format="json")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"


def test_idempotency_key_replays_the_same_run(api, ad):
    headers = {"HTTP_IDEMPOTENCY_KEY": "retry-123"}
    first = api.post("/api/ai/generate", {"brief": BRIEF}, format="json", **headers)
    second = api.post("/api/ai/generate", {"brief": BRIEF}, format="json", **headers)
    chat1 = api.post(
        f"/api/ads/{ad.pk}/chat", {"message": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY="chat-1"
    )
    chat2 = api.post(
        f"/api/ads/{ad.pk}/chat", {"message": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY="chat-1"
    )

    assert first.json()["runId"] == second.json()["runId"]
    assert chat1.json()["runId"] == chat2.json()["runId"]
    assert Run.objects.count() == 2
    assert Ad.objects.count() == 2  # the fixture's ad and one created from the brief


def test_a_retry_may_wait_longer(api, ad):
    first = api.post(f"/api/ads/{ad.pk}/chat", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k")
    again = api.post(f"/api/ads/{ad.pk}/chat?wait=0.1", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k")
    assert again.json()["runId"] == first.json()["runId"]
    assert Run.objects.count() == 1


def test_an_idempotency_key_sent_with_another_request_is_a_422(api, ad, make_ad):
    other_ad = make_ad(title="another")
    first = api.post(f"/api/ads/{ad.pk}/chat", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k")
    assert first.status_code == 202
    reused = [
        api.post(f"/api/ads/{ad.pk}/chat", {"message": "bye"}, HTTP_IDEMPOTENCY_KEY="k"),
        api.post(f"/api/ads/{other_ad.pk}/chat", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k"),
        api.post("/api/ai/generate", {"adId": str(ad.pk)}, HTTP_IDEMPOTENCY_KEY="k"),
    ]
    for response in reused:
        assert response.status_code == 422, response.json()
        assert response.json()["error"]["code"] == "idempotency_key_reused"
        assert "'k'" in response.json()["error"]["message"]
    assert list(Run.objects.values_list("pk", flat=True)) == [uuid.UUID(first.json()["runId"])]


def test_idempotency_keys_are_each_users_own(api, ad, other_user, make_ad):
    mine = api.post(f"/api/ads/{ad.pk}/chat", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k")
    their_ad = make_ad(owner=other_user)
    theirs = api_for(other_user).post(
        f"/api/ads/{their_ad.pk}/chat", {"message": "hi"}, HTTP_IDEMPOTENCY_KEY="k"
    )
    assert theirs.status_code == 202, theirs.json()
    assert theirs.json()["runId"] != mine.json()["runId"]
    assert Run.objects.filter(idempotency_key="k").count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "brief"),
        ({"brief": {**BRIEF, "language": "elvish"}}, "brief.language"),
        ({"brief": BRIEF, "provider": "skynet"}, "provider"),
        ({"brief": BRIEF, "provider": "openai"}, "provider"),
        ({"brief": BRIEF, "conversationId": str(uuid.uuid4())}, "adId"),
    ],
)
def test_generate_validation_names_the_field(api, body, field):
    response = api.post("/api/ai/generate", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]
    assert not Run.objects.exists() and not Ad.objects.exists()


def test_unconfigured_provider_error_names_the_env_var(api):
    response = api.post("/api/ai/generate", {"brief": BRIEF, "provider": "qwen"}, format="json")
    assert response.status_code == 400
    assert "DASHSCOPE_API_KEY" in response.json()["error"]["fields"]["provider"][0]


@pytest.mark.parametrize("wait", ["-1", "61", "soon"])
def test_wait_is_validated(api, ad, wait):
    response = api.post(f"/api/ai/generate?wait={wait}", {"adId": str(ad.pk)}, format="json")
    assert response.status_code == 400
    assert "wait" in response.json()["error"]["fields"]
    assert not Run.objects.exists()


def test_chat_message_limits(api, ad, settings):
    settings.ADSTUDIO_MAX_MESSAGE_CHARS = 100
    empty = api.post(f"/api/ads/{ad.pk}/chat", {"message": "  "}, format="json")
    long = api.post(f"/api/ads/{ad.pk}/chat", {"message": "x" * 101}, format="json")

    assert empty.status_code == 400 and "message" in empty.json()["error"]["fields"]
    assert long.status_code == 413
    assert "limit is 100" in long.json()["error"]["message"]
    assert not Run.objects.exists()


def test_chat_without_a_conversation_starts_one_with_the_brief(api, ad):
    response = api.post(f"/api/ads/{ad.pk}/chat", {"message": "Make it funny"}, format="json")
    assert response.status_code == 202
    run = Run.objects.get(pk=response.json()["runId"])
    assert run.input_text.startswith("Brief\n") and run.input_text.endswith("Make it funny")


@runs_execute
def test_a_chat_message_is_stored_by_one_insert_before_its_task_is_sent(api, ad, monkeypatch):
    # given a conversation, and a broker that records what it is sent
    from django.db import connection

    from conversations import tasks

    conversation = Conversation.objects.create(ad=ad)
    sent, statements = [], []
    monkeypatch.setattr(tasks.run_agent_task, "delay", lambda run_id: sent.append(run_id))

    def record(execute, sql, params, many, context):
        statements.append((sql.split()[0], connection.in_atomic_block, list(sent)))
        return execute(sql, params, many, context)

    # when a message is posted
    with connection.execute_wrapper(record):
        response = api.post(f"/api/ads/{ad.pk}/chat", {"message": "More bass"}, format="json")

    # then the run is written by one INSERT outside any transaction (no BEGIN or COMMIT
    # round trips), the task is sent after it, and nothing else is written
    assert response.status_code == 202
    run = Run.objects.get(conversation=conversation)
    assert sent == [str(run.pk)] and run.input_text == "More bass"
    # (the token's read, a WITH, writes only its last use, at most once a minute:
    # tests/accounts)
    writes = [(verb, atomic, before) for verb, atomic, before in statements[1:]]
    writes = [write for write in writes if write[0] != "SELECT"]
    assert statements[0][0] == "WITH" and writes == [("INSERT", False, [])]
    # the token, the ad's latest conversation read with the ad, the run
    assert len(statements) == 3, statements


def test_a_chat_message_goes_to_the_ads_current_conversation(api, ad, make_ad, user):
    # given an ad with a superseded and a current conversation, and another ad of the
    # same user
    older = Conversation.objects.create(ad=ad, superseded_at=timezone.now())
    newer = Conversation.objects.create(ad=ad)
    elsewhere = Conversation.objects.create(ad=make_ad(owner=user))

    def post(conversation_id=None):
        body = {"message": "hi"} | (
            {"conversationId": str(conversation_id)} if conversation_id else {}
        )
        return api.post(f"/api/ads/{ad.pk}/chat", body, format="json")

    # then a message naming no conversation, or the current one, goes to the current one;
    # one naming the superseded conversation or another ad's conversation is 404
    assert post().json()["conversationId"] == str(newer.pk)
    assert post(newer.pk).json()["conversationId"] == str(newer.pk)
    assert post(older.pk).status_code == 404
    assert post(elsewhere.pk).status_code == 404
    assert Run.objects.filter(conversation__in=[older, elsewhere]).count() == 0


def test_other_users_objects_are_404(api, other_user, make_ad):
    theirs = make_ad(owner=other_user)
    other = api_for(other_user)
    run_id = other.post("/api/ai/generate", {"adId": str(theirs.pk)}, format="json").json()["runId"]
    run = Run.objects.get(pk=run_id)

    paths = [
        ("post", "/api/ai/generate", {"adId": str(theirs.pk)}),
        ("post", f"/api/ads/{theirs.pk}/chat", {"message": "hi"}),
        ("get", f"/api/runs/{run_id}", None),
        ("post", f"/api/runs/{run_id}/cancel", None),
        ("get", f"/api/runs/{run_id}/events", None),
        ("get", f"/api/ads/{theirs.pk}/conversation", None),
        ("get", f"/api/conversations/{run.conversation_id}/messages/", None),
    ]
    for method, path, data in paths:
        response = getattr(api, method)(path, data, format="json")
        assert response.status_code == 404, path
        assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}
    assert Run.objects.count() == 1
    assert Run.objects.get().status == "queued"


def test_anonymous_is_401_everywhere(ad):
    client = APIClient()
    for method, path in [
        ("post", "/api/ai/generate"),
        ("post", f"/api/ads/{ad.pk}/chat"),
        ("get", f"/api/runs/{uuid.uuid4()}"),
        ("get", "/api/stats/"),
    ]:
        assert getattr(client, method)(path).status_code == 401, path


def test_cancel_a_queued_run(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}, format="json").json()["runId"]

    response = api.post(f"/api/runs/{run_id}/cancel")

    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert Run.objects.get(pk=run_id).finished_at is not None


@runs_execute
def test_run_detail_has_usage_and_error_shape(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]
    body = api.get(f"/api/runs/{run_id}").json()

    assert body["status"] == "succeeded" and body["error"] is None
    assert body["provider"] == "demo" and body["rounds"] == 3
    assert body["usage"]["promptTokens"] > 0
    assert body["usage"]["costExact"] is False  # the demo reports no usage: estimated
    assert body["finishedAt"] is not None


@runs_execute
def test_run_cost_is_a_decimal_string_as_documented(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]
    Run.objects.filter(pk=run_id).update(cost=Decimal("0.004120"))

    body = api.get(f"/api/runs/{run_id}").json()

    assert body["usage"]["cost"] == "0.004120"  # not 0.00412, a float


@runs_execute
def test_events_long_poll_returns_empty_after_the_run_finished(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]
    events = api.get(f"/api/runs/{run_id}/events").json()
    last = events["lastSeq"]

    later = api.get(f"/api/runs/{run_id}/events?after={last}&wait=5").json()

    assert later == {"runStatus": "succeeded", "events": [], "lastSeq": last}


def test_a_page_that_says_finished_has_the_run_finished_event(api, ad, monkeypatch):
    # given a run (left queued: nothing commits here) that the worker finishes after the
    # view has read the run, before it reads the run's events
    from conversations.models import RunStatus, StopCause
    from conversations.runs.finish import run_finish
    from conversations.web import events_api as views

    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]
    read_page = views.run_events_page

    def finished_meanwhile(**kwargs):
        run_finish(
            run_id=uuid.UUID(run_id),
            status=RunStatus.SUCCEEDED,
            cause=StopCause.FINAL_ANSWER,
            final_message="Done.",
        )
        return read_page(**kwargs)

    monkeypatch.setattr(views, "run_events_page", finished_meanwhile)

    # when the client polls
    page = api.get(f"/api/runs/{run_id}/events?after=0").json()

    # then the page says finished and has the run's last event: a client that stops at a
    # finished page has seen everything
    assert page["runStatus"] == "succeeded"
    assert [e["type"] for e in page["events"]] == ["run.finished"]
    assert page["lastSeq"] == page["events"][-1]["seq"]


@runs_execute
def test_events_as_server_sent_events(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]

    response = api.get(f"/api/runs/{run_id}/events?after=0", HTTP_ACCEPT="text/event-stream")

    assert response["Content-Type"] == "text/event-stream"
    text = b"".join(response.streaming_content).decode()
    assert "event: run.started" in text
    assert text.count("event: tool_call.finished") == 5
    blocks = [b for b in text.split("\n\n") if b.startswith("id: ")]
    last = dict(line.split(": ", 1) for line in blocks[-1].splitlines())
    assert last["event"] == "run.finished"
    assert json.loads(last["data"])["data"]["status"] == "succeeded"
    assert [int(dict(line.split(": ", 1) for line in b.splitlines())["id"]) for b in blocks] == (
        list(range(1, len(blocks) + 1))
    )


@runs_execute
def test_stats_are_staff_only(api, staff_user, ad):
    api.post("/api/ai/generate", {"adId": str(ad.pk)})

    assert api.get("/api/stats/").status_code == 403
    stats = api_for(staff_user).get("/api/stats/?days=1").json()

    assert stats["runsByStatus"]["succeeded"] == 1
    demo = stats["providers"][0]
    assert demo["provider"] == "demo" and demo["runs"] == 1 and demo["roundsPerRun"] == 3
    tools = {t["tool"]: t for t in stats["tools"]}
    assert tools["search_voices"]["successRate"] == 1.0
    assert stats["toolCalls"] == 5 and stats["argumentRepairRate"] == 0


def test_swagger_ui_is_served(api):
    response = api.get("/api/docs/")
    assert response.status_code == 200
    assert "swagger-ui" in response.content.decode()
    assert "/api/schema/" in response.content.decode()


def test_generate_into_a_named_conversation_of_the_ad(api, ad, make_ad):
    conversation = Conversation.objects.create(ad=ad)
    another_ads = Conversation.objects.create(ad=make_ad(title="another"))

    into = api.post(
        "/api/ai/generate", {"adId": str(ad.pk), "conversationId": str(conversation.pk)}
    )
    elsewhere = api.post(
        "/api/ai/generate", {"adId": str(ad.pk), "conversationId": str(another_ads.pk)}
    )

    assert into.status_code == 202
    assert into.json()["conversationId"] == str(conversation.pk)
    assert elsewhere.status_code == 404
    assert list(Run.objects.values_list("conversation_id", flat=True)) == [conversation.pk]


@pytest.mark.parametrize("days", ["0", "367", "week"])
def test_the_stats_period_is_validated(staff_user, days):
    response = api_for(staff_user).get(f"/api/stats/?days={days}")
    assert response.status_code == 400
    assert "days" in response.json()["error"]["fields"]


@runs_execute
def test_conversation_messages_are_stored_in_order(api, ad):
    api.post("/api/ai/generate", {"adId": str(ad.pk)})
    conversation = Conversation.objects.get(ad=ad)
    seqs = list(Message.objects.filter(conversation=conversation).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert Draft.objects.filter(ad=ad).count() == 3


def test_generate_and_chat_are_throttled_per_user(api, other_user, ad, settings):
    settings.ADSTUDIO_RUN_RATE = "2/minute"
    statuses = [
        api.post(f"/api/ads/{ad.pk}/chat", {"message": f"m{n}"}).status_code for n in range(3)
    ]
    refused = api.post("/api/ai/generate", {"brief": BRIEF})
    other = api_for(other_user).post("/api/ai/generate", {"brief": BRIEF})

    assert statuses == [202, 202, 429]
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "throttled"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert other.status_code == 202  # the limit is per user
    assert Run.objects.count() == 3


def test_cors_allows_only_configured_origins(api, settings):
    settings.CORS_ALLOWED_ORIGINS = ["https://studio.example.com"]
    allowed = api.get("/api/ads/", HTTP_ORIGIN="https://studio.example.com")
    refused = api.get("/api/ads/", HTTP_ORIGIN="https://evil.example.net")
    assert allowed["Access-Control-Allow-Origin"] == "https://studio.example.com"
    assert "Access-Control-Allow-Origin" not in refused
    preflight = APIClient().options(
        "/api/ai/generate",
        HTTP_ORIGIN="https://studio.example.com",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type, idempotency-key",
    )
    assert "idempotency-key" in preflight["Access-Control-Allow-Headers"]


@runs_execute
def test_server_sent_events_resume_after_last_event_id(api, ad):
    run_id = api.post("/api/ai/generate", {"adId": str(ad.pk)}).json()["runId"]

    resumed = api.get(
        f"/api/runs/{run_id}/events?after=0",
        HTTP_ACCEPT="text/event-stream",
        HTTP_LAST_EVENT_ID="3",
    )
    by_format = api.get(f"/api/runs/{run_id}/events?after=0&format=sse")

    ids = [
        int(line.removeprefix("id: "))
        for line in b"".join(resumed.streaming_content).decode().splitlines()
        if line.startswith("id: ")
    ]
    assert ids[0] == 4 and ids == list(range(4, ids[-1] + 1))
    assert by_format["Content-Type"] == "text/event-stream"
    assert "id: 1\n" in b"".join(by_format.streaming_content).decode()
    # the run has finished and the client has its last event: a 204 stops EventSource
    done = api.get(
        f"/api/runs/{run_id}/events", HTTP_ACCEPT="text/event-stream", HTTP_LAST_EVENT_ID=ids[-1]
    )
    assert done.status_code == 204 and done.content == b""


BAD_EVENT_PARAMETERS = [("after=abc", {}, "after"), ("after=-1", {}, "after")]
BAD_EVENT_PARAMETERS += [("wait=abc", {}, "wait"), ("wait=61", {}, "wait")]


@pytest.mark.parametrize(
    ("accept", "query", "headers", "field"),
    [
        *(("application/json", *case) for case in BAD_EVENT_PARAMETERS),
        *(("text/event-stream", *case) for case in BAD_EVENT_PARAMETERS),
        ("text/event-stream", "after=0", {"HTTP_LAST_EVENT_ID": "x"}, "Last-Event-ID"),
    ],
)
def test_event_parameters_are_validated_in_json(api, ad, accept, query, headers, field):
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")

    response = api.get(f"/api/runs/{run.pk}/events?{query}", HTTP_ACCEPT=accept, **headers)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert field in response.json()["error"]["fields"]


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
def test_event_errors_are_json_to_a_stream_client(ad, other_user, accept):
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")
    url = f"/api/runs/{run.pk}/events"

    anonymous = APIClient().get(url, HTTP_ACCEPT=accept)
    not_theirs = api_for(other_user).get(url, HTTP_ACCEPT=accept)

    assert anonymous.status_code == 401
    assert anonymous["Content-Type"] == "application/json"
    assert anonymous.json()["error"]["code"] == "not_authenticated"
    assert not_theirs.status_code == 404
    assert not_theirs.json()["error"]["code"] == "not_found"
