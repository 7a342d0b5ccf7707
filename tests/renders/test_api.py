"""Scratch tracks over the API: asked for (202), rendered by the task, read back with the
measured timeline; the same versions never rendered twice; any combination of versions;
the audio through an expiring link that only someone who may see the ad can use."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
import soundfile
from django.core import signing
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models.functions import Now
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from rest_framework.test import APIClient

from drafts.payloads import SfxVersion
from drafts.services import ad_archive, draft_activate, draft_create
from renders.making import finite
from renders.models import Render
from renders.services import versions_of
from tests.support.api import api_for
from tests.support.versions import music, voices
from workspaces.models import Membership
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db(transaction=True)  # the task runs when the row commits


def test_a_render_is_made_and_read_back_with_its_timeline(ad, user, tasks_executed):
    api = api_for(user)

    asked = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert asked.status_code == 202
    body = api.get(f"/api/renders/{asked.json()['id']}").json()
    assert body["status"] == "done"
    assert body["versions"] == {"voices": "v2", "music": "v1", "sfx": "v1"}  # the latest
    kinds = [(s["kind"], s["ref"]) for s in body["timeline"]["segments"]]
    assert kinds == [
        ("voice", "track-0"),
        ("voice", "track-1"),
        ("voice", "track-2"),
        ("music", "music"),
        ("sfx", "sfx-0"),
    ]
    assert body["timeline"]["slotS"] == 5 and body["seconds"] >= 5
    assert body["loudnessLufs"] == pytest.approx(-16, abs=0.2)
    audio = api.get(body["audioUrl"])  # the link alone opens it: an <audio> element's way
    assert audio.status_code == 200 and audio["Content-Type"] == "audio/ogg"
    samples, rate = soundfile.read(io.BytesIO(b"".join(audio.streaming_content)))
    assert rate == 48_000 and abs(len(samples) / rate - body["seconds"]) < 0.05
    wav = APIClient().get(body["wavUrl"])
    assert wav.status_code == 200 and wav["Content-Type"] == "audio/wav"


def test_the_timeline_is_typed_in_the_schema_and_open_to_new_keys(ad, user, tasks_executed):
    document = SchemaGenerator().get_schema(request=None, public=True)
    timeline = Draft7Validator(
        {"allOf": [{"$ref": "#/components/schemas/RenderTimeline"}], **document}
    )
    api = api_for(user)
    asked = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    made = api.get(f"/api/renders/{asked['id']}").json()["timeline"]

    assert document["components"]["schemas"]["Render"]["properties"]["timeline"]["allOf"] == [
        {"$ref": "#/components/schemas/RenderTimeline"}
    ]
    assert "synthesisRealTimeFactor" in made  # a key beside the documented ones
    assert list(timeline.iter_errors(made)) == []
    assert list(timeline.iter_errors({})) == []  # not done yet
    assert list(timeline.iter_errors({**made, "loudnessRange": {"sfx-0": 1.5}})) == []
    assert made["speech"] == {"characters": 0, "costUsd": "0", "costExact": True, "cachedLines": 0}
    for broken in (
        {key: value for key, value in made.items() if key != "segments"},
        {**made, "segments": [{**made["segments"][0], "startS": "0.0"}]},
        {"slotS": 15},
    ):
        assert list(timeline.iter_errors(broken)), broken


def test_the_same_versions_are_rendered_once(ad, user, tasks_executed):
    api = api_for(user)
    first = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    again = api.post(
        f"/api/ads/{ad.pk}/renders", {"voices": "v2", "music": "v1", "sfx": "v1"}, format="json"
    ).json()
    other = api.post(
        f"/api/ads/{ad.pk}/renders", {"voices": "v1", "sfx": None}, format="json"
    ).json()

    assert again["id"] == first["id"] and again["status"] == "done"
    assert other["id"] != first["id"] and other["versions"] == {
        "voices": "v1",
        "music": "v1",
        "sfx": None,
    }
    assert Render.objects.count() == 2
    assert [task for task in tasks_executed if task == "renders.tasks.render_scratch_track"] == [
        "renders.tasks.render_scratch_track"
    ] * 2


def test_the_active_versions_and_a_missing_version(ad, user, tasks_executed):
    api = api_for(user)
    v1 = ad.drafts.get(kind="voices", version=1)
    draft_activate(ad=ad, draft_id=v1.pk, by=user)

    active = api.post(f"/api/ads/{ad.pk}/renders", {"of": "active"}, format="json").json()
    missing = api.post(f"/api/ads/{ad.pk}/renders", {"music": "v9"}, format="json")
    wrong = api.post(f"/api/ads/{ad.pk}/renders", {"music": "9"}, format="json")

    assert active["versions"] == {"voices": "v1", "music": None, "sfx": None}
    assert missing.status_code == 409
    assert missing.json()["error"] == {
        "code": "no_such_version",
        "message": "The ad has no music v9.",
    }
    assert wrong.status_code == 400 and "music" in wrong.json()["error"]["fields"]


def test_another_users_render_and_audio_are_not_found(ad, user, other_user, tasks_executed):
    body = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    body = api_for(user).get(f"/api/renders/{body['id']}").json()
    outsider = api_for(other_user)

    assert outsider.post(f"/api/ads/{ad.pk}/renders", {}, format="json").status_code == 404
    assert outsider.get(f"/api/renders/{body['id']}").status_code == 404
    # Their own link, or a token for them, to the render: refused alike.
    token = signing.dumps(
        {"render": body["id"], "user": other_user.pk, "format": "ogg"},
        salt="renders.audio",
        compress=True,
    )
    assert APIClient().get(f"/api/renders/{body['id']}/audio?token={token}").status_code == 404
    assert APIClient().get(f"/api/renders/{body['id']}/audio?token=forged").status_code == 404
    # The owner's link stops working when they may no longer see the ad.
    assert APIClient().get(body["audioUrl"]).status_code == 200
    Membership.objects.filter(user=user, workspace=ad.workspace).delete()
    assert APIClient().get(body["audioUrl"]).status_code == 404


def test_a_link_expires(ad, user, settings, tasks_executed, monkeypatch):
    body = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    url = api_for(user).get(f"/api/renders/{body['id']}").json()["audioUrl"]
    settings.ADSTUDIO_RENDER_LINK_SECONDS = 10
    import time

    later = time.time() + 11
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)
    assert APIClient().get(url).status_code == 404


def test_a_viewer_may_hear_the_ad(ad, user, other_user, tasks_executed):
    Membership.objects.create(workspace=ad.workspace, user=other_user, role=MemberRole.VIEWER)
    body = api_for(other_user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    body = api_for(other_user).get(f"/api/renders/{body['id']}").json()
    assert body["status"] == "done" and APIClient().get(body["audioUrl"]).status_code == 200


def test_a_render_whose_worker_died_is_made_again_when_asked(ad, user, tasks_executed):
    """The embedded default has no sweep: a render left ``rendering`` by a process that
    died is queued again when asked for, once its lease has run out (and only then)."""
    stuck = Render.objects.create(
        ad=ad,
        status="rendering",
        claims=1,
        lease_expires_at=timezone.now() + timedelta(seconds=60),
        **versions_of(ad),
    )
    api = api_for(user)

    assert api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()["status"] == "rendering"
    assert tasks_executed == []
    Render.objects.filter(pk=stuck.pk).update(lease_expires_at=Now() - timedelta(seconds=1))
    again = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    assert again["id"] == str(stuck.pk) and again["status"] == "done"
    assert tasks_executed == ["renders.tasks.render_scratch_track"]
    stuck.refresh_from_db()
    assert stuck.claims == 2 and stuck.audio.name == f"renders/{stuck.pk}/2.ogg"


def test_nothing_to_render_is_a_conflict_and_stores_nothing(make_ad, user, tasks_executed):
    api = api_for(user)
    empty = make_ad()
    silent = make_ad()
    draft_create(ad=silent, version=SfxVersion(soundFxPrompts=[]))  # a valid, empty version
    with_music = make_ad()
    draft_create(ad=with_music, version=music("warm pad"))

    answers = [
        api.post(f"/api/ads/{empty.pk}/renders", {}, format="json"),
        api.post(f"/api/ads/{silent.pk}/renders", {}, format="json"),
        api.post(f"/api/ads/{with_music.pk}/renders", {"music": None}, format="json"),
    ]

    for answer in answers:
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"]["code"] == "nothing_to_render"
        assert "nothing to render" in answer.json()["error"]["message"]
    assert not Render.objects.exists() and tasks_executed == []


def test_a_silent_mix_stores_no_loudness_and_every_number_is_json(make_ad, user, tasks_executed):
    """Speech that sounds nothing: BS.1770 measures -inf, which is stored as null."""
    ad = make_ad(duration_s=5)
    draft_create(ad=ad, version=voices("...", "-"))

    made = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json")
    body = api_for(user).get(f"/api/renders/{made.json()['id']}")

    assert body.json()["status"] == "done" and body.json()["loudnessLufs"] is None
    json.loads(body.content, parse_constant=_refused)  # NaN, Infinity: not JSON
    assert Render.objects.get().loudness_lufs is None


def _refused(token: str):
    raise AssertionError(f"{token} in a JSON answer")


@given(
    value=st.recursive(
        st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=3),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=12,
    )
)
def test_every_number_made_storable_is_one_json_carries(value):
    cleaned = finite(value)

    json.dumps(cleaned, allow_nan=False)  # raises on NaN or an infinity


_MEASURED = st.floats(min_value=-200, max_value=20) | st.sampled_from(
    [float("nan"), float("inf"), float("-inf")]
)


@examples(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # one render for all
)
@given(
    loudness=_MEASURED,
    seconds=st.floats(min_value=0, max_value=600) | st.just(float("nan")),
    timeline=st.dictionaries(
        st.sampled_from(["slotS", "lengthS", "speechEndS", "synthesisRealTimeFactor"]),
        _MEASURED,
    ),
)
def test_no_render_answer_carries_a_number_json_cannot(
    loudness, seconds, timeline, _render_and_reader
):
    """Whatever the mix measured, stored as the task stores it and read over the API."""
    render, read = _render_and_reader
    Render.objects.filter(pk=render.pk).update(
        loudness_lufs=finite(loudness), seconds=finite(seconds), timeline=finite(timeline)
    )

    body = json.loads(read().content, parse_constant=_refused)

    for field in ("loudnessLufs", "seconds"):
        assert body[field] is None or isinstance(body[field], float)
    assert set(body["timeline"]) == set(timeline)


@pytest.fixture
def _render_and_reader(ad, user):
    """One render and a reader of it over the API, for every example of a property."""
    render = Render.objects.create(ad=ad, **versions_of(ad))
    api = api_for(user)
    return render, lambda: api.get(f"/api/renders/{render.pk}")


@pytest.mark.parametrize(
    "field, value",
    [
        ("loudness_lufs", float("-inf")),
        ("loudness_lufs", float("nan")),
        ("seconds", float("inf")),
        ("seconds", -1.0),
    ],
)
def test_the_database_refuses_a_number_json_cannot_carry(ad, field, value):
    render = Render.objects.create(ad=ad, music=draft_create(ad=ad, version=music())[0])

    with pytest.raises(IntegrityError), transaction.atomic():
        Render.objects.filter(pk=render.pk).update(**{field: value})


def test_an_archived_ad_renders_and_plays(ad, user, tasks_executed):
    """Archiving makes an ad read-only; a scratch track changes nothing of it, and is how
    someone hears what the ad was."""
    ad_archive(ad=ad, by=user)

    made = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json")
    body = api_for(user).get(f"/api/renders/{made.json()['id']}").json()

    assert made.status_code == 202 and body["status"] == "done"
    assert APIClient().get(body["audioUrl"]).status_code == 200


@pytest.fixture
def made(ad, user, tasks_executed):
    """A done render's body, and its whole Ogg file."""
    api = api_for(user)
    body = api.get(f"/api/renders/{api.post(f'/api/ads/{ad.pk}/renders', {}).json()['id']}")
    body = body.json()
    whole = APIClient().get(body["audioUrl"])
    return body, b"".join(whole.streaming_content), whole


