"""The tool executor: every failure becomes a result the model can act on."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest
from django.db import InterfaceError, OperationalError

from adstudio.tools import ToolContext
from conversations.agent.tools import TOOLS, execute_tool_call, tool_specs
from drafts.models import Draft
from drafts.payloads import payload_of
from drafts.services import LatestVersions
from providers.base import ToolCall
from tests.support.versions import music

pytestmark = pytest.mark.django_db


def tool_call(name: str, arguments: dict | None = None, **fields) -> ToolCall:
    arguments = arguments or {}
    return ToolCall(
        id="call_1",
        name=name,
        arguments=arguments,
        raw_arguments=json.dumps(arguments),
        **fields,
    )


@pytest.fixture
def ctx(ad):
    return ToolContext(ad=ad, run_id=uuid.uuid4(), tool_call_id="1:call_1")


def test_specs_are_stable_in_order_and_bytes():
    names = [spec.name for spec in tool_specs()]
    assert names == [
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
        "set_ad_length",
        "get_current_state",
    ]
    assert [t.name for t in TOOLS] == names
    first = json.dumps([s.parameters for s in tool_specs()], sort_keys=False)
    assert json.dumps([t.parameters_schema() for t in TOOLS], sort_keys=False) == first
    assert "adId" not in first


def test_unknown_tool(ctx):
    outcome = execute_tool_call(tool_call("delete_everything"), ctx)
    assert outcome.is_error
    assert outcome.content["error"] == "Unknown tool 'delete_everything'."
    assert "create_music_draft" in outcome.content["suggestion"]


def test_arguments_that_could_not_be_parsed(ctx):
    outcome = execute_tool_call(
        tool_call("create_music_draft", parse_error="Expecting value at 1:1"), ctx
    )
    assert outcome.is_error
    assert "not valid JSON (Expecting value at 1:1)" in outcome.content["error"]


def test_schema_violations_name_the_field(ctx):
    outcome = execute_tool_call(
        tool_call("create_music_draft", {"prompt": "calm", "duration": -1}), ctx
    )
    assert outcome.is_error
    assert outcome.content["error"].startswith(
        "Invalid arguments for create_music_draft: duration:"
    )
    assert not Draft.objects.exists()


def test_another_ads_id_is_refused(ctx, make_ad):
    other = make_ad(title="Someone else's ad")
    outcome = execute_tool_call(
        tool_call("create_music_draft", {"prompt": "calm piano", "adId": str(other.pk)}), ctx
    )
    assert outcome.is_error
    assert "can only change its own ad" in outcome.content["error"]
    assert not Draft.objects.exists()


def test_the_conversations_own_ad_id_is_tolerated(ctx):
    outcome = execute_tool_call(
        tool_call("create_music_draft", {"prompt": "calm piano", "adId": str(ctx.ad.pk)}), ctx
    )
    assert not outcome.is_error
    assert Draft.objects.get().ad_id == ctx.ad.pk


def test_a_handler_crash_rolls_back_its_savepoint(ctx, monkeypatch):
    import drafts.tools

    def write_then_crash(*args, **kwargs):
        Draft.objects.create(ad=ctx.ad, kind="music", version=1, payload=payload_of(music()))
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(drafts.tools, "draft_latest", write_then_crash)
    outcome = execute_tool_call(
        tool_call(
            "create_sfx_draft",
            {"prompts": [{"description": "boom", "placement": {"type": "afterVoice", "index": 0}}]},
        ),
        ctx,
    )

    assert outcome.is_error
    assert outcome.content["error"] == "create_sfx_draft failed with an internal error."
    assert "disk on fire" not in outcome.text
    assert not Draft.objects.exists()


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_a_lost_database_connection_is_not_the_tools_error(ctx, monkeypatch, error):
    """The run resumes from what is stored and calls the tool again; answering the model
    with an internal error would leave the call answered and the draft never written."""
    import drafts.tools

    def connection_lost(*args, **kwargs):
        raise error("terminating connection due to administrator command")

    monkeypatch.setattr(drafts.tools, "approved_voices_by_id", connection_lost)
    with pytest.raises(error):
        execute_tool_call(
            tool_call("create_voice_draft", {"tracks": [{"voiceId": "1", "text": "Hi"}]}), ctx
        )


def test_rows_a_failed_handler_staged_are_not_written_with_its_error(ctx, monkeypatch):
    # In a run, a writing tool stages its draft in the call's batch, written with the
    # result; a handler that fails after staging must leave only its error result.
    import drafts.tools
    from adstudio.db.batch import Batch
    from conversations.models import Conversation, Message

    conversation = Conversation.objects.create(ad=ctx.ad)
    batch = Batch()
    # The run's claim read the ad's versions (none yet): the handler reads none itself.
    staged_ctx = ToolContext(
        ad=ctx.ad,
        run_id=ctx.run_id,
        tool_call_id="1:x",
        batch=batch,
        draft_versions=LatestVersions({}),
    )
    real_write = drafts.tools._write

    def stage_then_fail(*args, **kwargs):
        real_write(*args, **kwargs)
        raise drafts.tools.ToolError("changed my mind", "try again")

    def record(outcome):  # as the loop writes a call's result with what its tool staged
        seq = Message.objects.count() + 1
        batch.insert(
            Message(
                conversation=conversation, seq=seq, role="tool", tool_call_id="x", text=outcome.text
            )
        )
        batch.write()

    monkeypatch.setattr(drafts.tools, "_write", stage_then_fail)
    outcome = execute_tool_call(
        tool_call("create_music_draft", {"prompt": "calm piano"}), staged_ctx
    )
    record(outcome)

    assert outcome.is_error and outcome.content["error"] == "changed my mind"
    assert not Draft.objects.exists()
    assert [json.loads(m.text)["error"] for m in Message.objects.all()] == ["changed my mind"]
    # The discarded v1 took what the run knew of the versions with it: the next call
    # reads them and writes v1, not a v2 after a draft that does not exist.
    assert staged_ctx.draft_versions.of("music") is None
    monkeypatch.setattr(drafts.tools, "_write", real_write)
    outcome = execute_tool_call(
        tool_call("create_music_draft", {"prompt": "calm piano"}),
        dataclasses.replace(staged_ctx, tool_call_id="1:y"),
    )
    record(outcome)
    assert not outcome.is_error, outcome.content
    assert list(Draft.objects.values_list("version", "parent_id")) == [(1, None)]


def test_success_result_is_compact_json(ctx):
    outcome = execute_tool_call(tool_call("create_music_draft", {"prompt": "calm piano"}), ctx)
    assert not outcome.is_error
    assert json.loads(outcome.text) == outcome.content
    assert outcome.content["versionId"] == "v1"


def test_the_state_tells_how_long_a_rendered_voices_version_ran(ctx):
    from drafts.services import draft_create
    from renders.models import Render
    from tests.support.versions import voices

    v1, _ = draft_create(ad=ctx.ad, version=voices("Hello.", "Goodbye."))
    state = execute_tool_call(tool_call("get_current_state"), ctx)
    assert "measuredDurationS" not in state.content["voices"]  # no scratch track of v1 yet

    Render.objects.create(
        ad=ctx.ad,
        voices=v1,
        status="done",
        audio="renders/x.ogg",
        wav="renders/x.wav",
        mp3="renders/x.mp3",
        voices_stem="renders/x.voices.wav",
        timeline={"speechEndS": 2.34},
    )
    state = execute_tool_call(tool_call("get_current_state"), ctx)
    assert state.content["voices"]["measuredDurationS"] == 2.3
    draft_create(ad=ctx.ad, version=voices("A new line."))
    state = execute_tool_call(tool_call("get_current_state"), ctx)
    assert state.content["voices"]["versionId"] == "v2"
    assert "measuredDurationS" not in state.content["voices"]  # v2 is not rendered


def test_a_length_the_person_asked_for_changes_the_ads_slot(ctx):
    from drafts.models import Ad

    ctx.ad.duration_s = 30
    Ad.objects.filter(pk=ctx.ad.pk).update(duration_s=30)
    outcome = execute_tool_call(tool_call("set_ad_length", {"durationSeconds": 20}), ctx)

    assert not outcome.is_error, outcome.content
    assert outcome.content == {"durationSeconds": 20, "previousSeconds": 30}
    assert Ad.objects.get(pk=ctx.ad.pk).duration_s == 20
    # A music draft written after it, with no duration of its own, fills the new slot.
    music_call = execute_tool_call(tool_call("create_music_draft", {"prompt": "calm piano"}), ctx)
    assert not music_call.is_error
    assert Draft.objects.get(kind="music").payload["duration"] == 20


@pytest.mark.parametrize("seconds", [0, 4, 121, "long"])
def test_a_length_out_of_range_is_refused_and_the_slot_kept(ctx, seconds):
    from drafts.models import Ad

    before = Ad.objects.get(pk=ctx.ad.pk).duration_s
    outcome = execute_tool_call(tool_call("set_ad_length", {"durationSeconds": seconds}), ctx)

    assert outcome.is_error
    assert "durationSeconds" in outcome.content["error"]
    assert Ad.objects.get(pk=ctx.ad.pk).duration_s == before


def test_a_staged_length_is_written_only_with_the_calls_result(ctx):
    from adstudio.db.batch import Batch
    from drafts.models import Ad

    batch = Batch()
    staged = ToolContext(ad=ctx.ad, run_id=ctx.run_id, tool_call_id="1:z", batch=batch)
    before = Ad.objects.get(pk=ctx.ad.pk).duration_s

    outcome = execute_tool_call(tool_call("set_ad_length", {"durationSeconds": 45}), staged)
    again = execute_tool_call(tool_call("set_ad_length", {"durationSeconds": 40}), staged)

    assert not outcome.is_error and not again.is_error, (outcome.content, again.content)
    assert again.content == {"durationSeconds": 40, "previousSeconds": 45}
    assert Ad.objects.get(pk=ctx.ad.pk).duration_s == before  # staged, not yet written
    batch.write()
    assert Ad.objects.get(pk=ctx.ad.pk).duration_s == 40