def test_the_audio_answers_ranges_as_players_ask(made):
    body, whole, answer = made
    size = len(whole)
    assert answer["Accept-Ranges"] == "bytes" and answer["Content-Length"] == str(size)

    cases = {
        "bytes=0-99": (0, 99),
        "bytes=100-": (100, size - 1),
        "bytes=-50": (size - 50, size - 1),
        f"bytes=10-{size + 500}": (10, size - 1),  # past the end: to the end
    }
    for header, (first, last) in cases.items():
        part = APIClient().get(body["audioUrl"], HTTP_RANGE=header)
        assert part.status_code == 206, header
        assert part["Content-Range"] == f"bytes {first}-{last}/{size}", header
        assert b"".join(part.streaming_content) == whole[first : last + 1], header
        assert part["Content-Length"] == str(last - first + 1)


def test_a_range_outside_the_file_is_416_and_others_are_answered_whole(made):
    body, whole, answer = made
    size = len(whole)

    outside = APIClient().get(body["audioUrl"], HTTP_RANGE=f"bytes={size}-")
    several = APIClient().get(body["audioUrl"], HTTP_RANGE="bytes=0-1,5-9")
    stale = APIClient().get(body["audioUrl"], HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"other"')
    fresh = APIClient().get(body["audioUrl"], HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=answer["ETag"])
    other_unit = APIClient().get(body["audioUrl"], HTTP_RANGE="items=0-9")

    assert outside.status_code == 416 and outside["Content-Range"] == f"bytes */{size}"
    for whole_answer in (several, stale, other_unit):
        assert whole_answer.status_code == 200
        assert b"".join(whole_answer.streaming_content) == whole
    assert fresh.status_code == 206 and b"".join(fresh.streaming_content) == whole[:10]


def test_the_audio_has_a_readable_file_name(made, ad):
    body, _, answer = made
    wav = APIClient().get(body["wavUrl"])

    assert answer["Content-Disposition"] == (
        'inline; filename="spotify-premium-family-plan_voices-v2_music-v1_sfx-v1.ogg"'
    )
    assert wav["Content-Disposition"].endswith('_sfx-v1.wav"')


def test_a_file_missing_from_storage_is_404_and_the_render_is_made_again(made, user):
    body, _, _ = made
    render = Render.objects.get(pk=body["id"])
    default_storage.delete(render.audio.name)

    missing = APIClient().get(body["audioUrl"])

    assert missing.status_code == 404
    assert "made again" in missing.json()["error"]["message"]
    render.refresh_from_db()  # the task ran in-process when the request committed
    assert render.status == "done" and render.claims == 2
    assert render.audio.name.endswith("/2.ogg") and default_storage.exists(render.audio.name)
    assert not default_storage.exists(f"renders/{render.pk}/1.wav")  # the old claim's file
    again = api_for(user).get(f"/api/renders/{render.pk}").json()
    assert APIClient().get(again["audioUrl"]).status_code == 200


def test_storage_that_cannot_be_read_is_503_not_500(made, monkeypatch):
    body, _, _ = made

    def unreachable(name, mode="rb"):
        raise ConnectionError("the bucket's endpoint is unreachable")

    monkeypatch.setattr("renders.files.default_storage.open", unreachable)
    answer = APIClient().get(body["audioUrl"])

    assert answer.status_code == 503 and answer["Retry-After"] == "5"
    assert answer.json()["error"]["code"] == "storage_unavailable"
    assert Render.objects.get(pk=body["id"]).status == "done"  # nothing queued again


def test_a_preset_is_another_render_of_the_same_versions(ad, user, tasks_executed):
    api = api_for(user)
    streaming = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    broadcast = api.post(f"/api/ads/{ad.pk}/renders", {"preset": "broadcast"}, format="json")
    again = api.post(
        f"/api/ads/{ad.pk}/renders", {"preset": "broadcast", "voices": "v2"}, format="json"
    ).json()

    assert broadcast.status_code == 202
    broadcast = api.get(f"/api/renders/{broadcast.json()['id']}").json()
    streaming = api.get(f"/api/renders/{streaming['id']}").json()
    assert broadcast["id"] != streaming["id"] and again["id"] == broadcast["id"]
    assert (streaming["preset"], broadcast["preset"]) == ("streaming", "broadcast")
    assert streaming["versions"] == broadcast["versions"]
    assert streaming["loudnessLufs"] == pytest.approx(-16, abs=0.1)
    assert broadcast["loudnessLufs"] == pytest.approx(-23, abs=0.1)
    assert broadcast["truePeakDbtp"] <= -1.0 and streaming["truePeakDbtp"] <= -1.0
    assert Render.objects.count() == 2
    assert sorted(Render.objects.values_list("preset", flat=True)) == ["broadcast", "streaming"]


def test_a_preset_that_does_not_exist_is_400_naming_the_presets(ad, user, tasks_executed):
    wrong = api_for(user).post(f"/api/ads/{ad.pk}/renders", {"preset": "loud"}, format="json")

    assert wrong.status_code == 400
    assert wrong.json()["error"]["fields"]["preset"] == [
        '"loud" is not a preset: use streaming, broadcast or atsc.'
    ]
    assert Render.objects.count() == 0 and tasks_executed == []


def test_the_database_keeps_one_render_per_versions_and_preset(ad):
    versions = versions_of(ad)
    Render.objects.create(ad=ad, **versions)
    Render.objects.create(ad=ad, preset="atsc", **versions)
    with pytest.raises(IntegrityError), transaction.atomic():
        Render.objects.create(ad=ad, preset="atsc", **versions)
    with pytest.raises(IntegrityError), transaction.atomic():
        Render.objects.create(ad=ad, preset="loud", **versions)


def test_every_format_is_served_with_its_content_type_and_name(made, ad):
    body, _, _ = made
    links = {
        "audio/ogg": body["audioUrl"],
        "audio/wav": body["wavUrl"],
        "audio/mpeg": body["mp3Url"],
    }
    answers = {kind: APIClient().get(links[kind]) for kind in links}
    stems = {kind: APIClient().get(url) for kind, url in body["stemUrls"].items()}

    for content_type, answer in answers.items():
        assert answer.status_code == 200 and answer["Content-Type"] == content_type
    mp3 = b"".join(answers["audio/mpeg"].streaming_content)
    samples, rate = soundfile.read(io.BytesIO(mp3))
    assert rate == 48_000 and abs(len(samples) / rate - body["seconds"]) < 0.1
    assert abs(samples).max() < 1.0
    part = APIClient().get(body["mp3Url"], HTTP_RANGE="bytes=0-99")
    assert part.status_code == 206 and b"".join(part.streaming_content) == mp3[:100]
    lengths = set()
    for kind, answer in stems.items():
        assert answer.status_code == 200 and answer["Content-Type"] == "audio/wav"
        assert answer["Content-Disposition"].endswith(f'_sfx-v1_{kind}-stem.wav"')
        stem, rate = soundfile.read(io.BytesIO(b"".join(answer.streaming_content)))
        assert rate == 48_000 and abs(stem).max() > 0.01
        lengths.add(len(stem))
    assert len(lengths) == 1 and abs(lengths.pop() / 48_000 - body["seconds"]) < 1e-3


def test_a_render_without_a_kind_has_no_stem_of_it(ad, user, tasks_executed):
    api = api_for(user)
    render_id = api.post(f"/api/ads/{ad.pk}/renders", {"music": None}, format="json").json()["id"]
    body = api.get(f"/api/renders/{render_id}").json()

    assert body["stemUrls"]["music"] is None
    assert body["stemUrls"]["voices"] and body["stemUrls"]["sfx"]
    # a link made for it all the same answers 404
    token = signing.dumps(
        {"render": render_id, "user": user.pk, "format": "music.wav"},
        salt="renders.audio",
        compress=True,
    )
    assert APIClient().get(f"/api/renders/{render_id}/audio?token={token}").status_code == 404


@pytest.mark.slow  # ffmpeg
@pytest.mark.parametrize("preset", ["broadcast", "atsc"])
def test_the_wav_served_is_at_its_presets_loudness_under_its_ceiling(ad, user, preset):
    from audio.presets import PRESETS
    from tests.support.ebur128 import measure

    api = api_for(user)
    render_id = api.post(f"/api/ads/{ad.pk}/renders", {"preset": preset}).json()["id"]
    body = api.get(f"/api/renders/{render_id}").json()
    wav = b"".join(APIClient().get(body["wavUrl"]).streaming_content)
    heard = measure(wav)

    assert abs(heard.integrated_lufs - PRESETS[preset].loudness_lufs) <= 0.5
    assert heard.true_peak_dbtp <= PRESETS[preset].true_peak_dbtp
    assert body["truePeakDbtp"] <= PRESETS[preset].true_peak_dbtp
